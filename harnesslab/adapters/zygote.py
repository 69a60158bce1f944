"""The reference harness as a program starts from a fork server: its start-up optimisation
(docs/black-box.md, "The reference harness as a program"). Standard library only: the
launcher must cost no more than an interpreter's start.

A program process pays for importing the reference harness (pydantic and its models) before
its first turn, about five times what the interpreter costs to start, and a run starts one
process per instance (restarts, kills, instances). So the first program a bench process starts
also starts a fork server (the zygote): it imports the harness once and forks a worker per
program from that state, which no worker has touched (a fresh process state per instance,
as an exec gives: nothing of a previous instance is in it).

The process the bench starts (the launcher) stays the program to the bench: it hands the
zygote its stdin, stdout, stderr and protocol channel descriptors, its environment and its
folder, and the worker forked for it serves on them. The launcher then only waits: it exits
as the worker exits (the same code or signal), a SIGTERM (SIGINT, SIGHUP) it gets is passed
on, and when it is SIGKILLed the worker ends too, before it acts on anything more: the worker
holds a pipe whose other end only the launcher holds; a thread of the worker exits the moment
that pipe ends, and the worker's HTTP client looks at it before it takes in any answer (the
bench answers the call it killed the program in only after the kill), so a killed program's
worker never acts on that answer, as a killed process would not.

The zygote lives as long as the bench process that started its first launcher (its parent),
answers only its own user, and is keyed by the interpreter, the harnesslab folder and the
size and time of every source file in it (an edited harness gets a new zygote). Its CPU and
its workers' are not the bench process's children's (the zygote is not its child):
:func:`cpu_seconds` reports them, and the black-box benchmark adds them.
``HARNESSLAB_ZYGOTE=0`` turns it off: each program imports the harness itself.

What a program imports on its own need and the served module lists in ``ZYGOTE_KEEP`` (the
reference program: agentscope, for its prompts profile) the zygote imports once a worker has
reported it (:func:`report_imports`, as the worker ends), for the workers it forks after:
never before, so a suite that needs none of it pays nothing. A served module whose program
reads a first line before it writes anything (the reference program's hello) may have the
zygote read that line before the fork (``zygote_prepare(first) -> names``): the zygote
imports the names of ``ZYGOTE_KEEP`` it returns, then forks; the worker reads the line again
from :func:`protocol_lines`. So not even the first program that needs a kept module imports
it itself.
"""

from __future__ import annotations

# What the launcher needs: C modules only (adapters/launcher.py runs it without site, where
# nothing but os is loaded before it; pathlib, contextlib and array's collections.abc would
# cost it a third of that start, and each C module is a shared library to load, so struct's
# and select's are the zygote's). socket and signal (their enums), subprocess, threading and
# traceback are imported where they are used (the zygote's start; the zygote has them for
# its workers); the frames are marshal's (one interpreter on both ends: the key names it).
# Hence try/except where contextlib.suppress would do.
import _socket
import marshal
import os
import sys
import zlib

TYPE_CHECKING = False  # not typing's: importing typing is a tenth of the launcher's start
if TYPE_CHECKING:
    import signal as _signal  # its names, typed: _signal is what it re-exports
    import socket
    from collections.abc import Iterator
    from typing import Any
else:
    import _signal

OFF_ENV = "HARNESSLAB_ZYGOTE"
ALIVE_ENV = "HARNESSLAB_ZYGOTE_ALIVE"  # the worker's end of the launcher's pipe
# "<fd> <module> ...": the zygote's pipe, and the modules it would keep that it has not loaded
WANTS_ENV = "HARNESSLAB_ZYGOTE_WANTS"
# What the zygote read of a program's first line before it forked (hex): in the worker's
# environment, or in the launcher's when the zygote did not fork (protocol_lines reads it).
AHEAD_ENV = "HARNESSLAB_ZYGOTE_AHEAD"
_CHANNEL = ("HARNESSLAB_PROTOCOL_IN", "HARNESSLAB_PROTOCOL_OUT")
_MAX_FDS = 8
_START_TIMEOUT = 60.0


# The harnesslab folder, from this file's place in it (the launcher puts that beside site's
# paths, and both must name the same zygote).
_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def command(module: str = "harnesslab.adapters.reference_program") -> str:
    """The lightest command that starts ``module`` as a program (its ``main``) from a worker of
    the zygote: adapters/launcher.py, without site (``-S -I``: site and an editable install's
    finder are half a launcher's CPU). With no zygote to serve it, the launcher becomes
    ``python -m module``."""
    import shlex

    return f"python -S -I {shlex.quote(os.path.join(_ROOT, 'adapters', 'launcher.py'))} {module}"


