"""Black-box harnesses: ``harness=cmd:"python my_agent.py"`` runs an external program, in any
language, as the harness under test; one process per instance (a run has one, unless its
scenario restarts, kills or adds instances), started once and kept for every turn it serves.

The program reaches the model and the tools over the wire (``adapters.serve_app``, one server
per bench process on a loopback port, one API key per instance). Its environment gets:

- ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``: the session's OpenAI endpoint (Chat Completions
  and Responses) and key; ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``: the same session on
  Anthropic's Messages API; ``OLLAMA_HOST``, ``OLLAMA_API_KEY``: on Ollama's ``/api/chat``
  (the official SDKs and the ``ollama`` client read these);
- ``HARNESSLAB_TOOLS_URL``: ``GET`` the tool schemas, ``POST {URL}/NAME`` to run one. Who the
  tool acts for is the ``tool_identity`` setting: ``caller`` (the default for programs, the
  realistic deployment: the backend trusts the ``user_id`` the harness sends, as an internal
  service trusts its caller) or ``server`` (the backend binds every call to the verified
  session user as the ``identity`` setting says, whatever the arguments say: the control);
- ``HARNESSLAB_SESSION_ID``, ``HARNESSLAB_SESSION_USER``: the session and its verified user,
  which the harness must bind its tool calls to;
- ``HARNESSLAB_WORKDIR``: a folder of its own for its store, kept across the restarts, kills
  and instances of one run (a fresh one per process under ``persist: false`` or
  ``resume: session_id``: a deployment that keeps nothing, the controls);
- ``HARNESSLAB_PROTOCOL_IN``, ``HARNESSLAB_PROTOCOL_OUT``: the protocol channel
  (``adapters.program``); ``HARNESSLAB_MCP_URL``, ``HARNESSLAB_MCP_TOKEN``: the tools over
  MCP, when the mcp extra is installed.

Protocol lines (one JSON object per line each way, on the channel, or stdin/stdout):

- first ``{"type": "hello", "protocol": 2, "session", "user", "workdir", "now", "instance",
  "settings"}`` -> any JSON object (``{"type": "hello"}``). ``settings`` are the run's harness
  settings as ``HarnessConfig`` dumps them (the variant's ``strategy`` and the rest; not the
  bench's ``harness``, ``turn_timeout``, ``persist``); ``"honours": ["strategy", "codex.*"]``
  in the answer declares those the program acts on (``harnesslab.harness.honours``). A variant
  defined by a setting the program does not declare is not applicable to it (one that declares
  nothing gets every variant defined by a harness setting as not applicable). ``identity``
  needs no declaring under ``tool_identity: server``: the bench's tool backend applies it;
- ``{"type": "user", "text": ..., "images": [{"media_type", "data", "name"}], "now": ISO}``
  -> ``{"type": "reply", "text": ..., "failed": false, "reason": ""}`` (``failed``/``reason``
  optional: a harness that knows it could not answer says so);
- ``{"type": "advance", "now": ISO}`` when the world's clock has moved since the last line
  (sent before the next step) -> any JSON object;
- ``{"type": "preload", "exchanges": [[{"role", "content"}, ...], ...]}``: the scenario's
  filler as earlier exchanges -> ``{"type": "ok"}`` when the program took them in, or
  ``{"type": "unsupported"}``: then each exchange's user text is sent as a ``user`` line with
  ``"filler": true``; the replies are kept in the record's ``filler`` event (``replies``),
  where they tell which calls answered the filler (``judge.observed``);
- ``{"type": "shutdown"}`` when the bench stops it (a restart, the run's end): no answer; it
  should save what it keeps and exit; end of file, SIGTERM and SIGKILL follow.

Restarts and kills: a ``restart`` stops the program and starts a fresh one with the same
session id and workdir, so its own store (a SQLite session, a checkpointer) can bring the
session back; a ``kill`` SIGKILLs it when it makes the k-th model call of the turn (the call
is refused, the turn lost); ``instances: N`` runs N processes over one workdir, serving
alternate turns. Whether the session came back is judged from outside: ``resume_fidelity``
holds when the fresh process's first request shows every message of the history the old one
last sent and was answered (as it was, or grown in place), never from internal state.

Each step has ``turn_timeout`` seconds. A program that does not answer in time, exits, or
writes a line that is not a JSON object of the expected shape is stopped, and the run fails
(:class:`~harnesslab.harness.base.HarnessGone`) with the reason and what it wrote: never a
hung suite. A black-box harness keeps no estimate the bench can read (``context_estimate``
is None).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harnesslab.adapters import mcp_app
from harnesslab.adapters.local import LOCAL_MODEL
from harnesslab.adapters.program import Program, ProgramFailed
from harnesslab.adapters.serve_app import (
    Server,
    SessionClosed,
    Sessions,
    WireSession,
    build_app,
)
from harnesslab.harness.base import (
    HarnessBase,
    HarnessContext,
    HarnessGone,
    TurnResult,
    context_window,
    count_tokens,
)
from harnesslab.harness.config import HarnessConfig
from harnesslab.harness.honours import check_declaration
from harnesslab.messages import (
    Block,
    DataBlock,
    HintBlock,
    Message,
    Request,
    Response,
    TextBlock,
    dumps,
    message_from_dict,
)

PREFIX = "cmd:"
PROTOCOL = 2
# Settings of the bench's, not the program's: not sent in the hello line.
NOT_SENT = ("harness", "turn_timeout", "persist")
_server: tuple[Server, Sessions] | None = None
_server_lock = threading.Lock()


def shared_server() -> tuple[Server, Sessions]:
    """The bench process's one loopback server for black-box sessions (started on first use)."""
    global _server
    with _server_lock:
        if _server is None:
            sessions = Sessions()
            _server = (Server(build_app(sessions)).start(), sessions)
        return _server


