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
- ``GET /harnesslab/tools``: the session's tool schemas (OpenAI's ``tools`` form).
- ``POST /harnesslab/tools/NAME`` with ``{"arguments": {...} or "JSON"}``: runs the tool for
  the session's verified user (never a user named in the body) and answers
  ``{"content": TEXT, "is_error": BOOL}``.
- ``GET /harnesslab/clock``: the world's time, which a harness reads as a real one reads its
  system clock.

Nothing else goes over the wire: no scenario, expectations, lexicon or private data.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harnesslab.adapters.openai_wire import completion, error_body, request_from_openai, stream_chunks
from harnesslab.errors import ContextOverflowError, InputError, ProtocolError
from harnesslab.harness.base import HarnessContext
from harnesslab.messages import Response, ToolOutcome

MODEL = "harnesslab"
INSTALL = "pip install 'harnesslab[serve]'"


class SessionClosed(Exception):
    """The session ended (its run finished or timed out): later requests are refused."""


@dataclass
class WireSession:
    """One harness's session on the wire: its context, and a lock that serialises its calls."""

    context: HarnessContext
    after: Callable[[], None] | None = None  # e.g. flush the record after each call
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    closed: bool = False

    def _locked(self, fn: Callable[[], Any]) -> Any:
        with self.lock:
            if self.closed:
                raise SessionClosed
            try:
                return fn()
            finally:
                if self.after is not None:
                    self.after()

    def call(self, request: Any) -> tuple[Response, int]:
        def go() -> tuple[Response, int]:
            self.calls += 1
            n = self.calls
            return self.context.endpoint.call(request, purpose="reply"), n
        result: tuple[Response, int] = self._locked(go)
        return result

    def tool(self, name: str, arguments: str) -> ToolOutcome:
        user = self.context.session.user
        out: ToolOutcome = self._locked(lambda: self.context.tools.run(name, arguments, user))
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


def build_app(sessions: Sessions) -> Any:
    """The ASGI app over ``sessions`` (module docstring)."""
    _require()
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request as HttpRequest
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    def err(status: int, message: str, *, code: str | None = None, param: str | None = None,
            type: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse(error_body(message, type=type, code=code, param=param), status)

    closed = {"code": "invalid_api_key", "type": "authentication_error"}

    class Refused(Exception):
        def __init__(self, response: JSONResponse) -> None:
            self.response = response

    def handler(fn: Callable[[HttpRequest], Awaitable[Any]]) -> Callable[[HttpRequest],
                                                                          Awaitable[Any]]:
        async def wrapped(req: HttpRequest) -> Any:
            try:
                return await fn(req)
            except Refused as r:
                return r.response
            except SessionClosed:
                return err(401, "this session has ended", **closed)
        return wrapped

    async def session_of(req: HttpRequest) -> WireSession:
        auth = req.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        # A new session builds its world: off the event loop, which serves the others.
        s = await run_in_threadpool(sessions.get, token) if token else None
        if s is None or s.closed:
            raise Refused(err(401, "Incorrect API key provided: each session has its own token.",
                              **closed))
        return s

    async def body_of(req: HttpRequest) -> dict[str, Any]:
        try:
            body = json.loads(await req.body())
        except ValueError as e:
            raise Refused(err(400, f"the body is not valid JSON: {e}")) from None
        if not isinstance(body, dict):
            raise Refused(err(400, "the body must be a JSON object"))
        return body

    async def models(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 0, "owned_by": "harnesslab"}]})

    @handler
    async def chat(req: HttpRequest) -> Any:
        s = await session_of(req)
        body = await body_of(req)
        try:
            request = request_from_openai(body, session_id=s.context.session.id)
        except InputError as e:
            return err(400, e.problem, param=e.field)
        try:
            resp, n = await run_in_threadpool(s.call, request)
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

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(completion(resp, id=cid, created=created, model=model))

    @handler
    async def tools(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        return JSONResponse({"tools": [t.to_dict() for t in s.context.tools.schemas()]})

    @handler
    async def run_tool(req: HttpRequest) -> JSONResponse:
        s = await session_of(req)
        args = (await body_of(req)).get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out = await run_in_threadpool(s.tool, req.path_params["name"], raw)
        return JSONResponse({"content": out.text, "is_error": out.is_error})

    @handler
    async def clock(req: HttpRequest) -> JSONResponse:
        return JSONResponse({"now": (await session_of(req)).context.clock.now().isoformat()})

    return Starlette(routes=[
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
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
