"""Executors: how a sweep's runs are spread over cores or machines, behind one registry.

- ``serial``: one run after another in this process.
- ``processes`` (the default): a ``concurrent.futures.ProcessPoolExecutor`` of spawned
  processes, one per core. Workers get plain data (scenario path, variant, seed, settings, out
  folder) and call ``run_variant`` themselves; nothing but that data and the row crosses over.
- ``dask``: ``dask.distributed`` (the ``dask`` extra): a ``Client`` connected to
  ``--scheduler tcp://HOST:PORT``, or to a ``LocalCluster`` of one single-threaded worker
  process per core when no address is given. Dask schedules the tasks; results come back to
  this process, which alone writes the rows. Workers need no disk shared with this process:
  a sweep's dask tasks carry the scenario file's bytes, and each run's files (record, work
  folder) come back with its row, written here (``harnesslab.sweep.rows.run_task``).

Each yields results as runs finish, in any order; the sweep sorts its table by run key.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from harnesslab.errors import HarnessLabError, InputError

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    name: str

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


EXECUTORS: dict[str, Callable[..., Executor]] = {}


def register_executor(name: str) -> Callable[[Callable[..., Executor]], Callable[..., Executor]]:
    def deco(factory: Callable[..., Executor]) -> Callable[..., Executor]:
        if name in EXECUTORS:
            raise ValueError(f"executor {name!r} is already registered")
        EXECUTORS[name] = factory
        return factory
    return deco


def make_executor(name: str, *, jobs: int | None = None,
                  scheduler: str | None = None) -> Executor:
    """An executor by name; ``jobs`` workers (default: the usable cores)."""
    if scheduler and name != "dask":
        raise InputError(f"a scheduler address needs --executor dask (not {name})",
                         field="--scheduler")
    factory = EXECUTORS.get(name)
    if factory is None:
        raise InputError(f"unknown executor {name!r}; expected one of: {', '.join(EXECUTORS)}",
                         field="--executor")
    return factory(jobs=jobs, scheduler=scheduler)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Base:
    name = ""

    def __enter__(self) -> Executor:
        return self  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass


@register_executor("serial")
class SerialExecutor(_Base):
    name = "serial"

    def __init__(self, jobs: int | None = None, scheduler: str | None = None) -> None:
        pass

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        for item in items:
            yield fn(item)


@register_executor("processes")
class ProcessExecutor(_Base):
    name = "processes"

    def __init__(self, jobs: int | None = None, scheduler: str | None = None) -> None:
        self.jobs = jobs or usable_cores()
        self._pool: Any = None

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        if not items:
            return
        # spawn: a worker starts clean (no copy of this process's threads or locks) and the
        # same code runs on Linux, macOS and Windows.
        self._pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(items)),
                                         mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_ignore_sigint)
        # Keep a bounded number in flight so that results are handed back as they finish and
        # a long queue is not pickled up front.
        todo = iter(items)
        running = set()
        for item in todo:
            running.add(self._pool.submit(fn, item))
            if len(running) >= 2 * self.jobs:
                break
        # Ctrl-C is taken as a flag while this waits on the pool and raised between waits: as
        # an exception it could land inside concurrent.futures while a future's lock is held
        # (in wait() or result()), and the pool's manager thread, failing the futures of the
        # workers stopped below, then waited on that lock for ever: the process printed its
        # table and hung at exit.
        with sigint_as_flag() as came:
            try:
                while running:
                    finished, running = wait(running, timeout=_POLL, return_when=FIRST_COMPLETED)
                    if came():
                        raise KeyboardInterrupt
                    for fut in finished:
                        yield fut.result()
                        if came():
                            raise KeyboardInterrupt
                        nxt = next(todo, None)
                        if nxt is not None:
                            running.add(self._pool.submit(fn, nxt))
            except BrokenProcessPool as e:
                raise HarnessLabError(f"a worker process died ({e}); the finished runs are "
                                      "kept: run the same sweep again to resume") from None

    def __exit__(self, *exc: object) -> None:
        if exc and exc[0] is KeyboardInterrupt and self._pool is not None:
            # Ctrl-C: the runs under way are dropped (their rows were never written; a rerun
            # does them), not waited for.
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                proc.terminate()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


_POLL = 0.1  # seconds between looks at the Ctrl-C flag while the pool works


@contextlib.contextmanager
def sigint_as_flag() -> Iterator[Callable[[], bool]]:
    """Ctrl-C noted, not raised, while the block runs (in the main thread, where a handler can
    be set, and only over Python's own handler: one a caller set, or SIGINT ignored, is left
    as it is); yields "did one come?"."""
    import signal
    import threading

    came: list[object] = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield lambda: False
        return
    old = signal.signal(signal.SIGINT, lambda *_: came.append(1))
    try:
        yield lambda: bool(came)
    finally:
        signal.signal(signal.SIGINT, old)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the coordinator alone handles it (it writes the
    # table), so a worker neither prints a KeyboardInterrupt traceback nor dies mid-record.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@register_executor("dask")
class DaskExecutor(_Base):
    name = "dask"

    def __init__(self, jobs: int | None = None, scheduler: str | None = None) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise InputError("the dask executor needs the dask extra: "
                             "pip install 'harnesslab[dask]'", field="--executor") from None
        self._cluster: Any = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout="30s")
            except OSError as e:
                raise InputError(f"cannot reach the Dask scheduler: {e}",
                                 field="--scheduler") from None
        else:
            self._cluster = LocalCluster(n_workers=jobs or usable_cores(), threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self.client = Client(self._cluster)

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        from dask.distributed import as_completed

        # Earlier items first (the sweep orders the longest runs first); keys name the runs.
        futures = [self.client.submit(fn, item, key=f"harnesslab-run-{getattr(item, 'run_key', i)}",
                                      priority=len(items) - i, pure=False)
                   for i, item in enumerate(items)]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()