def command_words(command: str) -> list[str]:
    words = shlex.split(command)
    # "python" means the bench's own interpreter, whose environment has the SDKs installed.
    if words and words[0] in ("python", "python3"):
        words[0] = sys.executable
    return words


def label(command: str) -> str:
    """A short name for tables: ``cmd:`` and the program's file name."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    files = [w for w in words if "." in Path(w).name or "/" in w]
    return PREFIX + Path(files[-1] if files else words[0] if words else "?").name


def _stop_session(sessions: Sessions, token: str) -> None:
    sessions.remove(token)
    mcp_app.close_for(token)


def _end(program: Program | None, sessions: Sessions, token: str) -> None:
    """Stop the program (shutdown line, EOF, SIGTERM, SIGKILL) and its session; safe twice."""
    if program is not None:
        program.stop()
    _stop_session(sessions, token)


def _shown(m: Message) -> str:
    """A message as the history comparison sees it: role and content (ids and names are
    a wire's bookkeeping, which a restored history need not repeat)."""
    return dumps(Message(m.role, m.content))


def _produced(resp: Response) -> list[str]:
    """The strings a call that answered nothing produced (its text, its tool call's argument
    values): what a summary call wrote."""
    out = [resp.text]
    for c in resp.tool_calls:
        try:
            args = json.loads(c.input)
        except ValueError:
            continue
        if isinstance(args, dict):
            out += [v for v in args.values() if isinstance(v, str)]
    return [x for x in out if len(x) >= 12]


def _same_block(old: Block, new: Block) -> bool:
    """``new`` is ``old``, or the reminder an image limit puts in an image's place (a text or
    a hint where the image was): dropping the oldest images is context management the
    restored session may apply at once, not history it failed to bring back."""
    return new == old or (isinstance(old, DataBlock) and old.is_image
                          and isinstance(new, TextBlock | HintBlock))


def _restored(old: Message, new: Sequence[Message]) -> bool:
    """``old`` is in ``new``: as it was (its images perhaps replaced by their reminders), or
    grown in place (AgentScope's reply message takes its answer into the message that holds
    the call), or, for a reply's blocks, inside one assistant message."""
    n = len(old.content)
    for m in new:
        if m.role == old.role and (
                (len(m.content) >= n
                 and all(_same_block(a, b) for a, b in zip(old.content, m.content[:n], strict=True)))
                or all(b in m.content for b in old.content)):
            return True
    return False


class _Door:
    """The program's model endpoint: remembers what it last sent and was answered (the
    history it holds, as seen from outside), and turns the bench's kill into a SIGKILL."""

    def __init__(self, inner: Any, harness: CmdHarness) -> None:
        self._inner = inner
        self._harness = harness
        self.last: tuple[Request, Response] | None = None
        self.answering: tuple[Request, Response] | None = None  # the last turn's answer
        self.on_first: Callable[[Request], None] | None = None

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        first, self.on_first = self.on_first, None
        if first is not None:
            first(request)
        try:
            resp: Response = self._inner.call(request, purpose=purpose, estimate=estimate)
        except Exception:
            raise
        except BaseException as e:  # the bench's kill (instances.InstanceKilled)
            self._harness.killed(e)
            raise SessionClosed from None
        self.last = (request, resp)
        return resp

    def count_tokens(self, request: Request) -> int:
        """The API's token count (``harness.base.TokenCounting``): no call, so nothing of the
        kill or the first-call hook applies."""
        return count_tokens(self._inner, request)

    def context_window(self) -> int | None:
        """The model's window (``harness.base.ModelInfo``), as the inner endpoint states it."""
        return context_window(self._inner)


class CmdHarness(HarnessBase):
    """An external program behind the harness interface (module docstring)."""

    name = "cmd"
    owns_store = True             # it restores itself from its workdir, or not at all
    resume_from_requests = True   # resume fidelity is judged from its requests

    def __init__(self, context: HarnessContext, config: HarnessConfig, *, command: str) -> None:
        super().__init__(context, config)
        self.command = command
        self.label = label(command)
        server, self._sessions = shared_server()
        # A credential, never recorded: other sessions on this server must not guess it, and
        # nothing a run measures depends on it.
        self._token = secrets.token_urlsafe(18)
        self._door = _Door(context.endpoint, self)
        self._killed: BaseException | None = None
        caller = config.tool_identity == "caller"
        wire = WireSession(replace(context, endpoint=self._door),
                           identity="trust" if caller else config.identity,
                           inline=LOCAL_MODEL.get())
        self._sessions.add(self._token, wire)
        base = server.url.removesuffix("/v1")
        workdir, logs, self.instance = self._folders(context.workdir, config)
        env = {**os.environ, "OPENAI_BASE_URL": server.url,
               "OPENAI_API_KEY": self._token, "ANTHROPIC_BASE_URL": base,
               "ANTHROPIC_API_KEY": self._token, "OLLAMA_HOST": base,
               "OLLAMA_API_KEY": self._token,
               "HARNESSLAB_TOOLS_URL": f"{base}/harnesslab/tools",
               "HARNESSLAB_SESSION_ID": context.session.id,
               "HARNESSLAB_SESSION_USER": context.session.user, "PYTHONUNBUFFERED": "1",
               **({"HARNESSLAB_WORKDIR": str(workdir)} if workdir else {}),
               # The tools over MCP too, for the same token; the acting user as the HTTP
               # route's (the caller's user_id under tool_identity caller).
               **mcp_app.open_for(context, "trust" if caller else config.identity,
                                  self._token, wire.lock)}
        self._program: Program | None = None
        self._gone: str | None = None
        self._finalizer = weakref.finalize(self, _end, None, self._sessions, self._token)
        try:
            self._program = Program(command_words(command), env, timeout=config.turn_timeout,
                                    logs=logs)
        except (OSError, ValueError) as e:
            _stop_session(self._sessions, self._token)
            raise HarnessGone(f"{self.label}: cannot start {command!r}: {e}") from None
        # Should the runner not call close (a harness dropped mid-run), the program still ends.
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _end, self._program, self._sessions,
                                           self._token)
        self._now = context.clock.now()
        self._steps = 0
        settings = config.model_dump(mode="json")
        for key in NOT_SENT:
            settings.pop(key, None)
        self.hello = self._ask({"type": "hello", "protocol": PROTOCOL,
                                "session": context.session.id, "user": context.session.user,
                                "workdir": str(workdir) if workdir else None,
                                "now": self._now.isoformat(), "instance": self.instance,
                                "settings": settings},
                               what="the first line (hello)")
        try:
            declared = check_declaration(self.hello.get("honours", ()), self.label)
        except ValueError as e:
            raise self._fail(f"answered the first line (hello) with {e}") from None
        # What the adapter applies itself: under tool_identity server, its tool backend binds
        # the acting user as ``identity`` says.
        self.honours = declared | (frozenset({"identity"}) if not caller else frozenset())

    @staticmethod
    def _folders(run: Path | None, config: HarnessConfig) -> tuple[Path | None, Path | None, int]:
        """The program's workdir (shared by the run's processes unless the deployment keeps
        nothing), the stem of its log files, and its number in the run."""
        if run is None:
            return None, None, 1
        logs = run / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        n = 1 + sum(1 for _ in logs.glob("*.stderr.log"))
        keeps = config.persist and config.resume == "store"
        workdir = run / ("program" if keeps else f"program-{n}")
        if not keeps:
            shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True, exist_ok=True)
        return workdir, logs / f"program-{n}", n

    def close(self) -> None:
        self.finish()
        self._finalizer()

    def killed(self, why: BaseException) -> None:
        """The bench killed this instance mid-turn (from the server's thread): SIGKILL."""
        self._killed = why
        if self._program is not None:
            self._program.kill()

    def _fail(self, why: str) -> HarnessGone:
        self._finalizer()  # stop it first: a stopped program's output is complete
        assert self._program is not None
        self._gone = f"{self.label}: {why}{self._program.leftovers()}"
        return HarnessGone(self._gone)

    def _ask(self, message: dict[str, Any], *, what: str = "") -> dict[str, Any]:
        """Write one line, read one JSON object back within the timeout, or fail the run."""
        if self._gone is not None:
            raise HarnessGone(self._gone)
        assert self._program is not None
        if not what:
            self._steps += 1
            what = f"step {self._steps} ({message['type']})"
        try:
            return self._program.ask(message, what)
        except ProgramFailed as e:
            if self._killed is not None:
                raise self._killed from None
            raise self._fail(str(e)) from None

    def _clock(self) -> None:
        now = self.ctx.clock.now()
        if now != self._now:
            self._now = now
            self._ask({"type": "advance", "now": now.isoformat()})

    def _user(self, text: str, images: Sequence[DataBlock], **extra: Any) -> dict[str, Any]:
        self._clock()
        reply = self._ask({"type": "user", "text": text, "now": self._now.isoformat(),
                           "images": [{"media_type": b.media_type, "data": b.source,
                                       "name": b.name} for b in images], **extra})
        if not isinstance(reply.get("text"), str):
            raise self._fail(f"replied to step {self._steps} (user) without a string 'text': "
                             f"{json.dumps(reply, ensure_ascii=False)[:300]!r}")
        return reply

    def turn(self, text: str, images: Sequence[DataBlock] = ()) -> TurnResult:
        reply = self._user(text, images)
        if self._door.last is not None and self._door.last[1].text == reply["text"]:
            self._door.answering = self._door.last
        return TurnResult(reply["text"], bool(reply.get("failed", False)),
                          str(reply.get("reason", "") or ""))

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> Sequence[str] | None:
        self._clock()
        wire = [[{"role": m.role, "content": m.plain_text()} for m in ex] for ex in exchanges]
        if self._ask({"type": "preload", "exchanges": wire}).get("type") == "ok":
            return None
        return [self._user(m.plain_text(), (), filler=True)["text"]
                for ex in exchanges for m in ex if m.role == "user"]

    # -- resuming, judged from outside ------------------------------------------------------
    def save_state(self) -> dict[str, Any]:
        """What the program last showed of its session, from outside (the bench cannot read
        its internal state): the history of its last answer (that request and the reply), or,
        when calls that answered nothing came after it (a compaction after the answer, or a
        filler's), the strings that last such call produced (a summary), which a restored
        session must show again."""
        last, answering = self._door.last, self._door.answering
        if last is None:
            return {"history": []}
        if answering is not None and answering is last:
            request, resp = answering
            shown = [*request.messages, Message("assistant", resp.blocks)]
            return {"history": [_shown(m) for m in shown if m.role != "system" and m.content]}
        return {"history": [], "kept": _produced(last[1])}

    def expect_resume(self, state: Mapping[str, Any] | None, event: dict[str, Any],
                      emit: Callable[[dict[str, Any]], None]) -> None:
        """Judge, at this fresh program's first request, whether it brought back ``state``
        (every message of the old history is there, or grown in place); ``emit`` the ``resume`` event then,
        or at close when it made no request."""
        want = list((state or {}).get("history", []))
        kept = list((state or {}).get("kept", []))
        done = False

        def judge(request: Request | None) -> None:
            nonlocal done
            if done:
                return
            done = True
            if request is None:
                emit({**event, "applicable": True, "fidelity": False,
                      "differs": ["(no request after it took over)"]})
                return
            new = request.messages
            missing = [w for w in want if not _restored(message_from_dict(json.loads(w)), new)]
            text = "\n".join([request.summary, *(m.plain_text() for m in new),
                              *(b.hint if isinstance(b.hint, str) else "" for m in new
                                for b in m.content if isinstance(b, HintBlock))])
            missing += [k for k in kept if k not in text]
            emit({**event, "applicable": True, "fidelity": not missing,
                  "differs": [] if not missing else
                  [f"history: {len(missing)} of {len(want) + len(kept)} messages or summary "
                   "parts not in its first request"],
                  "judged_from": "requests"})

        self._door.on_first = judge
        self._judge_at_close: Callable[[Request | None], None] | None = judge

    def finish(self) -> None:
        """The run ends: a resume still unjudged (no request came) is judged now."""
        judge, self._judge_at_close = getattr(self, "_judge_at_close", None), None
        if judge is not None:
            judge(None)


def cmd_harness(command: str) -> Any:
    """The harness factory for ``cmd:COMMAND`` (what the registry returns)."""
    if not command.strip():
        raise ValueError("cmd: needs a command, e.g. cmd:\"python my_agent.py\"")

    def build(context: HarnessContext, config: HarnessConfig) -> CmdHarness:
        return CmdHarness(context, config, command=command)

    build.__name__ = label(command)
    return build
