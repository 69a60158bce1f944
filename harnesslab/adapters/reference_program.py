"""The reference harness as a black-box program: ``harness=cmd:"python -m
harnesslab.adapters.reference_program"``.

It speaks the cmd protocol on the bench's channel (``adapters.program``), takes the harness
settings from the first line (``hello``'s ``settings``), and hands the reference harness what a
deployment would: the model over the bench's own lossless wire (``POST /harnesslab/v1/request``,
the request as ``messages.request_to_dict``, its own estimate beside it), the tools over
``HARNESSLAB_TOOLS_URL`` (naming the acting user it bound: the backend trusts its caller), a
clock set from the ``now`` each line carries, its store in ``HARNESSLAB_WORKDIR``. It sends no
event to the bench: compactions and summary calls are found from its requests, as for any
program. Running the bundled suite through it and in process must agree on every verdict,
compaction and summary token (``tests/wire/test_reference_program.py``).
"""

from __future__ import annotations

import os
import sys

from harnesslab.adapters import zygote

if __name__ == "__main__":
    # Served from a fork of a process that imported the harness once (adapters.zygote), as
    # long as one can serve it; else below, in this process.
    zygote.launch("harnesslab.adapters.reference_program")

import json
import select
import socket
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Start-up is what this program costs (docs/black-box.md, "The reference harness as a
# program"): pydantic looks up plugins over every installed distribution's entry points when it
# builds the first model; the reference harness uses none, so the look-up is skipped unless the
# environment asks for plugins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from harnesslab.errors import ContextOverflowError, OverflowDetail, ProtocolError
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext, Session
from harnesslab.harness.config import HarnessConfig
from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    Response,
    ToolOutcome,
    ToolSchema,
    block_from_dict,
    message_to_dict,
)


class HttpError(Exception):
    """The bench answered with a status the wrapper does not handle: the turn fails."""


class _Closed(Exception):
    """The connection ended before any byte of the answer."""


