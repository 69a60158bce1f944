"""The reference harness as a program, served from a fork of the zygote (adapters.zygote):
each program is a fresh worker of its own; a SIGKILL of the program the bench started ends its
worker, a SIGTERM is passed on, a shutdown line ends both; HARNESSLAB_ZYGOTE=0 serves in the
program's own process (the control: then no worker exists)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harnesslab.adapters import zygote
from harnesslab.adapters.cmd import command_words
from harnesslab.adapters.program import Program

# The program's own command, and the light launcher's (zygote.command: no site, no harnesslab
# package): both are served from the zygote and must keep what a kill and a stop mean.
COMMANDS = {"module": [sys.executable, "-m", "harnesslab.adapters.reference_program"],
            "launcher": command_words(zygote.command())}
HELLO = {"type": "hello", "protocol": 2, "session": "s1", "user": "U-1", "workdir": None,
         "now": "2026-01-05T09:00:00+08:00", "instance": 1, "settings": {}}


class _Tools(BaseHTTPRequestHandler):
    """The tool schemas the harness asks for when it is built: none."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = json.dumps({"tools": []}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tools_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tools)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/harnesslab/tools"
    server.shutdown()


def _zygote_children() -> set[int]:
    """The workers of this process's zygote (none when it has no zygote)."""
    out: set[int] = set()
    for proc in Path("/proc").iterdir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"harnesslab.adapters.zygote" in words and str(os.getpid()).encode() in words:
            for task in (proc / "task").iterdir():
                out |= {int(x) for x in (task / "children").read_text().split()}
    return out


@pytest.fixture(params=sorted(COMMANDS))
def words(request: pytest.FixtureRequest) -> list[str]:
    return COMMANDS[request.param]


def _start(tmp_path: Path, url: str, words: list[str], hello: dict[str, Any] = HELLO,
           **extra: str) -> tuple[Program, int | None]:
    """A program and the worker forked for it (None: no new worker)."""
    before = _zygote_children()
    env = {**os.environ, "OPENAI_API_KEY": secrets.token_hex(8), "PYTHONUNBUFFERED": "1",
           "HARNESSLAB_TOOLS_URL": url, **extra}
    program = Program(words, env, timeout=60, logs=tmp_path / f"p-{secrets.token_hex(4)}")
    assert program.ask(hello, "hello") == {"type": "hello", "honours": ["*"]}
    new = _zygote_children() - before
    assert len(new) <= 1, new
    return program, next(iter(new), None)


def _harness_loaded(pid: int) -> bool:
    """Whether the process imported the harness (pydantic's compiled core is mapped)."""
    return "pydantic_core" in Path(f"/proc/{pid}/maps").read_text()


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc")
def test_each_program_is_a_fresh_worker_and_its_kill_and_stop_are_real(
        tmp_path: Path, tools_url: str, words: list[str]) -> None:
    a, wa = _start(tmp_path, tools_url, words)
    b, wb = _start(tmp_path, tools_url, words)
    assert wa is not None and wb is not None and wa != wb  # a worker forked for each
    assert not _harness_loaded(a.proc.pid) and _harness_loaded(wa)  # the launcher stays light
    a.kill()  # SIGKILL of the process the bench started
    assert a.proc.returncode == -signal.SIGKILL
    assert _gone(wa), "the killed program's worker lives on"
    assert not _gone(wb, within=0.2)  # the other program's is untouched
    b.stop()  # a shutdown line: the worker ends, and the program with its code
    assert b.proc.returncode == 0 and _gone(wb)
    c, wc = _start(tmp_path, tools_url, words)
    assert wc is not None
    c.proc.terminate()  # passed on to the worker; the program ends as it does
    assert c.proc.wait(10) == -signal.SIGTERM and _gone(wc)
    c.stop()
    assert zygote.cpu_seconds() > 0  # the zygote's and its workers' CPU, for the benchmark


def test_with_the_zygote_off_the_program_serves_itself(tmp_path: Path, tools_url: str,
                                                       words: list[str]) -> None:
    program, worker = _start(tmp_path, tools_url, words, HARNESSLAB_ZYGOTE="0")
    assert worker is None and _harness_loaded(program.proc.pid)  # it serves itself
    program.stop()
    assert program.proc.returncode == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc")
def test_the_zygote_imports_what_a_programs_first_line_shows_it_needs_before_the_fork(
        tmp_path: Path, tools_url: str) -> None:
    """The agentscope prompts profile imports the agentscope package (two seconds): the zygote
    imports it when a program's hello line asks for that profile, before it forks the worker
    (``zygote_prepare``), not before (a suite that never needs it never pays it)."""
    pytest.importorskip("agentscope")
    words = COMMANDS["launcher"]
    plain, _ = _start(tmp_path, tools_url, words)
    plain.stop()
    assert zygote.kept() == []  # the control: a program of the default profile needs none of it
    hello = {**HELLO, "settings": {"prompts": "agentscope"}}
    first, wa = _start(tmp_path, tools_url, words, hello=hello)
    # Imported by the zygote from the hello line, before the fork: the worker found it done.
    assert wa is not None and "agentscope.agent" in zygote.kept()
    first.stop()
    second, wb = _start(tmp_path, tools_url, words, hello=hello)
    assert wb is not None  # still a fork of its own, with the package loaded before it
    second.proc.kill()
    assert _gone(wb)  # a kill of the program ends its worker, as before


