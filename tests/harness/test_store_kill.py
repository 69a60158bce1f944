"""A process serving a long conversation on a session store, killed with SIGKILL at 20 random
points: after each kill the store passes its integrity check (SQLite integrity_check, every
rollout line whole JSON), the session resumes in a fresh process and on a fresh instance with
the state the rollout holds, and at most the turn in flight is lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harnesslab.harness.store import SessionStore, integrity_problems
from harnesslab.study.sessions import resume_session

# The child: the bundled kill scenario's world and lexicon, a reference harness with a store
# and a small window (it compacts every few turns), turns forever; "done <rev>" after each.
CHILD = r"""
import itertools, sys
from pathlib import Path
from harnesslab.run.doors import harness_context
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.config import HarnessConfig
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.model import FakeModel
from harnesslab.sim.service import PROFILES, SimulatedService
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import World

class Null:
    def emit(self, event):
        pass

sc = load_scenario(bundled_dir() / "kill-mid-turn-zh.yaml")
world = World(sc.world)
model = FakeModel(sc.intents(), seed=0,
                  max_ages={t: world.max_age(t) for t in world.spec.offered()})
endpoint = Endpoint(SimulatedService(PROFILES["openai-128k"]), model, Null())
ctx = harness_context(endpoint, ToolBox(world, seed=0), world.clock, Null(),
                      session_id="S-1", user_id="U-1", workdir=Path(sys.argv[1]))
h = ReferenceHarness(ctx, HarnessConfig(persist=True, context_size=2048))
h.save_state()  # restores the session when the store knows it
def say(text):
    sys.stdout.write(text + "\n")  # one write: print may write its pieces apart
    sys.stdout.flush()

say(f"ready {h.link.rev}")
texts = list(sc.lexicon)
for i in itertools.count(h.link.rev):
    h.turn(texts[i % len(texts)])
    say(f"done {h.link.rev}")
"""


def _serve(work: Path) -> tuple[subprocess.Popen[str], list[str]]:
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(work)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def read() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            if line.endswith("\n"):  # a line cut by the kill is no report
                lines.append(line.strip())

    threading.Thread(target=read, daemon=True).start()
    return p, lines


@pytest.mark.slow
def test_sigkill_at_20_random_points_loses_at_most_the_turn_in_flight(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    work = tmp_path / "work"
    finished = 0  # the last revision a child reported as finished
    revs = []
    for _ in range(20):
        p, lines = _serve(work)
        while not lines and p.poll() is None:
            time.sleep(0.01)
        assert lines, p.stderr.read() if p.stderr else ""
        tag, rev = lines[0].split()
        # Resumed: nothing finished is lost; the turn in flight at the kill may have been
        # committed before it was reported.
        assert tag == "ready" and finished <= int(rev) <= finished + 1
        # A random point: after 0 to 3 more finished turns (so the conversation goes on
        # growing however long a restore takes on a loaded machine), then within a turn.
        more = rng.randrange(4)
        while sum(x.startswith("done") for x in lines) < more and p.poll() is None:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.05))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        assert all(x.startswith(("ready ", "done ")) for x in lines), lines[-3:]
        done = [int(x.split()[1]) for x in lines if x.startswith("done")]
        finished = max([int(rev), *done])
        store = work / "store"
        assert integrity_problems(store) == []
        saved = SessionStore(store).load("S-1")
        if saved is None:
            # Killed before its first turn was committed (a slow start on a loaded machine):
            # nothing had finished, so nothing is lost; the next child starts afresh.
            assert finished == 0
            continue
        assert finished <= saved.rev <= finished + 1
        revs.append(saved.rev)
        out = resume_session(work, "S-1")
        assert out.ok, out.text
        # The rollout is ahead of the index when a kill fell between the two; said, and used.
        # (No index row at all when the kill fell between the first rollout line and its
        # insert: the index's view is rev 0.)
        index = SessionStore(store, read_only=True).session("S-1")
        index_rev = index.rev if index is not None else 0
        assert (index_rev != saved.rev) == ("resumed from the rollout" in out.text), out.text
    # The kills fell at different points of a conversation that went on growing.
    assert len(set(revs)) >= 10 and revs == sorted(revs)
    compacted = SessionStore(work / "store").session("S-1")
    assert compacted is not None and compacted.compactions > 0