def _key(module: str) -> str:
    root = _ROOT
    parts = [f"{sys.executable}\0{module}\0{root}"]
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in sorted(it, key=lambda e: e.name):
                if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                    stack.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    parts.append(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}")
    # Not a secret, a version: which sources the zygote imported.
    data = "\n".join(parts).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(parts)}"


def _address(module: str, owner: int) -> str:
    # An abstract socket: no file to clean up; the peer's uid is checked on every connection.
    return f"\0harnesslab-zygote-{os.getuid()}-{owner}-{_key(module)}"


def _send(conn: _socket.socket, obj: dict[str, Any], fds: list[int] | None = None) -> None:
    data = marshal.dumps(obj)
    frame = len(data).to_bytes(4, "big") + data
    if fds:  # the first part of the frame carries them (as socket.send_fds does)
        sent = conn.sendmsg([frame], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                       b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))])
        frame = frame[sent:]
    while frame:
        frame = frame[conn.send(frame):]


def _recv(conn: _socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One frame and the descriptors that came with it; None at end of stream."""
    data, ancillary, _, _ = conn.recvmsg(1 << 16, _socket.CMSG_LEN(_MAX_FDS * 4))
    fds_list: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds_list += [int.from_bytes(payload[i:i + 4], sys.byteorder)
                         for i in range(0, len(payload) - 3, 4)]
    return _frame(conn, data, fds_list), fds_list if data else []


def _frame(conn: _socket.socket, data: bytes, fds: list[int]) -> dict[str, Any] | None:
    if not data:
        for fd in fds:
            os.close(fd)
        return None
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        more = conn.recv(1 << 16)
        if not more:
            for fd in fds:
                os.close(fd)
            fds.clear()
            return None
        data += more
    n = int.from_bytes(data[:4], "big")
    obj = marshal.loads(data[4:4 + n])
    return obj if isinstance(obj, dict) else None


def _connect(address: str) -> _socket.socket | None:
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(address)
    except OSError:
        conn.close()
        return None
    return conn


def _zygote(module: str, owner: int) -> _socket.socket | None:
    """A connection to the zygote of ``owner`` (a bench process), started if there is none."""
    address = _address(module, owner)
    conn = _connect(address)
    if conn is not None:
        return conn
    import select
    import subprocess

    ready_r, ready_w = os.pipe()
    try:
        subprocess.Popen(
            [sys.executable, "-m", "harnesslab.adapters.zygote", module, str(owner),
             str(ready_w)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, pass_fds=(ready_w,), start_new_session=True)
    except OSError:
        os.close(ready_r)
        return None
    finally:
        os.close(ready_w)
    # Until it listens (or another launcher's zygote won the address): scheduling, not
    # semantics.
    try:
        if select.select([ready_r], [], [], _START_TIMEOUT)[0]:
            os.read(ready_r, 1)
    except OSError:
        pass
    os.close(ready_r)
    return _connect(address)


def launch(module: str) -> None:
    """Serve this program from a worker forked by the zygote, and exit as it exits; returns
    only when no zygote can serve it (then the caller runs the program itself)."""
    if os.environ.get(OFF_ENV, "1") == "0" or not hasattr(os, "pidfd_open"):
        return  # off, or not Linux: no pidfds to follow the processes by
    try:
        channel = [int(os.environ[k]) for k in _CHANNEL]
    except (KeyError, ValueError):
        channel = []
    conn = _zygote(module, os.getppid())
    if conn is None:
        return
    alive_r, alive_w = os.pipe()
    try:
        _send(conn, {"env": dict(os.environ), "cwd": os.getcwd(), "channel": len(channel)},
              [0, 1, 2, alive_r, *channel])
        reply, _ = _recv(conn)
    except OSError:
        reply = None
    os.close(alive_r)
    if reply is None or "pid" not in reply:
        conn.close()
        os.close(alive_w)
        if reply is not None and reply.get("ahead"):  # the zygote read its first line
            os.environ[AHEAD_ENV] = reply["ahead"]
        return  # no worker was started: the program runs here
    # The worker holds the bench's pipes now: this process lets go of them, so that they end
    # when the worker does.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for fd in channel:
        try:  # noqa: SIM105
            os.close(fd)
        except OSError:
            pass
    worker = os.pidfd_open(reply["pid"])

    def forward(sig: int, _frame: object) -> None:
        try:  # noqa: SIM105
            _signal.pidfd_send_signal(worker, sig)
        except OSError:
            pass

    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, forward)
    try:
        status, _ = _recv(conn)
    except OSError:
        status = None
    code = int(status["code"]) if status is not None else 1
    if code < 0:  # the worker died of a signal: so does the program
        _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def report_imports() -> None:
    """In a worker, as its program ends: tell the zygote which of the modules it would keep
    (``WANTS_ENV``) the program imported, so that the zygote imports them once for the
    workers it forks later. A worker that is killed tells nothing: a later one will."""
    wants = os.environ.get(WANTS_ENV, "").split()
    got = [m for m in wants[1:] if m in sys.modules]
    if got:
        try:  # noqa: SIM105  (one write of less than PIPE_BUF: whole or not at all)
            os.write(int(wants[0]), (" ".join(got) + "\n").encode())
        except (OSError, ValueError):
            pass  # the zygote is gone, or its pipe is full: a later worker tells it again


def protocol_lines(fd: int) -> Iterator[str]:
    """The lines of the program's protocol channel (its descriptor ``fd``): in a worker of a
    served module that has ``zygote_prepare``, first what the zygote read of it before the
    fork (``AHEAD_ENV``, set by the worker or, when no worker was forked, by the launcher),
    then the rest."""
    f = os.fdopen(fd, "rb")
    ahead = bytes.fromhex(os.environ.pop(AHEAD_ENV, ""))
    if ahead:
        whole = ahead if ahead.endswith(b"\n") else ahead + f.readline()
        for line in whole.splitlines(keepends=True):
            yield line.decode("utf-8", errors="replace")
    for line in f:
        yield line.decode("utf-8", errors="replace")


def kept(module: str = "harnesslab.adapters.reference_program") -> list[str]:
    """The modules this process's zygote would keep that it has loaded (none: no zygote)."""
    return list(_stats(module).get("kept", []))


def _stats(module: str) -> dict[str, Any]:
    conn = _connect(_address(module, os.getpid()))
    if conn is None:
        return {}
    try:
        _send(conn, {"stats": True})
        reply, _ = _recv(conn)
    finally:
        conn.close()
    return reply or {}


def cpu_seconds(module: str = "harnesslab.adapters.reference_program") -> float:
    """CPU seconds of this process's zygote and the workers it reaped (0 when it has none)."""
    return float(_stats(module).get("cpu", 0.0))


# -- the zygote -----------------------------------------------------------------------------------
def _worker(entry: Any, request: dict[str, Any], fds: list[int], wants: str) -> None:
    """In the forked child: take the launcher's descriptors, environment and folder, serve."""
    for target, fd in zip((0, 1, 2), fds[:3], strict=True):
        os.dup2(fd, target)
        os.close(fd)
    import contextlib

    alive, channel = fds[3], fds[4:]
    env = dict(request["env"])
    for name, fd in zip(_CHANNEL, channel, strict=False):
        env[name] = str(fd)
    env[ALIVE_ENV] = str(alive)
    env.pop(WANTS_ENV, None)
    env.pop(AHEAD_ENV, None)
    if request.get("ahead"):  # what the zygote read of the first line (protocol_lines)
        env[AHEAD_ENV] = bytes(request["ahead"]).hex()
    if wants:
        env[WANTS_ENV] = wants
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])

    def watch() -> None:
        # Only the launcher holds the other end and never writes: the read ends when it dies.
        with contextlib.suppress(OSError):
            os.read(alive, 1)
        os._exit(137)

    import threading
    import traceback

    threading.Thread(target=watch, daemon=True).start()
    code = 1
    try:
        entry()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, int | None):
            print(e.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()  # as the interpreter would, had the program been started alone
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        report_imports()  # a program that leaves by os._exit reports itself (reference_program)
        os._exit(code)


def serve(module: str, owner: int, ready: int) -> None:
    import contextlib
    import gc
    import importlib
    import select
    import signal
    import socket
    import struct
    import threading  # and for the workers, which start a thread each
    import traceback  # noqa: F401

    served = importlib.import_module(module)  # the one import of the harness
    entry = served.main
    # What some programs import on their own need, and cost every one of them again (the
    # agentscope prompts profile imports the agentscope package, 2 s): not imported here for
    # every bench process, but once a worker reports it imported them (report_imports), for
    # the workers forked after. Only the served module's list is ever imported.
    keep: tuple[str, ...] = tuple(getattr(served, "ZYGOTE_KEEP", ()))
    tried: set[str] = set()
    wants_r, wants_w = os.pipe()
    os.set_blocking(wants_r, False)
    os.set_blocking(wants_w, False)  # a worker never waits on the zygote to read
    # Forking from a process with a thread of its own would copy locks that thread may hold:
    # when a kept import starts one, later programs run in their own process instead.
    forking = True
    # A worker's first connection by host name encodes the name as IDNA, and that codec's
    # import (stringprep, unicodedata, a regex compiled) cost every worker of the suite again.
    import encodings.idna  # noqa: F401
    # What the import built stays out of the collector's passes: a worker's first full pass
    # would otherwise write to every object's header and so copy every page it shares.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(_address(module, owner))
        parent = os.pidfd_open(owner)
    except OSError:
        os.close(ready)  # another zygote has the address, or the bench is gone
        return
    listener.listen(64)
    os.write(ready, b"1")
    os.close(ready)
    workers: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, launcher connection)
    # Launchers whose program's first line is awaited (``zygote_prepare``), by the channel's
    # read end: the connection, the request, its descriptors and what was read so far.
    prepare = getattr(served, "zygote_prepare", None)
    pending: dict[int, tuple[socket.socket, dict[str, Any], list[int], bytes]] = {}

    def keep_imports(names: Any) -> None:
        nonlocal forking
        for name in keep:
            if name in names and name not in tried:
                tried.add(name)  # once: an import that failed is not tried again
                with contextlib.suppress(Exception):
                    importlib.import_module(name)
        forking = forking and threading.active_count() == 1
        gc.freeze()  # what the import built, as the harness's above

    def start(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        if not forking:  # no pid: the launcher runs the program itself
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):  # with what was read of its first line
                _send(conn, {"ahead": request["ahead"].hex()} if request.get("ahead") else {})
            conn.close()
            return
        missing = [n for n in keep if n not in sys.modules and n not in tried]
        pid = os.fork()
        if pid == 0:
            listener.close()
            os.close(parent)
            os.close(wants_r)
            if not missing:
                os.close(wants_w)
            for pidfd, (_pid, other) in workers.items():
                os.close(pidfd)
                other.close()
            for other, _r, others, _a in pending.values():
                other.close()
                for fd in others:
                    os.close(fd)
            conn.close()
            _worker(entry, request, fds,
                    " ".join([str(wants_w), *missing]) if missing else "")
        for fd in fds:
            os.close(fd)
        # A launcher gone already: its worker's pipe has ended, and the worker ends too.
        with contextlib.suppress(OSError):
            _send(conn, {"pid": pid})
        workers[os.pidfd_open(pid)] = (pid, conn)

    while True:
        waiting = [x for fd_in, (c, _r, _f, _a) in pending.items() for x in (fd_in, c.fileno())]
        readable, _, _ = select.select([listener.fileno(), parent, wants_r, *workers, *waiting],
                                       [], [])
        if parent in readable:  # the bench process is gone: so are its programs
            for pidfd, (pid, _conn) in workers.items():
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                os.waitpid(pid, 0)
            return
        for pidfd in [p for p in readable if p in workers]:
            pid, conn = workers.pop(pidfd)
            _, status = os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                _send(conn, {"code": os.waitstatus_to_exitcode(status)})
            conn.close()
            os.close(pidfd)
        if wants_r in readable:
            with contextlib.suppress(OSError):
                keep_imports(set(os.read(wants_r, 1 << 16).decode(errors="replace").split()))
        for fd_in in [f for f in list(pending) if f in readable
                      or pending[f][0].fileno() in readable]:
            conn, asked, fds, ahead = pending.pop(fd_in)
            if conn.fileno() in readable and fd_in not in readable:
                # The launcher ended (killed) before its program's first line: no program.
                conn.close()
                for fd in fds:
                    os.close(fd)
                continue
            try:
                more = os.read(fd_in, 1 << 16)
            except OSError:
                more = b""
            ahead += more
            if more and b"\n" not in ahead:
                pending[fd_in] = (conn, asked, fds, ahead)  # the line is not whole yet
                continue
            # What the first line shows the program will import, imported once here first:
            # the worker then finds it done, and so do the workers forked after.
            with contextlib.suppress(Exception):
                keep_imports(set(prepare(ahead)))  # type: ignore[misc]
            start(conn, {**asked, "ahead": ahead}, fds)
        if listener.fileno() not in readable:
            continue
        conn, _ = listener.accept()
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                  struct.calcsize("3i")))[1]
        request, fds = _recv(conn) if uid == os.getuid() else (None, [])
        if request is None or (not request.get("stats") and len(fds) < 4):
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        if request.get("stats"):
            me, kids = (os.times()[:2]), os.times()[2:4]
            _send(conn, {"cpu": sum(me) + sum(kids),
                         "kept": [n for n in keep if n in sys.modules]})
            conn.close()
            continue
        if prepare is not None and forking and int(request.get("channel", 0)) > 0 \
                and len(fds) > 4:
            pending[fds[4]] = (conn, request, fds, b"")  # fds[4]: the channel's read end
            continue
        start(conn, request, fds)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
