"""The bench on the wire: an ASGI app (the ``serve`` extra: starlette on uvicorn) that offers a
session's model endpoint as OpenAI Chat Completions and its tools as a small JSON route.

A session is what one harness under test is handed (a
:class:`~harnesslab.harness.base.HarnessContext`: endpoint, tools, clock, verified session),
found by its API key (``Authorization: Bearer TOKEN``), one token per session: never by
guessing from content. Requests of one session are served one at a time, in arrival order
(its world and record are one conversation); sessions run side by side.

Routes:

- ``GET /v1/models``: the one model, ``harnesslab``.
- ``POST /v1/chat/completions``: the body is converted to the bench's request
  (``adapters.openai_wire``) and sent through the session's endpoint, which records it exactly
  as an in-process call. Non-streaming, or ``stream: true`` as server-sent events. A request
  over the true window is HTTP 400 with ``code: context_length_exceeded`` (the openai SDK
  raises ``BadRequestError``); a malformed conversation is 400 ``invalid_request_error``.
- ``POST /v1/responses``: the OpenAI Responses API (``adapters.responses_wire``): input items,
  ``instructions``, function tools and calls, ``previous_response_id`` over the responses this
  session stored (``store``, true unless false; an unknown id is 400
  ``previous_response_not_found``), ``stream: true`` as the API's named events. Over the
  window: 400 ``context_length_exceeded``, as Chat Completions.
- ``POST /v1/messages``: Anthropic's Messages API (``adapters.anthropic_wire``), the key in
  ``x-api-key`` (or ``Authorization: Bearer``); errors in Anthropic's shape, an over-window
  request 400 ``invalid_request_error`` "prompt is too long: N tokens > M maximum".
- ``POST /v1/messages/count_tokens`` (Anthropic) and ``POST /v1/responses/input_tokens``
  (OpenAI): the APIs' token counting endpoints, answered with the input tokens the service
  would bill for that body (``{"input_tokens": N}``; Claude Code calls the first to manage
  its context); no limit applies, nothing is recorded and the call numbering stays.
- ``POST /v1/responses/compact``: the server's compaction (``responses_wire``): one model
  call over the input with Codex's compaction prompt, recorded as any call, answered with the
  input's user messages and one ``compaction`` item (opaque) that a later request's input
  carries back as the summary, behind Codex's bridge.
- ``/v1/conversations`` (create; ``/{id}`` get, update, delete; ``/{id}/items`` list, add;
  ``/{id}/items/{item}`` get, delete): OpenAI's Conversations API
  (``adapters.conversations_wire``), a session's own; ``conversation`` on a Responses request
  continues one (mutually exclusive with ``previous_response_id``), and its input and output
  are added once answered.
- ``POST /api/chat``: Ollama's native chat API (``adapters.ollama_wire``), the key in
  ``Authorization: Bearer`` (the ``ollama`` client sends ``OLLAMA_API_KEY`` so); streamed
  as newline-delimited JSON unless ``stream`` is false, as Ollama does. Ollama's truncation
  is the default: a request over the window (the service's, or ``options.num_ctx`` when
  smaller) is served with its oldest messages dropped, system messages kept, and the record
  notes how many; with ``truncate: false`` it is a 400 ``{"error": "the input length exceeds
  the context length"}``. ``POST /api/show`` states the model's context length (the
  service's window: what LlamaIndex's Ollama sizes its context by), ``GET /api/tags`` lists
  the one model, ``GET /api/version`` answers a version, for clients that check first.
- ``POST /v1/embeddings``: the OpenAI Embeddings API (``adapters.embeddings_wire``), for a
  harness whose memory retrieves by similarity: the bench's deterministic n-gram embedder,
  floats or base64, token-id input read as cl100k_base; nothing recorded.
- ``POST /harnesslab/v1/request``: the bench's own request format (``messages.request_to_dict``
  under ``request``, and optionally the harness's own ``estimate`` of it), answered with the
  reply's blocks and usage and the request's ``id``, or a 400 naming the rejection
  (``overflow`` with its numbers, ``protocol_error``): the lossless wire of the reference
  harness as a program (``adapters.reference_program``). A request may name what it shares
  with one of the last answered ones instead of sending it again (``messages.Sent``): a run of
  its messages (``{"same": [ID, START, COUNT]}`` in ``messages``) and its tools
  (``"tools": {"same": ID}``); one no longer kept is a 409 ``unknown_request``, and the
  program sends the request whole. It carries no purpose: what a call is for is found from
  the request stream, as for every program.
- ``GET /harnesslab/tools``: the session's tool schemas (OpenAI's ``tools`` form).
- ``POST /harnesslab/tools/NAME`` with ``{"arguments": {...} or "JSON"}`` (and optionally
  ``"acting_user"``): runs the tool; the acting user is the session's verified user unless the
  session trusts its caller (``WireSession.identity`` "trust"): then the ``acting_user`` the
  caller names, or else the ``user_id`` in the arguments, as an internal service trusts the
  harness that calls it. Answers ``{"content": TEXT, "is_error": BOOL}``.
- ``GET /harnesslab/clock``: the world's time, which a harness reads as a real one reads its
  system clock.

Every body is checked before anything is recorded: not JSON, not an object, nested deeper
than ``MAX_DEPTH``, or holding a lone surrogate (which no UTF-8 record can hold) is a 400 in
the wire's own error shape, and the session's call numbering and record stay as they were.

Nothing else goes over the wire: no scenario, expectations, lexicon or private data.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from harnesslab.adapters import anthropic_wire, embeddings_wire, ollama_wire, responses_wire
from harnesslab.adapters.conversations_wire import ConversationNotFound, Conversations
from harnesslab.adapters.openai_wire import completion, error_body, request_from_openai, stream_chunks
from harnesslab.errors import ContextOverflowError, InputError, ProtocolError
from harnesslab.harness.base import HarnessContext, context_window, count_tokens
from harnesslab.harness.identity import IdentityMode, bind_identity
from harnesslab.messages import (
    Converted,
    Decoded,
    Request,
    Response,
    Sent,
    ToolOutcome,
    UnknownRequest,
    block_to_dict,
    request_from_dict,
)

MODEL = "harnesslab"
INSTALL = "pip install 'harnesslab[serve]'"
MAX_DEPTH = 200  # deeper than any request a harness sends; deeper is refused, never a crash


class SessionClosed(Exception):
    """The session ended (its run finished or timed out): later requests are refused."""


@dataclass
class WireSession:
    """One harness's session on the wire: its context, and a lock that serialises its calls."""

    context: HarnessContext
    after: Callable[[], None] | None = None  # e.g. flush the record after each call
    # Who the HTTP tool route acts for (``harness.identity``'s rule): "refuse" keeps the
    # verified session user and lets the tool refuse a different ``user_id``; "trust" is
    # the backend that trusts its caller's ``user_id``; "bind" overrides it.
    identity: IdentityMode = "refuse"
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    tool_calls: int = 0
    closed: bool = False
    inline: bool = False  # calls and tool runs on the event loop (adapters.local.LOCAL_MODEL)
    # The Responses API's stored responses (previous_response_id), this session's only.
    stored: responses_wire.Conversation = field(default_factory=responses_wire.Conversation)
    # The bench's own wire: the last request's messages as decoded (only new ones cost), and
    # the last answered requests, whose messages and tools a request can name (``Sent``).
    decoded: Decoded = field(default_factory=Decoded)
    # The last Chat Completions and Messages bodies as sent and converted (only changes
    # cost); one for each wire, since the same dict may be valid in one and not the other.
    converted: Converted = field(default_factory=Converted)
    converted_anthropic: Converted = field(default_factory=Converted)
    # Ollama's: its last body converted, and the calls answered (for ids sent back without).
    ollama: ollama_wire.OllamaState = field(default_factory=ollama_wire.OllamaState)
    sent: Sent = field(default_factory=Sent)
    # The Conversations API's conversations (adapters.conversations_wire), made at first use.
    _conversations: Conversations | None = None

    def conversations(self) -> Conversations:
        if self._conversations is None:
            self._conversations = Conversations(self.context.session.id)
        return self._conversations

    def _locked(self, fn: Callable[[], Any]) -> Any:
        with self.lock:
            if self.closed:
                raise SessionClosed
            try:
                return fn()
            finally:
                if self.after is not None:
                    self.after()

    def call(self, request: Any, estimate: int | None = None) -> tuple[Response, int]:
        def go() -> tuple[Response, int]:
            self.calls += 1
            n = self.calls
            return self.context.endpoint.call(request, purpose="reply", estimate=estimate), n
        result: tuple[Response, int] = self._locked(go)
        return result

    def count(self, request: Any) -> int:
        """The API's token count of ``request`` (``harness.base.TokenCounting``): no call, so
        the session's call numbering stays; NotImplementedError when the endpoint has none."""
        n: int = self._locked(lambda: count_tokens(self.context.endpoint, request))
        return n

    def tool(self, name: str, arguments: str, acting_user: str | None = None) -> ToolOutcome:
        b = bind_identity(self.identity, self.context.session.user, arguments)
        if self.identity == "trust" and acting_user:
            # The caller names who it acts for (the tool context): trusted as it is.
            b = replace(b, acting=acting_user)

        def go() -> ToolOutcome:
            self.tool_calls += 1
            out = self.context.tools.run(name, b.arguments, b.acting)
            self.context.sink.emit({"type": "tool_policy", "id": f"http-{self.tool_calls}",
                                    "name": name, "claimed": b.claimed, "identity": b.decision,
                                    "truncated": False, "via": "http"})
            return out
        out: ToolOutcome = self._locked(go)
        return out

    def close(self) -> None:
        with self.lock:  # waits for a call in flight, so nothing is recorded after the close
            self.closed = True


