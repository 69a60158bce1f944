"""One black-box program's process and its protocol channel: start it, exchange protocol lines
(one JSON object per line each way), keep its prints as its log, stop or kill it.

The channel is a pair of pipes whose descriptors the program inherits, named in its environment
(``HARNESSLAB_PROTOCOL_IN``: the descriptor it reads the bench's lines from;
``HARNESSLAB_PROTOCOL_OUT``: the one it writes its answers to), so whatever the program or its
framework prints on stdout cannot corrupt the protocol. Programs written for the first protocol
(lines on stdin, answers on stdout) still work: the bench writes its first line (``hello``) on
both, and the channel the answer comes back on is the one used from then on. Until that
answer, stdout lines that are not a JSON object are log, whichever channel the program uses.

stdout and stderr are the program's log: kept, when the run has a folder, as
``NAME.stdout.log`` and ``NAME.stderr.log`` in it, and their tail is quoted when the program
fails.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

IN_ENV, OUT_ENV = "HARNESSLAB_PROTOCOL_IN", "HARNESSLAB_PROTOCOL_OUT"
_EOF = "\0eof"
STOP_GRACE = 5.0  # seconds a program has to exit after the shutdown line, then after SIGTERM


class ProgramFailed(Exception):
    """The program did not answer as the protocol says; the message says how."""


def _tail(lines: collections.deque[str] | list[str]) -> str:
    return "".join(lines).strip()[-600:]


class Program:
    """A started program (module docstring). ``ask`` writes one line and returns the JSON
    object answered within ``timeout`` seconds, or raises :class:`ProgramFailed`."""

    def __init__(self, words: list[str], env: dict[str, str], *, timeout: float,
                 logs: Path | None = None) -> None:
        self.timeout = timeout
        to_r, to_w = os.pipe()      # bench -> program
        from_r, from_w = os.pipe()  # program -> bench
        env = {**env, IN_ENV: str(to_r), OUT_ENV: str(from_w)}
        try:
            self.proc = subprocess.Popen(words, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                         errors="replace", env=env, pass_fds=(to_r, from_w))
        except BaseException:
            for fd in (to_r, to_w, from_r, from_w):
                os.close(fd)
            raise
        os.close(to_r)
        os.close(from_w)
        self._chan_w: IO[str] | None = os.fdopen(to_w, "w", encoding="utf-8")
        chan_r = os.fdopen(from_r, "r", encoding="utf-8", errors="replace")
        self.channel: str | None = None  # "fd" or "stdio", once the program answered
        self._lines: queue.Queue[tuple[str, str]] = queue.Queue()
        self._stdout_tail: collections.deque[str] = collections.deque(maxlen=200)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        self._log_lock = threading.Lock()
        self._logs = [self._open_log(logs, "stdout"), self._open_log(logs, "stderr")]
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [threading.Thread(target=self._pump, args=a, daemon=True) for a in (
            (self.proc.stdout, "stdout"), (chan_r, "fd"), (self.proc.stderr, "stderr"))]
        for t in self._threads:
            t.start()
        self._open = {"stdout", "fd"}  # sources not yet at end of file

    @staticmethod
    def _open_log(logs: Path | None, kind: str) -> IO[str] | None:
        if logs is None:
            return None
        logs.parent.mkdir(parents=True, exist_ok=True)
        return open(f"{logs}.{kind}.log", "w", encoding="utf-8")

    def _pump(self, stream: IO[str], source: str) -> None:
        log = self._logs[0] if source == "stdout" else self._logs[1] if source == "stderr" \
            else None
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                if source == "stderr":
                    self._stderr_tail.append(line)
                elif source == "stdout":
                    self._stdout_tail.append(line)
                if log is not None:
                    with self._log_lock:
                        log.write(line)
                        log.flush()
                if source != "stderr":
                    self._lines.put((source, line))
        if source != "stderr":
            self._lines.put((source, _EOF))

    # -- lines ------------------------------------------------------------------------------
    def _write(self, line: str, *, both: bool = False) -> None:
        targets: list[IO[str] | None] = []
        if self.channel in (None, "fd") or both:
            targets.append(self._chan_w)
        if self.channel in (None, "stdio") or both:
            targets.append(self.proc.stdin)
        for f in targets:
            if f is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                f.write(line + "\n")
                f.flush()

    def ask(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        """Write ``message``, read the answer (module docstring); ``what`` names the step in
        a failure."""
        self._write(json.dumps(message, ensure_ascii=False))
        deadline = time.monotonic() + self.timeout  # scheduling, not semantics
        while True:
            left = deadline - time.monotonic()
            try:
                source, line = self._lines.get(timeout=max(left, 0.0))
            except queue.Empty:
                raise ProgramFailed(f"no reply to {what} within {self.timeout:g} s "
                                    "(stopped)") from None
            if line == _EOF:
                self._open.discard(source)
                if source == self.channel or not self._open or \
                        (self.channel == "stdio" and source == "stdout"):
                    code = self.proc.wait(10)
                    raise ProgramFailed(f"exited with code {code} before replying to {what}")
                continue
            if self.channel == "fd" and source == "stdout":
                continue  # its prints: log only
            if self.channel == "stdio" and source == "fd":
                continue
            try:
                reply = json.loads(line)
            except ValueError:
                reply = None
            if self.channel is None and source == "stdout" and not isinstance(reply, dict):
                continue  # a print before it chose a channel: log only
            if not isinstance(reply, dict):
                raise ProgramFailed(f"wrote a line that is not a JSON object in reply to "
                                    f"{what}: {line.rstrip()[:300]!r}")
            if self.channel is None:
                self._choose("fd" if source == "fd" else "stdio")
            return reply

    def _choose(self, channel: str) -> None:
        self.channel = channel
        if channel == "stdio" and self._chan_w is not None:
            with contextlib.suppress(OSError):
                self._chan_w.close()
            self._chan_w = None

    # -- ending -----------------------------------------------------------------------------
    def stop(self) -> None:
        """A shutdown line, end of file on its input, then SIGTERM, then SIGKILL; safe twice."""
        if self.proc.poll() is None:
            self._write(json.dumps({"type": "shutdown"}))
            for f in (self._chan_w, self.proc.stdin):
                with contextlib.suppress(OSError, ValueError):
                    if f is not None:
                        f.close()
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(STOP_GRACE)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
        self._finish()

    def kill(self) -> None:
        """SIGKILL, as a crashed host would end it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._finish()

    def _finish(self) -> None:
        for t in self._threads:
            t.join(2)
        for f in (self._chan_w, self.proc.stdin, *self._logs):
            with contextlib.suppress(OSError, ValueError):
                if f is not None:
                    f.close()

    def leftovers(self) -> str:
        """What it wrote after the last line read (a partial line too), and its stderr's end:
        for the reason a failed run gives."""
        rest = []
        while not self._lines.empty():
            source, line = self._lines.get_nowait()
            if line != _EOF and (self.channel is None or source == ("fd" if self.channel == "fd"
                                                                    else "stdout")):
                rest.append(line)
        out, err = _tail(rest), _tail(self._stderr_tail)
        where = "its protocol channel" if self.channel == "fd" else "stdout"
        said = f"; then on {where}: {out!r}" if out else ""
        if self.channel == "fd":
            log = _tail(list(self._stdout_tail))
            said += f"; its stdout ends: {log!r}" if log else ""
        return said + (f"; its stderr ends: {err!r}" if err else "")