def _eventually(pred: Any, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within  # scheduling: the zygote imports between forks
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _threaded_dep(folder: Path) -> None:
    """A module whose import starts a thread (which a fork would not copy, but its locks)."""
    (folder / "threaded_dep.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc")
def test_a_kept_import_that_starts_a_thread_ends_the_forking(tmp_path: Path) -> None:
    """A fork copies no thread but every lock one may hold: once a kept import has started a
    thread in the zygote, the programs after run in their own process (the launcher's)."""
    module = f"prog_{secrets.token_hex(4)}"  # a zygote of its own (keyed by the module)
    _threaded_dep(tmp_path)
    (tmp_path / f"{module}.py").write_text(
        "import os, sys\n"
        "ZYGOTE_KEEP = ('threaded_dep',)\n"
        "def main():\n"
        "    import threaded_dep  # noqa: F401\n"
        "    from harnesslab.adapters import zygote\n"
        "    print(os.getpid(), flush=True)\n"
        "    zygote.report_imports()\n"
        "if __name__ == '__main__':\n"
        "    main()\n")
    launcher = command_words(zygote.command(module))

    def run() -> bool:
        p = subprocess.Popen(launcher, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        return int(out.split()[0]) != p.pid

    assert run()  # the control: a worker served it (its pid is not the launcher's)
    assert _eventually(lambda: zygote.kept(module) == ["threaded_dep"])
    assert not run()  # the zygote has a thread now: the launcher served it itself


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc")
def test_a_program_killed_before_its_first_line_leaves_no_worker_and_the_zygote_serves_on(
        tmp_path: Path, tools_url: str) -> None:
    """The zygote waits for the reference program's hello before it forks (zygote_prepare): a
    program the bench kills before sending it never gets a worker, and the next one does."""
    words = COMMANDS["launcher"]
    warm, _ = _start(tmp_path, tools_url, words)  # the zygote is up
    warm.stop()
    before = _zygote_children()
    env = {**os.environ, "OPENAI_API_KEY": secrets.token_hex(8), "HARNESSLAB_TOOLS_URL": tools_url}
    silent = Program(words, env, timeout=60, logs=tmp_path / "silent")
    time.sleep(0.3)  # the launcher has handed its channel over; nothing was written on it
    assert _zygote_children() - before == set()  # no worker before the first line
    silent.kill()
    assert silent.proc.returncode == -signal.SIGKILL
    after, worker = _start(tmp_path, tools_url, words)
    assert worker is not None
    after.stop()
    assert after.proc.returncode == 0


def test_the_protocol_lines_begin_with_what_the_zygote_read_ahead(
        monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()
    os.write(w, b'rt": 1}\n{"b": 2}\n')
    os.close(w)
    monkeypatch.setenv(zygote.AHEAD_ENV, b'{"a": 0}\n{"pa'.hex())  # a line cut where a read ended
    assert list(zygote.protocol_lines(r)) == ['{"a": 0}\n', '{"part": 1}\n', '{"b": 2}\n']
    r, w = os.pipe()
    os.write(w, b'{"b": 2}\n')
    os.close(w)
    assert zygote.AHEAD_ENV not in os.environ  # read once
    monkeypatch.delenv(zygote.AHEAD_ENV, raising=False)  # the control: nothing read ahead
    assert list(zygote.protocol_lines(r)) == ['{"b": 2}\n']


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds and /proc")
def test_a_first_line_read_by_a_zygote_that_then_stops_forking_reaches_the_program(
        tmp_path: Path) -> None:
    """The zygote reads a program's first line before it forks (zygote_prepare); should the
    import that line asked for start a thread, the zygote forks no more and the launcher
    serves the program itself: the line read reaches it all the same."""
    module = f"prog_{secrets.token_hex(4)}"
    _threaded_dep(tmp_path)
    (tmp_path / f"{module}.py").write_text(
        "import os, sys\n"
        "ZYGOTE_KEEP = ('threaded_dep',)\n"
        "def zygote_prepare(first):\n"
        "    return ['threaded_dep'] if b'thread' in first else []\n"
        "def main():\n"
        "    from harnesslab.adapters import zygote\n"
        "    lines = zygote.protocol_lines(int(os.environ['HARNESSLAB_PROTOCOL_IN']))\n"
        "    print(os.getpid(), next(lines).strip(), next(lines).strip(), flush=True)\n"
        "if __name__ == '__main__':\n"
        "    main()\n")
    launcher = command_words(zygote.command(module))

    def run(first: bytes) -> tuple[bool, list[str]]:
        r, w = os.pipe()
        env = {**os.environ, "HARNESSLAB_PROTOCOL_IN": str(r), "HARNESSLAB_PROTOCOL_OUT": "1"}
        p = subprocess.Popen(launcher, cwd=tmp_path, stdout=subprocess.PIPE, text=True,
                             env=env, pass_fds=(r,))
        os.close(r)
        os.write(w, first + b"second\n")
        os.close(w)
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        words = out.split()
        return int(words[0]) != p.pid, words[1:]

    assert run(b"plain\n") == (True, ["plain", "second"])  # the control: a worker served it
    # The import the line asks for starts a thread: this program is the launcher's own.
    assert run(b"thread\n") == (False, ["thread", "second"])
    assert run(b"plain\n") == (False, ["plain", "second"])
