"""Black-box harnesses: ``harness=cmd:"python my_agent.py"`` runs an external program, in any
language, as the harness under test; one process per session (per run).

The program reaches the model and the tools over the wire (``adapters.serve_app``, one server
per bench process on a loopback port, one API key per session). Its environment gets:

- ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``: the session's OpenAI-compatible endpoint and key
  (the official SDKs read both);
- ``HARNESSLAB_TOOLS_URL``: ``GET`` the tool schemas, ``POST {URL}/NAME`` to run one (the
  acting user is the session's verified user, whatever the arguments say);
- ``HARNESSLAB_SESSION_ID``, ``HARNESSLAB_SESSION_USER``: the session and its verified user;
- ``HARNESSLAB_MCP_URL``, ``HARNESSLAB_MCP_TOKEN``: the same tools over MCP (streamable HTTP,
  ``Authorization: Bearer TOKEN``; ``adapters.mcp_app``), when the mcp extra is installed.

The bench writes each step as one JSON line on the program's stdin and reads one JSON line
back from its stdout (stderr is free for logs):

- ``{"type": "user", "text": ..., "images": [{"media_type", "data", "name"}], "now": ISO}``
  -> ``{"type": "reply", "text": ..., "failed": false, "reason": ""}`` (``failed``/``reason``
  optional: a harness that knows it could not answer says so);
- ``{"type": "advance", "now": ISO}`` when the world's clock has moved since the last line
  (sent before the next step) -> any JSON object;
- ``{"type": "preload", "exchanges": [[{"role", "content"}, ...], ...]}``: the scenario's
  filler as earlier exchanges -> ``{"type": "ok"}`` when the program took them in, or
  ``{"type": "unsupported"}``: then each exchange's user text is sent as a ``user`` line with
  ``"filler": true`` and the reply is dropped (the model call it makes is recorded as usual).

Each step has ``turn_timeout`` seconds. A program that does not answer in time, exits, or
writes a line that is not a JSON object of the expected shape is stopped, and the run fails
(:class:`~harnesslab.harness.base.HarnessGone`) with the reason and what it wrote (its
stdout line and the tail of its stderr): never a hung suite. A black-box harness keeps no
estimate the bench can read (``context_estimate`` is None) and no state it can save.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import secrets
import shlex
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from harnesslab.adapters import mcp_app
from harnesslab.adapters.serve_app import Server, Sessions, WireSession, build_app
from harnesslab.harness.base import HarnessBase, HarnessContext, HarnessGone, TurnResult
from harnesslab.harness.config import HarnessConfig
from harnesslab.messages import DataBlock, Message

PREFIX = "cmd:"
_EOF = object()
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


def _tail(lines: collections.deque[Any]) -> str:
    text = "".join(x for x in lines if isinstance(x, str)).strip()
    return text[-600:]


def _stop(proc: subprocess.Popen[str], sessions: Sessions, token: str) -> None:
    """End the program (EOF on stdin, then kill) and its session; safe to call twice."""
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(10)
    _stop_session(sessions, token)


def _stop_session(sessions: Sessions, token: str) -> None:
    sessions.remove(token)
    mcp_app.close_for(token)


class CmdHarness(HarnessBase):
    """An external program behind the harness interface (module docstring)."""

    name = "cmd"

    def __init__(self, context: HarnessContext, config: HarnessConfig, *, command: str) -> None:
        super().__init__(context, config)
        self.command = command
        self.label = label(command)
        self.timeout = config.turn_timeout
        server, self._sessions = shared_server()
        # A credential, never recorded: other sessions on this server must not guess it, and
        # nothing a run measures depends on it.
        self._token = secrets.token_urlsafe(18)
        wire = WireSession(context)
        self._sessions.add(self._token, wire)
        base = server.url.removesuffix("/v1")
        env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": self._token,
               "HARNESSLAB_TOOLS_URL": f"{base}/harnesslab/tools",
               "HARNESSLAB_SESSION_ID": context.session.id,
               "HARNESSLAB_SESSION_USER": context.session.user, "PYTHONUNBUFFERED": "1",
               # The tools over MCP too, for the same token; the acting user as config.identity
               # says (the verified session user, unless the variant is the trust control).
               **mcp_app.open_for(context, config.identity, self._token, wire.lock)}
        try:
            self._proc = subprocess.Popen(command_words(command), stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, encoding="utf-8", errors="replace", env=env)
        except (OSError, ValueError) as e:
            _stop_session(self._sessions, self._token)
            raise HarnessGone(f"{self.label}: cannot start {command!r}: {e}") from None
        self._lines: queue.Queue[Any] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._out_reader = threading.Thread(target=self._pump, daemon=True,
                                            args=(self._proc.stdout, self._lines.put))
        self._out_reader.start()
        self._err_reader = threading.Thread(target=self._pump, daemon=True,
                                            args=(self._proc.stderr, self._stderr.append))
        self._err_reader.start()
        self._gone: str | None = None
        self._now = context.clock.now()
        self._steps = 0
        # Should the runner not call close (a harness dropped mid-run), the program still ends.
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._sessions, self._token)

    @staticmethod
    def _pump(stream: IO[str], put: Any) -> None:
        for line in stream:
            put(line)
        put(_EOF)

    def close(self) -> None:
        self._finalizer()

    def _fail(self, why: str) -> HarnessGone:
        self._finalizer()  # stop it first: a stopped program's output is complete
        self._err_reader.join(2)
        self._out_reader.join(2)
        self._gone = f"{self.label}: {why}"
        rest = []  # what it wrote on stdout after the last line read (a partial line, too)
        while not self._lines.empty():
            rest.append(self._lines.get_nowait())
        out = _tail(collections.deque(rest))
        if out:
            self._gone += f"; then on stdout: {out!r}"
        err = _tail(self._stderr)
        if err:
            self._gone += f"; its stderr ends: {err!r}"
        return HarnessGone(self._gone)

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Write one line, read one JSON object back within the timeout, or fail the run."""
        if self._gone is not None:
            raise HarnessGone(self._gone)
        self._steps += 1
        what = f"step {self._steps} ({message['type']})"
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # it exited: reading its end of stdout says how
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise self._fail(f"no reply to {what} within {self.timeout:g} s (stopped)") from None
        if line is _EOF:
            code = self._proc.wait(10)
            raise self._fail(f"exited with code {code} before replying to {what}")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise self._fail(f"wrote a line that is not a JSON object in reply to {what}: "
                             f"{line.rstrip()[:300]!r}")
        return reply

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
        return TurnResult(reply["text"], bool(reply.get("failed", False)),
                          str(reply.get("reason", "") or ""))

    def preload(self, exchanges: Sequence[Sequence[Message]]) -> None:
        self._clock()
        wire = [[{"role": m.role, "content": m.plain_text()} for m in ex] for ex in exchanges]
        if self._ask({"type": "preload", "exchanges": wire}).get("type") == "ok":
            return
        for ex in exchanges:
            for m in ex:
                if m.role == "user":
                    self._user(m.plain_text(), (), filler=True)


def cmd_harness(command: str) -> Any:
    """The harness factory for ``cmd:COMMAND`` (what the registry returns)."""
    if not command.strip():
        raise ValueError("cmd: needs a command, e.g. cmd:\"python my_agent.py\"")

    def build(context: HarnessContext, config: HarnessConfig) -> CmdHarness:
        return CmdHarness(context, config, command=command)

    build.__name__ = label(command)
    return build

