"""``harnesslab sessions list|show|resume STORE_DIR``: read a harness's session store the way
Codex's thread list / read / resume do (``harnesslab.harness.store``).

``resume`` builds a fresh reference harness on the session, as a restarted service would, with
doors that make no call: it restores the session from the store and reports what it holds and
whether it equals the state the rollout replays to (resume fidelity).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError
from harnesslab.events import ListSink
from harnesslab.harness.store import (
    DB_NAME,
    SessionMeta,
    SessionStore,
    StoreCorrupt,
    integrity_problems,
)
from harnesslab.messages import message_from_dict
from harnesslab.record.format import message_text
from harnesslab.run.instances import differing_keys


def open_store(path: str | Path) -> SessionStore:
    """The store at ``path``: a store folder, or a run's workdir holding ``store/``."""
    p = Path(path)
    for root in (p, p / "store"):
        if (root / DB_NAME).is_file():
            return SessionStore(root)
    raise InputError(f"not a session store: no {DB_NAME} here or in store/", file=str(p))


def _meta(store: SessionStore, session_id: str) -> SessionMeta:
    meta = store.session(session_id)
    if meta is None:
        known = ", ".join(m.id for m in store.sessions()) or "none"
        raise InputError(f"no session {session_id!r}; the store has: {known}",
                         file=str(store.root), field="SESSION")
    return meta


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[:n - 1] + "…"


def list_sessions(path: str | Path, *, as_json: bool = False) -> str:
    store = open_store(path)
    metas = store.sessions()
    if as_json:
        return json.dumps([m.__dict__ for m in metas], ensure_ascii=False, indent=2) + "\n"
    head = ("session", "user", "created", "updated", "turns", "compactions", "rev",
            "last summary")
    rows = [head] + [(m.id, m.user, m.created, m.updated, str(m.turns), str(m.compactions),
                      str(m.rev), _short(m.last_summary, 40)) for m in metas]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n"
                   for r in rows)


def _messages(context: list[dict[str, Any]]) -> list[str]:
    return [f"{d.get('role', '?')}: {_short(message_text(message_from_dict(d)), 100)}"
            for d in context]


def show_session(path: str | Path, session_id: str, *, as_json: bool = False) -> str:
    store = open_store(path)
    meta = _meta(store, session_id)
    try:
        lines = store.rollout(session_id)
        saved = store.load(session_id)
    except StoreCorrupt as e:
        raise InputError(e.problem, file=str(e.path), line=e.line) from None
    state = saved.state if saved else {}
    if as_json:
        return json.dumps({"session": meta.__dict__, "rollout": lines, "state": state},
                          ensure_ascii=False, indent=2) + "\n"
    out = [f"session {meta.id}  user {meta.user}  created {meta.created}  updated "
           f"{meta.updated}", f"turns {meta.turns}  compactions {meta.compactions}  rev "
           f"{meta.rev}  rollout {meta.rollout}", "", "rollout:"]
    out += [f"  rev {x['rev']:>3}  {x['kind']:<7}  {x['at']}  kept {x['keep']}, "
            f"+{len(x['append'])} messages" for x in lines]
    out += ["", f"summary: {_short(str(state.get('summary', '')), 200) or '(none)'}",
            f"context ({len(state.get('context', []))} messages):"]
    out += [f"  {m}" for m in _messages(state.get("context", []))]
    return "\n".join(out) + "\n"


class _NoModel:
    """A resumed instance here only restores; it never calls the model or a tool."""

    def call(self, request: Any, *, purpose: str = "reply", estimate: int | None = None) -> Any:
        raise RuntimeError("harnesslab sessions resume makes no model call")

    def schemas(self) -> tuple[()]:
        return ()

    def run(self, name: str, arguments: str, acting_user: str) -> Any:
        raise RuntimeError("harnesslab sessions resume runs no tool")


class _At:
    def __init__(self, at: str) -> None:
        self._at = datetime.fromisoformat(at)

    def now(self) -> datetime:
        return self._at


def resume_session(path: str | Path, session_id: str, *, as_json: bool = False,
                   settings: dict[str, Any] | None = None) -> tuple[str, bool]:
    """Restore the session on a fresh reference harness configured by ``settings`` (those the
    session was served with: a pinned board or Codex's counters come back only into the same
    strategy); (the report, fidelity held)."""
    from harnesslab.harness.agent import ReferenceHarness
    from harnesslab.harness.base import HarnessContext, Session
    from harnesslab.scenario.settings import resolve

    store = open_store(path)
    meta = _meta(store, session_id)
    problems = integrity_problems(store.root)
    if problems:
        text = f"cannot resume {meta.id}: integrity: " + "; ".join(problems)
        return (json.dumps({"session": meta.id, "integrity": problems}, indent=2) + "\n"
                if as_json else text + "\n"), False
    if store.root.name != "store":
        raise InputError("a reference harness finds its store at <workdir>/store; this store "
                         "folder has another name", file=str(store.root))
    saved = store.load(session_id)
    assert saved is not None  # the metadata row is written after its first rollout line
    door = _NoModel()
    ctx = HarnessContext(door, door, _At(meta.updated), ListSink(), Session(meta.id, meta.user),
                         store.root.parent)
    config = resolve([{**(settings or {}), "persist": True}]).harness
    harness = ReferenceHarness(ctx, config)
    restored = json.loads(json.dumps(harness.save_state()))
    want = json.loads(json.dumps(saved.state))
    same = restored == want
    if as_json:
        return json.dumps({"session": meta.id, "user": meta.user, "rev": saved.rev,
                           "fidelity": same, "integrity": [], "state": restored},
                          ensure_ascii=False, indent=2) + "\n", same
    ctx_msgs = restored.get("context", [])
    out = [f"resumed {meta.id} (user {meta.user}) at rev {saved.rev}, {saved.turns} turns: "
           f"{len(ctx_msgs)} messages, summary {len(restored.get('summary', ''))} chars",
           "integrity: ok",
           "fidelity: the restored state equals the rollout's" if same else
           "fidelity: the restored state differs from the rollout's in "
           + ", ".join(differing_keys(want, restored))]
    out += [f"  {m}" for m in _messages(ctx_msgs)[-6:]]
    return "\n".join(out) + "\n", same