class _Http:
    """A minimal HTTP/1.1 client over one kept-alive loopback connection: all the wrapper
    needs (JSON bodies, Content-Length answers from the bench's own server). A program starts
    once per run, and an HTTP SDK's import (httpx pulls in its CLI's rich and click when they
    are installed) cost more CPU than the harness's work in most runs."""

    def __init__(self, base: str, token: str, timeout: float = 600) -> None:
        url = urlsplit(base)
        self._addr = (url.hostname or "127.0.0.1", url.port or 80)
        self._host = url.netloc
        self._auth = f"Bearer {token}"
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""
        self._answered = False  # a byte of the current answer came

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self._addr, timeout=self._timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock, self._buf = sock, b""
        return sock

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        """Send one request; the status and the decoded JSON answer."""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\n"
                f"Authorization: {self._auth}\r\n")
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        data = head.encode("latin-1") + b"\r\n" + (body or b"")
        reused = self._sock is not None
        try:
            return self._exchange(data, method, path)
        except (ConnectionError, _Closed):
            if not reused:
                raise
        # The server closed the kept connection while it was idle (uvicorn's keep-alive
        # timeout) and answered nothing: it closes only between requests, so this one was
        # never read. Once more on a fresh connection.
        self.close()
        return self._exchange(data, method, path)

    def _exchange(self, data: bytes, method: str, path: str) -> tuple[int, Any]:
        sock = self._sock if self._sock is not None else self._connect()
        self._answered = False
        sock.sendall(data)
        status, headers = self._head()
        length = headers.get("content-length")
        if length is None:  # not what the bench's server sends for a JSON answer
            raise HttpError(f"{method} {path}: HTTP {status} without a Content-Length")
        body = self._exactly(int(length))
        _alive()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, json.loads(body)

    def _more(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(1 << 16)
        if not chunk:
            raise HttpError("the bench closed the connection in the middle of an answer") \
                if self._answered else _Closed
        self._answered = True
        self._buf += chunk

    def _head(self) -> tuple[int, dict[str, str]]:
        while (end := self._buf.find(b"\r\n\r\n")) < 0:
            self._more()
        lines = self._buf[:end].decode("latin-1").split("\r\n")
        self._buf = self._buf[end + 4:]
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers

    def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._more()
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _alive() -> None:
    """A worker of the zygote whose program was killed ends before it takes in any answer
    (adapters.zygote): the launcher's pipe has ended by the time the bench answers."""
    fd = _ALIVE
    if fd is not None and select.select([fd], [], [], 0)[0]:
        os._exit(137)


_ALIVE: int | None = None


class _Model:
    def __init__(self, http: _Http, path: str) -> None:
        self._http, self._path = http, path
        # The last answered requests, the ids the bench answered them with and where each of
        # their message objects stands: a request names the runs of messages it shares with
        # them and their tools instead of sending them again (messages.Sent).
        self._sent: list[tuple[Request, int, dict[int, int]]] = []

    def _answered(self, request: Request, n: int) -> None:
        # One index per request, built once: each call costs its own messages, not the three
        # requests' again.
        self._sent = [*self._sent[-2:],
                      (request, n, {id(m): j for j, m in enumerate(request.messages)})]

    def _find(self, m: Message) -> tuple[tuple[Message, ...], int, int] | None:
        """Where ``m`` stands in the latest answered request that holds it."""
        for r, n, index in reversed(self._sent):
            j = index.get(id(m))
            if j is not None and r.messages[j] is m:
                return r.messages, n, j
        return None

    def _body(self, request: Request, estimate: int | None, refer: bool) -> bytes:
        messages = request.messages
        items: list[Any] = []
        i, total = 0, len(messages)
        while i < total:
            hit = self._find(messages[i]) if refer else None
            if hit is None:
                items.append(message_to_dict(messages[i]))
                i += 1
                continue
            base, n, j = hit
            k = 1
            while i + k < total and j + k < len(base) and base[j + k] is messages[i + k]:
                k += 1
            items.append({"same": [n, j, k]})
            i += k
        tools: Any = {"same": self._sent[-1][1]} if refer and request.tools and self._sent \
            and self._sent[-1][0].tools == request.tools else [t.to_dict() for t in request.tools]
        body = {"request": {"system": request.system, "summary": request.summary,
                            "messages": items, "tools": tools,
                            "output_budget": request.output_budget,
                            "session_id": request.session_id,
                            # what an API takes as a parameter: the fake model obeys it
                            "meta": [list(kv) for kv in request.meta
                                     if kv[0] in ("tool_choice", "response_format")]},
                "estimate": estimate}
        return json.dumps(body, ensure_ascii=False).encode()

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        # purpose stays here: the bench finds what a call is for from the requests.
        status, out = self._http.request("POST", self._path, self._body(request, estimate, True))
        if status == 409 and out["error"].get("code") == "unknown_request":
            status, out = self._http.request("POST", self._path,
                                             self._body(request, estimate, False))
        if status == 400 and out["error"]["type"] == "overflow":
            d = out["error"]["detail"]
            raise ContextOverflowError(out["error"]["profile"], OverflowDetail(**d))
        if status == 400 and out["error"]["type"] == "protocol_error":
            raise ProtocolError(out["error"]["profile"], out["error"]["problem"])
        if status != 200:
            raise HttpError(f"the model endpoint answered HTTP {status}: {out}")
        self._answered(request, out["id"])
        return Response(tuple(block_from_dict(b) for b in out["blocks"]),
                        out["input_tokens"], out["output_tokens"])


class _Tools:
    def __init__(self, http: _Http, path: str) -> None:
        self._http, self._path = http, path
        self._schemas: tuple[ToolSchema, ...] | None = None

    def schemas(self) -> tuple[ToolSchema, ...]:
        if self._schemas is None:
            _, out = self._http.request("GET", self._path)
            self._schemas = tuple(ToolSchema.from_dict(t) for t in out["tools"])
        return self._schemas

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome:
        # The tool context: the backend trusts the acting user its caller names.
        body = json.dumps({"arguments": arguments, "acting_user": acting_user},
                          ensure_ascii=False).encode()
        _, out = self._http.request("POST", f"{self._path}/{name}", body)
        return ToolOutcome(out["content"], out["is_error"])


class _Clock:
    def __init__(self, now: str) -> None:
        self.at = datetime.fromisoformat(now)

    def now(self) -> datetime:
        return self.at


class _NoEvents:
    def emit(self, event: dict[str, Any]) -> None:
        pass  # a program's events do not reach the bench's record


def main() -> None:
    global _ALIVE
    alive = os.environ.get("HARNESSLAB_ZYGOTE_ALIVE")
    _ALIVE = int(alive) if alive else None
    inp = zygote.protocol_lines(int(os.environ["HARNESSLAB_PROTOCOL_IN"]))
    out = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
    base = os.environ["HARNESSLAB_TOOLS_URL"].removesuffix("/harnesslab/tools")
    http = _Http(base, os.environ["OPENAI_API_KEY"])
    harness: ReferenceHarness | None = None
    clock: _Clock | None = None

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        out.flush()

    for line in inp:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "shutdown":
            break
        if msg.get("now") and clock is not None:
            clock.at = datetime.fromisoformat(msg["now"])
        if kind == "hello":
            clock = _Clock(msg["now"])
            workdir = os.environ.get("HARNESSLAB_WORKDIR")
            ctx = HarnessContext(_Model(http, "/harnesslab/v1/request"),
                                 _Tools(http, "/harnesslab/tools"), clock, _NoEvents(),
                                 Session(msg["session"], msg["user"]),
                                 Path(workdir) if workdir else None)
            # The bench keeps persist to itself: a workdir kept for the run is the store.
            cfg = HarnessConfig.model_validate({**msg["settings"], "persist": bool(workdir)})
            harness = ReferenceHarness(ctx, cfg)
            send({"type": "hello", "honours": ["*"]})  # it acts on every harness setting
        elif kind == "user":
            assert harness is not None
            images: Sequence[DataBlock] = tuple(
                DataBlock(i["media_type"], i["data"], i.get("name", "")) for i in msg["images"])
            res = harness.turn(msg["text"], images)
            send({"type": "reply", "text": res.text, "failed": res.failed,
                  "reason": res.reason})
        elif kind == "preload":
            assert harness is not None
            harness.preload([[Message.text(m["role"], m["content"]) for m in ex]
                             for ex in msg["exchanges"]])
            send({"type": "ok"})
        else:
            send({"type": "ok"})
    _exit(harness)


# What the zygote imports once a worker has needed it (adapters.zygote, report_imports): the
# agentscope prompts profile's package (its texts, its JSON repair) and what it validates
# with, two seconds of every program that runs that profile otherwise.
ZYGOTE_KEEP = ("agentscope.agent", "agentscope.agent._config", "agentscope.exception",
               "agentscope._utils._common", "jsonschema", "harnesslab.harness.agentscope_profile")


def zygote_prepare(first: bytes) -> list[str]:
    """In the zygote, before it forks the worker for a program: what the program's first line
    (the hello, which the bench sends before it reads anything) shows it will import, of
    ``ZYGOTE_KEEP``. The agentscope prompts profile imports the agentscope package (about 2 s):
    imported once here, it is paid neither by the first program that needs it nor again by the
    zygote after that program reported it."""
    try:
        hello = json.loads(first.split(b"\n", 1)[0])
    except ValueError:
        return []
    settings = hello.get("settings") if isinstance(hello, dict) else None
    if isinstance(settings, dict) and settings.get("prompts") == "agentscope":
        return list(ZYGOTE_KEEP)
    return []


def _exit(harness: ReferenceHarness | None) -> None:
    """End without the interpreter's finalisation: freeing every module's objects one by one
    costs a process of this size about a fifth of its start-up, for nothing it keeps. What
    must outlive the process is written first: the store's database closed (its WAL written
    back, as a normal exit's clean-up does), the prints flushed. Every file the harness writes
    is closed when written (the store's rollout lines are fsynced)."""
    if harness is not None and harness.link is not None:
        harness.link.store.close()
    for f in (sys.stdout, sys.stderr):
        f.flush()
    zygote.report_imports()
    os._exit(0)


if __name__ == "__main__":
    main()