class Sessions:
    """Sessions by token. ``factory`` (optional) opens a new session for an unknown token;
    without one an unknown token is refused (401)."""

    def __init__(self, factory: Callable[[str], WireSession] | None = None,
                 max_sessions: int = 10_000) -> None:
        self._by_token: dict[str, WireSession] = {}
        self._factory = factory
        self._max = max_sessions
        self._lock = threading.Lock()

    def add(self, token: str, session: WireSession) -> None:
        with self._lock:
            if token in self._by_token:
                raise ValueError("a session with this token exists")
            self._by_token[token] = session

    def remove(self, token: str) -> None:
        with self._lock:
            s = self._by_token.pop(token, None)
        if s is not None:
            s.close()

    def get(self, token: str) -> WireSession | None:
        with self._lock:
            s = self._by_token.get(token)
            if s is None and self._factory is not None and token \
                    and len(self._by_token) < self._max:
                s = self._by_token[token] = self._factory(token)
            return s

    def known(self, token: str) -> WireSession | None:
        """The session of ``token`` if it is open already (``get`` may open one)."""
        with self._lock:
            return self._by_token.get(token)

    def all(self) -> list[WireSession]:
        with self._lock:
            return list(self._by_token.values())


def _require() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ImportError(f"harnesslab serve needs starlette and uvicorn: {INSTALL}") from None


