"""``harnesslab serve``: one scenario variant's simulated service, fake model and tools over the
wire (``harnesslab.adapters.serve_app``), a fresh run for every session.

Each new API key opens a session: its own world (clock, orders, tool failures), its own fake
model and service, and its own record ``OUT/session<N>.jsonl`` in the usual format (header,
model calls, overflows, tool calls; flushed after every request, so ``harnesslab show`` reads
it while the server runs). Nobody drives the scenario's steps here: the client is the
harness, and what it sends is what is recorded. ``harnesslab run`` with ``harness=cmd:...``
drives the steps and checks them (``harnesslab.adapters.cmd``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnesslab.adapters.serve_app import Server, Sessions, WireSession, build_app
from harnesslab.record.writer import RecordWriter
from harnesslab.run.drive import world_context
from harnesslab.run.runner import open_record
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import resolve_settings


class ScenarioServe:
    """The sessions of one scenario variant and seed, each a run with its own record."""

    def __init__(self, sc: Scenario, variant: Variant, *, seed: int = 0,
                 source: Path | None = None, out_dir: Path | None = None,
                 cli_set: Mapping[str, Any] | None = None) -> None:
        self.sc, self.variant, self.seed, self.source, self.out_dir = \
            sc, variant, seed, source, out_dir
        # Bad settings fail here, before the server listens.
        self.settings = resolve_settings(sc, variant, cli_set)
        self.writers: list[RecordWriter] = []
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self.sessions = Sessions(self._open)

    def _open(self, token: str) -> WireSession:
        with self._lock:
            n = next(self._numbers)
        world = self.sc.make_world(self.settings.tools)
        path = self.out_dir / f"session{n}.jsonl" if self.out_dir else None
        writer = open_record(self.sc, self.variant, self.seed, self.source, self.settings,
                             world, path, wire_session=n,
                             # The harness is whatever client holds the key, not a setting.
                             harness_name="serve client")
        ctx, _, _ = world_context(self.sc, self.settings, world, writer, self.seed)
        with self._lock:
            self.writers.append(writer)
        return WireSession(ctx, after=writer.flush, inline=not self.settings.model.real)

    def close(self) -> None:
        for s in self.sessions.all():
            s.close()
        with self._lock:
            for w in self.writers:
                w.close()

    def server(self, host: str = "127.0.0.1", port: int = 0) -> Server:
        return Server(build_app(self.sessions), host, port)