def _overflow_message(e: ContextOverflowError) -> str:
    d = e.detail
    if d.limit_name == "max_output":
        return (f"max_tokens is too large: {d.planned_output}. This model supports at most "
                f"{d.limit} completion tokens.")
    return (f"This model's maximum context length is {d.limit} tokens. However, you requested "
            f"{d.true_input + d.planned_output} tokens ({d.true_input} in the messages, "
            f"{d.planned_output} in the completion). Please reduce the length of the messages "
            "or completion.")


def _anthropic_overflow(e: ContextOverflowError, model: str) -> str:
    d = e.detail
    if d.limit_name == "max_output":
        return (f"max_tokens: {d.planned_output} > {d.limit}, which is the maximum allowed "
                f"number of output tokens for {model}")
    if d.limit_name == "max_input" or d.true_input > d.limit:
        return f"prompt is too long: {d.true_input} tokens > {d.limit} maximum"
    return (f"input length and `max_tokens` exceed context limit: {d.true_input} + "
            f"{d.planned_output} > {d.limit}, decrease input length or `max_tokens` and try "
            "again")


# A JSON string, and what could decode to a lone surrogate: an escape of one (json.loads
# takes ``\ud800`` alone), or one encoded in the bytes (json.loads decodes with surrogatepass).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _plain(raw: bytes) -> bool:
    """Whether a body that parsed has, for certain, nothing :func:`body_problem` refuses: no
    lone surrogate can be in it, and its containers nest at most ``MAX_DEPTH`` deep. In C,
    over the bytes: a resent history is most of every request, and walking its parsed values
    in Python each time cost more than the rest of reading it. False is no verdict (the walk
    gives it): an escaped backslash before ``ud800`` or a valid surrogate pair written as
    escapes take the walk, as before."""
    if json.detect_encoding(raw) != "utf-8" or _SURROGATE.search(raw):
        return False
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return True  # fewer openings in all than the depth allowed: none nests deeper
    # The brackets outside strings, as one kind: each pass removes the innermost pairs (one
    # bytes.replace does not rescan what it joined), so the passes are the nesting depth.
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS).translate(_SQUARE)
    for _ in range(MAX_DEPTH):
        if not brackets:
            return True
        brackets = brackets.replace(b"[]", b"")
    return not brackets


_SQUARE = bytes.maketrans(b"{}", b"[]")


def body_problem(body: Any, raw: bytes | None = None) -> str | None:
    """Why a parsed body cannot be served (nested deeper than ``MAX_DEPTH``, a lone surrogate
    in a string), or None. ``raw``, the bytes it was parsed from, lets a plain body pass
    without the walk (:func:`_plain`). Iterative: a hostile body cannot exhaust the stack."""
    if raw is not None and _plain(raw):
        return None
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate, which is not valid UTF-8"
        elif isinstance(x, dict | list):
            if depth > MAX_DEPTH:
                return f"the body is nested deeper than {MAX_DEPTH} levels"
            values = x.values() if isinstance(x, dict) else x
            stack.extend((v, depth + 1) for v in values)
            if isinstance(x, dict):
                stack.extend((k, depth + 1) for k in x)
    return None


_PARAMETERS = ("tool_choice", "response_format")


def _parameters(meta: Any) -> list[list[str]]:
    """The native request's meta entries an API takes as parameters; anything else in it (a
    purpose) is the program's own business and dropped. Bad input: not a list of pairs."""
    if meta is None:
        return []
    if not isinstance(meta, list) or not all(
            isinstance(kv, list) and len(kv) == 2 and all(isinstance(x, str) for x in kv)
            for kv in meta):
        raise InputError("expected a list of [key, value] string pairs", field="request.meta")
    return [kv for kv in meta if kv[0] in _PARAMETERS]


def build_app(sessions: Sessions) -> Any:
    """The ASGI app over ``sessions`` (module docstring)."""
    _require()
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request as HttpRequest
    from starlette.responses import JSONResponse
    from starlette.responses import Response as HttpResponse
    from starlette.routing import Route

    def err(status: int, message: str, *, code: str | None = None, param: str | None = None,
            type: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse(error_body(message, type=type, code=code, param=param), status)

    def aerr(status: int, message: str, type: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse(anthropic_wire.error_body(message, type=type), status)

    closed = {"code": "invalid_api_key", "type": "authentication_error"}
    # New sessions are built in one thread of their own: ``Sessions.get`` builds one at a time
    # under its lock anyway, and the default pool started a thread for each waiting request (up
    # to 40 when 50 sessions open at once), paid for in thread starts and GIL hand-offs: about
    # a fifth of the server's CPU per request over the 50-session load (test_serve_bench).
    # Its thread ends when the app is dropped.
    builder = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="harnesslab-sessions")

    class Refused(Exception):
        def __init__(self, status: int, message: str, **kw: Any) -> None:
            self.status, self.message, self.kw = status, message, kw

    def handler(fn: Callable[[HttpRequest], Awaitable[Any]], *, anthropic: bool = False,
                ollama: bool = False) -> Callable[[HttpRequest], Awaitable[Any]]:
        async def wrapped(req: HttpRequest) -> Any:
            try:
                return await fn(req)
            except SessionClosed:
                r = Refused(401, "this session has ended", **closed)
            except Refused as e:
                r = e
            if ollama:
                return JSONResponse(ollama_wire.error_body(r.message), r.status)
            if anthropic:
                kind = r.kw.get("type", "invalid_request_error")
                return aerr(r.status, r.message, kind)
            return err(r.status, r.message, **r.kw)
        return wrapped

    async def session_of(req: HttpRequest) -> WireSession:
        auth = req.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        token = token or req.headers.get("x-api-key", "").strip()  # Anthropic's header
        # A new session builds its world: off the event loop, which serves the others; a
        # known one is a look-up, not worth a thread hop.
        s = sessions.known(token) if token else None
        if s is None and token:
            s = await asyncio.get_running_loop().run_in_executor(builder, sessions.get, token)
        if s is None or s.closed:
            raise Refused(401, "Incorrect API key provided: each session has its own token.",
                          **closed)
        return s

    async def body_of(req: HttpRequest) -> dict[str, Any]:
        raw = await req.body()
        try:
            body = json.loads(raw)
        except RecursionError:
            raise Refused(400, f"the body is nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as e:
            raise Refused(400, f"the body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise Refused(400, "the body must be a JSON object")
        why = body_problem(body, raw)
        if why is not None:
            raise Refused(400, why)
        return body

    async def call(s: WireSession, request: Request,
                   estimate: int | None = None) -> tuple[Response, int]:
        if s.inline:
            return s.call(request, estimate)
        result: tuple[Response, int] = await run_in_threadpool(s.call, request, estimate)
        return result

    async def count(s: WireSession, request: Request) -> int:
        if s.inline:
            return s.count(request)
        n: int = await run_in_threadpool(s.count, request)
        return n

    def event_stream(lines: Iterator[str]) -> HttpResponse:
        # The answer is whole before the first byte goes out, so its events go out as one body
        # with its length: a StreamingResponse (its task watching for a disconnect, a send per
        # frame and the chunked framing) cost as much CPU again as the call itself (measured
        # in tests/benchmarks/test_serve_bench.py). The client still reads and parses one
        # event at a time, as from any server-sent stream.
        return HttpResponse("".join(lines), media_type="text/event-stream",
                        headers={"Cache-Control": "no-cache"})

    def sse(events: Iterator[dict[str, Any]], *, named: bool) -> HttpResponse:
        return event_stream((f"event: {e['type']}\n" if named else "")
                            + "data: " + json.dumps(e, ensure_ascii=False) + "\n\n"
                            for e in events)

    async def models(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 0, "owned_by": "harnesslab"}]})

    @handler
    async def chat(req: HttpRequest) -> Any:
        s = await session_of(req)
        body = await body_of(req)
        try:
            request = request_from_openai(body, session_id=s.context.session.id,
                                          last=s.converted)
        except InputError as e:
            return err(400, e.problem, param=e.field)
        try:
            resp, n = await call(s, request)
        except ContextOverflowError as e:
            return err(400, _overflow_message(e), code="context_length_exceeded", param="messages")
        except ProtocolError as e:
            return err(400, f"Invalid request: {e.problem}", param="messages")
        model = str(body.get("model") or MODEL)
        created = int(s.context.clock.now().timestamp())
        cid = f"chatcmpl-{s.context.session.id}-{n}"
        if body.get("stream") is True:
            opts = body.get("stream_options") or {}
            usage = isinstance(opts, dict) and opts.get("include_usage") is True

            def events() -> Iterator[str]:
                for c in stream_chunks(resp, id=cid, created=created, model=model,
                                       include_usage=usage):
                    yield "data: " + json.dumps(c, ensure_ascii=False) + "\n\n"
                yield "data: [DONE]\n\n"

            return event_stream(events())
        return JSONResponse(completion(resp, id=cid, created=created, model=model))

    def responses_request(s: WireSession, body: dict[str, Any]
                          ) -> tuple[list[Any], Request, str | None]:
        """The items a Responses body continues (``previous_response_id`` over the session's
        stored responses, or ``conversation`` over its conversations) and its request, and
        the conversation's id; Refused as the API refuses them."""
        cid = None
        try:
            if body.get("conversation") is not None:
                if body.get("previous_response_id") is not None:
                    raise Refused(400, "Mutually exclusive parameters: Ensure you are only "
                                  "providing one of: 'previous_response_id' or "
                                  "'conversation'.", param="conversation")
                cid = responses_wire.conversation_id(body["conversation"])
                prior = s.conversations().items_of(cid)
            items = s.stored.items(body)
        except ConversationNotFound as e:
            raise Refused(404, e.message, param="conversation") from None
        except KeyError:
            prev = body.get("previous_response_id")
            raise Refused(400, f"Previous response with id '{prev}' not found.",
                          code="previous_response_not_found",
                          param="previous_response_id") from None
        except InputError as e:
            raise Refused(400, e.problem, param=e.field) from None
        if cid is not None:
            items = [*prior, *items]
        try:
            return items, responses_wire.request_from_responses(
                body, items=items, session_id=s.context.session.id), cid
        except InputError as e:
            raise Refused(400, e.problem, param=e.field) from None

    @handler
    async def responses(req: HttpRequest) -> Any:
        s = await session_of(req)
        body = await body_of(req)
        items, request, cid = responses_request(s, body)
        try:
            resp, n = await call(s, request)
        except ContextOverflowError as e:
            if e.detail.limit_name == "max_output":
                return err(400, _overflow_message(e), param="max_output_tokens")
            return err(400, "Your input exceeds the context window of this model. Please "
                       "adjust your input and try again.", code="context_length_exceeded",
                       param="input")
        except ProtocolError as e:
            return err(400, f"Invalid request: {e.problem}", param="input")
        model = str(body.get("model") or MODEL)
        created = int(s.context.clock.now().timestamp())
        rid = f"{s.context.session.id}_{n}"
        s.stored.store(body, items, resp, id=rid)
        if cid is not None:
            s.conversations().answered(cid, responses_wire.input_items(body),
                                       responses_wire.output_items(resp, id=rid, body=body))
        if body.get("stream") is True:
            return sse(responses_wire.stream_events(resp, body, id=rid, created=created,
                                                    model=model), named=True)
        return JSONResponse(responses_wire.response_object(resp, body, id=rid, created=created,
                                                           model=model))

    async def messages(req: HttpRequest) -> Any:
        s = await session_of(req)
        body = await body_of(req)
        model = str(body.get("model") or MODEL)
        try:
            request = anthropic_wire.request_from_anthropic(body, session_id=s.context.session.id,
                                                            last=s.converted_anthropic)
        except InputError as e:
            return aerr(400, f"{e.field}: {e.problem}")
        try:
            resp, n = await call(s, request)
        except ContextOverflowError as e:
            return aerr(400, _anthropic_overflow(e, model))
        except ProtocolError as e:
            return aerr(400, f"messages: {e.problem}")
        mid = f"{s.context.session.id}_{n}"
        if body.get("stream") is True:
            return sse(anthropic_wire.stream_events(resp, id=mid, model=model), named=True)
        return JSONResponse(anthropic_wire.message_object(resp, id=mid, model=model))

    async def ollama_chat(req: HttpRequest) -> Any:
        s = await session_of(req)
        body = await body_of(req)
        try:
            request = ollama_wire.request_from_ollama(body, session_id=s.context.session.id,
                                                      state=s.ollama)
        except InputError as e:
            raise Refused(400, f"{e.field}: {e.problem}") from None
        try:
            resp, _ = await call(s, request)
        except ContextOverflowError:
            raise Refused(400, ollama_wire.CONTEXT_LENGTH) from None
        except ProtocolError as e:
            raise Refused(400, f"messages: {e.problem}") from None
        s.ollama.answered(resp)
        model = str(body.get("model") or MODEL)
        at = ollama_wire.created_at(s.context.clock.now())
        if body.get("stream", True) is not False:
            return HttpResponse("".join(ollama_wire.stream_lines(resp, model=model, at=at)),
                                media_type="application/x-ndjson")
        return JSONResponse(ollama_wire.chat_object(resp, model=model, at=at))

    @handler
    async def ollama_show(req: HttpRequest) -> JSONResponse:
        # What a model server states of its model, which a harness may size its context by
        # (LlamaIndex's Ollama reads the context length here and sends it as num_ctx).
        s = await session_of(req)
        window = context_window(s.context.endpoint)
        return JSONResponse(ollama_wire.show_object(window))

    async def ollama_tags(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"models": [{"name": MODEL, "model": MODEL, "size": 0,
                                         "digest": "", "details": {"family": "harnesslab"}}]})

    async def ollama_version(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"version": ollama_wire.VERSION})

    async def input_optional(req: HttpRequest) -> tuple[WireSession, dict[str, Any]]:
        """The session and body of a Responses route whose ``input`` may be left out (a
        count, a compaction): as an empty list."""
        s = await session_of(req)
        body = await body_of(req)
        return s, body if body.get("input") is not None else {**body, "input": []}

    @handler
    async def responses_compact(req: HttpRequest) -> Any:
        # POST /v1/responses/compact: the server's compaction pass over the input (one model
        # call, recorded as any other), answered with the user messages and one compaction
        # item, which a later request's input carries back as the summary.
        s, body = await input_optional(req)
        items, _, _ = responses_request(s, body)
        ask = {"type": "message", "role": "user", "content": responses_wire.COMPACTION_PROMPT}
        try:
            request = responses_wire.request_from_responses(
                {"instructions": body.get("instructions"), "input": [*items, ask]},
                session_id=s.context.session.id)
            resp, n = await call(s, request)
        except InputError as e:
            return err(400, e.problem, param=e.field)
        except ContextOverflowError:
            return err(400, "Your input exceeds the context window of this model. Please "
                       "adjust your input and try again.", code="context_length_exceeded",
                       param="input")
        except ProtocolError as e:
            return err(400, f"Invalid request: {e.problem}", param="input")
        rid = f"{s.context.session.id}_{n}"
        return JSONResponse({
            "id": f"resp_{rid}", "object": "response.compaction",
            "created_at": int(s.context.clock.now().timestamp()),
            "output": responses_wire.compacted_output(items, resp.text, id=rid),
            "usage": responses_wire.usage_object(resp)})

    def on_conversations(s: WireSession, op: Callable[[Conversations], dict[str, Any]]
                         ) -> JSONResponse:
        try:
            return JSONResponse(op(s.conversations()))
        except ConversationNotFound as e:
            return err(404, e.message)
        except InputError as e:
            return err(400, e.problem, param=e.field)

    @handler
    async def conversations(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        body = await body_of(req)
        created = int(s.context.clock.now().timestamp())
        return on_conversations(s, lambda c: c.create(body, created=created))

    @handler
    async def conversation(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        cid = req.path_params["cid"]
        if req.method == "GET":
            return on_conversations(s, lambda c: c.get(cid))
        if req.method == "DELETE":
            return on_conversations(s, lambda c: c.delete(cid))
        body = await body_of(req)
        return on_conversations(s, lambda c: c.update(cid, body))

    @handler
    async def conversation_items(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        cid = req.path_params["cid"]
        if req.method == "GET":
            query = dict(req.query_params)
            return on_conversations(s, lambda c: c.list_items(cid, query))
        body = await body_of(req)
        return on_conversations(s, lambda c: c.add(cid, body))

    @handler
    async def conversation_item(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        cid, item = req.path_params["cid"], req.path_params["item"]
        if req.method == "GET":
            return on_conversations(s, lambda c: c.item(cid, item))
        return on_conversations(s, lambda c: c.delete_item(cid, item))

    @handler
    async def responses_count(req: HttpRequest) -> Any:
        # POST /v1/responses/input_tokens: the body a Responses request would have (``input``
        # may be left out), counted as the service would bill it; nothing stored or recorded.
        s, body = await input_optional(req)
        _, request, _ = responses_request(s, body)
        try:
            n = await count(s, request)
        except NotImplementedError as e:
            return err(404, str(e), type="not_found_error")
        return JSONResponse({"object": "response.input_tokens", "input_tokens": n})

    async def messages_count(req: HttpRequest) -> Any:
        # POST /v1/messages/count_tokens (Claude Code calls it, ``?beta=true``, to manage its
        # context): a Messages body without ``max_tokens``, counted as the service would bill
        # it; no limit applies (a count over the window is the harness's cue to compact).
        s = await session_of(req)
        body = await body_of(req)
        try:
            request = anthropic_wire.request_from_anthropic(
                {**body, "max_tokens": body.get("max_tokens", 1)},
                session_id=s.context.session.id)
        except InputError as e:
            return aerr(400, f"{e.field}: {e.problem}")
        try:
            n = await count(s, request)
        except NotImplementedError as e:
            return aerr(404, str(e), "not_found_error")
        return JSONResponse({"input_tokens": n})

    @handler
    async def native(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        body = await body_of(req)
        estimate = body.get("estimate")
        try:
            # Of the meta, only what an API takes as a parameter (tool_choice,
            # response_format): a program cannot tell the bench what a call is for.
            raw = body.get("request", {})
            request = request_from_dict({**raw, "session_id": s.context.session.id,
                                         "meta": _parameters(raw.get("meta"))},
                                        s.decoded, s.sent)
            if estimate is not None and (not isinstance(estimate, int)
                                         or isinstance(estimate, bool)):
                raise InputError(f"expected an integer, got {estimate!r}", field="estimate")
        except UnknownRequest as e:
            return err(409, f"request {e.n} is no longer kept to refer to: send the whole "
                       "request", code="unknown_request")
        except (InputError, TypeError, AttributeError) as e:
            return err(400, getattr(e, "problem", str(e)), param=getattr(e, "field", None))
        try:
            resp, n = await call(s, request, estimate)
        except ContextOverflowError as e:
            d = e.detail
            return JSONResponse({"error": {"type": "overflow", "profile": e.profile,
                                           "message": str(e), "detail": {
                                               "limit_name": d.limit_name, "limit": d.limit,
                                               "true_input": d.true_input,
                                               "planned_output": d.planned_output}}}, 400)
        except ProtocolError as e:
            return JSONResponse({"error": {"type": "protocol_error", "profile": e.profile,
                                           "message": str(e), "problem": e.problem}}, 400)
        s.sent.keep(n, request)
        return JSONResponse({"id": n, "blocks": [block_to_dict(b) for b in resp.blocks],
                             "input_tokens": resp.input_tokens,
                             "output_tokens": resp.output_tokens})

    @handler
    async def embeddings(req: HttpRequest) -> JSONResponse:
        await session_of(req)  # the key opens (or names) a session, as for a chat call
        body = await body_of(req)
        try:
            # In a pool thread: a batch of inputs (and the vocabulary's first load) is CPU
            # the other sessions' calls should not wait behind.
            out = await run_in_threadpool(embeddings_wire.embeddings_response, body)
        except InputError as e:
            return err(400, e.problem, param=e.field)
        return JSONResponse(out)

    @handler
    async def tools(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        return JSONResponse({"tools": [t.to_dict() for t in s.context.tools.schemas()]})

    @handler
    async def run_tool(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        body = await body_of(req)
        args = body.get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        acting = body.get("acting_user")
        who = acting if isinstance(acting, str) else None
        out = s.tool(req.path_params["name"], raw, who) if s.inline else \
            await run_in_threadpool(s.tool, req.path_params["name"], raw, who)
        return JSONResponse({"content": out.text, "is_error": out.is_error})

    @handler
    async def clock(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"now": (await session_of(req)).context.clock.now().isoformat()})

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/responses/input_tokens", responses_count, methods=["POST"]),
        Route("/v1/responses/compact", responses_compact, methods=["POST"]),
        Route("/v1/conversations", conversations, methods=["POST"]),
        Route("/v1/conversations/{cid}", conversation, methods=["GET", "POST", "DELETE"]),
        Route("/v1/conversations/{cid}/items", conversation_items, methods=["GET", "POST"]),
        Route("/v1/conversations/{cid}/items/{item}", conversation_item,
              methods=["GET", "DELETE"]),
        Route("/v1/messages", handler(messages, anthropic=True), methods=["POST"]),
        Route("/v1/messages/count_tokens", handler(messages_count, anthropic=True),
              methods=["POST"]),
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/api/chat", handler(ollama_chat, ollama=True), methods=["POST"]),
        Route("/api/show", handler(ollama_show, ollama=True), methods=["POST"]),
        Route("/api/tags", ollama_tags, methods=["GET"]),
        Route("/api/version", ollama_version, methods=["GET"]),
        Route("/harnesslab/v1/request", native, methods=["POST"]),
        Route("/harnesslab/tools", tools, methods=["GET"]),
        Route("/harnesslab/tools/{name}", run_tool, methods=["POST"]),
        Route("/harnesslab/clock", clock, methods=["GET"]),
    ])


class Server:
    """uvicorn serving ``app`` on ``host:port`` (0: a free port) in a background thread, or in
    the foreground with :meth:`run`. Binds 127.0.0.1 unless told otherwise."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, *,
                 lifespan: str = "off") -> None:
        _require()
        import uvicorn

        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        # Listening before uvicorn starts: a client told the address (serve prints it before
        # run()) is queued in the backlog, not refused, however long uvicorn takes to start.
        self.sock.listen(2048)
        self.host, self.port = host, self.sock.getsockname()[1]
        # lifespan "on" for an app that needs it (the MCP session manager runs in it).
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan,
                                                    access_log=False))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The OpenAI base URL (``OPENAI_BASE_URL``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def run(self) -> None:
        self.server.run(sockets=[self.sock])

    def start(self, timeout: float = 30.0) -> Server:
        self._thread = threading.Thread(target=self.run, name="harnesslab-serve", daemon=True)
        self._thread.start()
        # Waiting for the socket to be served is scheduling, not semantics: a wall-clock
        # deadline is fine here.
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the serve thread did not start within {timeout} s")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.sock.close()
