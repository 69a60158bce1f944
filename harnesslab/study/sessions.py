"""``harnesslab sessions list|show|resume STORE_DIR``: read a harness's session store the way
Codex's thread list / read / resume do (``harnesslab.harness.store``).

``resume`` builds a fresh reference harness on the session, as a restarted service would, with
doors that make no call: it restores the session from the store and reports what it holds and
whether it equals the state the rollout replays to (resume fidelity).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harnesslab.errors import InputError
from harnesslab.events import ListSink
from harnesslab.harness.store import (
    DB_NAME,
    Saved,
    SessionMeta,
    SessionStore,
    StoreCorrupt,
    integrity_problems,
    rollout_name,
)
from harnesslab.messages import message_from_dict
from harnesslab.record.format import message_text
from harnesslab.run.instances import differing_keys


def open_store(path: str | Path) -> SessionStore:
    """The store at ``path`` (a store folder, or a run's workdir holding ``store/``), opened
    read-only: nothing a reader does creates or rewrites a file of it."""
    p = Path(path)
    for root in (p, p / "store"):
        if (root / DB_NAME).is_file():
            try:
                return SessionStore(root, read_only=True)
            except StoreCorrupt as e:
                raise _input(e) from None
    raise InputError(f"not a session store: no {DB_NAME} here or in store/", file=str(p))


def _input(e: StoreCorrupt) -> InputError:
    return InputError(e.problem, file=str(e.path), line=e.line or None)


def _metas(store: SessionStore) -> list[SessionMeta]:
    try:
        return store.sessions()
    except StoreCorrupt as e:
        raise _input(e) from None


def _meta(store: SessionStore, session_id: str) -> SessionMeta:
    meta = next((m for m in _metas(store) if m.id == session_id), None)
    if meta is None:
        meta = _rollout_only(store, session_id)
    if meta is None:
        known = ", ".join(m.id for m in _metas(store)) or "none"
        raise InputError(f"no session {session_id!r}; the store has: {known}",
                         file=str(store.root), field="SESSION")
    return meta


def _rollout_only(store: SessionStore, session_id: str) -> SessionMeta | None:
    """A session whose rollout has lines the index has no row for: its writer was killed
    between its first rollout line and the index's insert. The rollout is the truth, so the
    session is there; the index's view of it (rev 0, nothing) makes ``_saved`` say so."""
    try:
        lines = store.rollout(session_id)
    except StoreCorrupt as e:
        raise _input(e) from None
    if not lines:
        return None
    path = store.rollout_path(session_id)
    return SessionMeta(session_id, str(lines[0].get("user", "")), str(lines[0].get("at", "")),
                       str(lines[-1].get("at", "")), 0, 0, "", 0,
                       str(path.relative_to(store.root)))


def _saved(store: SessionStore, meta: SessionMeta) -> tuple[Saved, str | None]:
    """The session as its rollout (the source of truth) replays, and a note when the metadata
    index disagrees with it. A rollout behind the index lost lines it once had (it is only ever
    appended to, before the index): that is damage, one line naming the rollout."""
    try:
        saved = store.load(meta.id)
    except StoreCorrupt as e:
        raise _input(e) from None
    rollout = store.rollout_path(meta.id)
    have = (saved.rev, saved.turns, saved.compactions) if saved else (0, 0, 0)
    said = (meta.rev, meta.turns, meta.compactions)
    if have == said:
        assert saved is not None  # the index row is written after the first rollout line
        return saved, None
    what = (f"{DB_NAME} says rev {meta.rev} ({meta.turns} turns, {meta.compactions} "
            f"compactions), the rollout replays to rev {have[0]} ({have[1]} turns, {have[2]} "
            "compactions)")
    if saved is None or have[0] < meta.rev:
        raise InputError(f"session {meta.id}: {what}: the rollout lost revisions it had (it is "
                         "damaged); nothing shown or resumed from it, and it is left as it is",
                         file=str(rollout))
    # A writer killed between its rollout line and the index update: the rollout is ahead.
    return saved, (f"note: session {meta.id}: {what}; using the rollout ({DB_NAME} lags it, as "
                   "after a writer was killed between the two)")


def _agreed(store: SessionStore, meta: SessionMeta) -> tuple[SessionMeta, str | None]:
    """The session's metadata as the rollout has it (the rollout wins), and the note."""
    saved, note = _saved(store, meta)
    if note is None:
        return meta, None
    last = store.rollout(meta.id)[-1]
    return SessionMeta(meta.id, meta.user, meta.created, str(last.get("at", meta.updated)),
                       saved.turns, saved.compactions, str(saved.state.get("summary", "")),
                       saved.rev, meta.rollout), note


@dataclass(frozen=True)
class Output:
    """What a sessions command prints: ``text`` on stdout, ``notes`` on stderr (where the
    metadata index and the rollout disagree, and which was used), ``ok`` its verdict."""

    text: str
    notes: tuple[str, ...] = ()
    ok: bool = True


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[:n - 1] + "…"


def list_sessions(path: str | Path, *, as_json: bool = False) -> Output:
    store = open_store(path)
    metas, notes = [], []
    indexed = _metas(store)
    # Rollouts the index has no row for (a writer killed before its first insert) are
    # sessions too: the rollout is the truth.
    known = {m.rollout for m in indexed}
    folder = store.root / "rollouts"
    for f in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        rel = str(f.relative_to(store.root))
        if rel in known:
            continue
        only = _rollout_only(store, f.stem) if rollout_name(f.stem) == f.name else None
        if only is not None:
            indexed.append(only)
        elif f.stat().st_size:
            notes.append(f"note: {rel}: a rollout the index has no row for, under a hashed "
                         "name (give its session id to show or resume it)")
    for m in indexed:
        agreed, note = _agreed(store, m)
        metas.append(agreed)
        notes += [note] if note else []
    if as_json:
        return Output(json.dumps([m.__dict__ for m in metas], ensure_ascii=False, indent=2)
                      + "\n", tuple(notes))
    head = ("session", "user", "created", "updated", "turns", "compactions", "rev",
            "last summary")
    rows = [head] + [(m.id, m.user, m.created, m.updated, str(m.turns), str(m.compactions),
                      str(m.rev), _short(m.last_summary, 40)) for m in metas]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return Output("".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                          + "\n" for r in rows), tuple(notes))


def _messages(context: list[dict[str, Any]]) -> list[str]:
    return [f"{d.get('role', '?')}: {_short(message_text(message_from_dict(d)), 100)}"
            for d in context]


def show_session(path: str | Path, session_id: str, *, as_json: bool = False) -> Output:
    store = open_store(path)
    meta, note = _agreed(store, _meta(store, session_id))
    try:
        lines = store.rollout(session_id)
    except StoreCorrupt as e:
        raise _input(e) from None
    saved, _ = _saved(store, meta)
    state = saved.state
    notes = (note,) if note else ()
    if as_json:
        return Output(json.dumps({"session": meta.__dict__, "rollout": lines, "state": state},
                                 ensure_ascii=False, indent=2) + "\n", notes)
    out = [f"session {meta.id}  user {meta.user}  created {meta.created}  updated "
           f"{meta.updated}", f"turns {meta.turns}  compactions {meta.compactions}  rev "
           f"{meta.rev}  rollout {meta.rollout}", "", "rollout:"]
    out += [f"  rev {x['rev']:>3}  {x['kind']:<7}  {x['at']}  kept {x['keep']}, "
            f"+{len(x['append'])} messages" for x in lines]
    out += ["", f"summary: {_short(str(state.get('summary', '')), 200) or '(none)'}",
            f"context ({len(state.get('context', []))} messages):"]
    out += [f"  {m}" for m in _messages(state.get("context", []))]
    return Output("\n".join(out) + "\n", notes)


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
                   settings: dict[str, Any] | None = None) -> Output:
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
        return Output(json.dumps({"session": meta.id, "integrity": problems}, indent=2) + "\n"
                      if as_json else text + "\n", ok=False)
    if store.root.name != "store":
        raise InputError("a reference harness finds its store at <workdir>/store; this store "
                         "folder has another name", file=str(store.root))
    saved, note = _saved(store, meta)
    notes = (note,) if note else ()
    door = _NoModel()
    ctx = HarnessContext(door, door, _At(meta.updated), ListSink(), Session(meta.id, meta.user),
                         store.root.parent)
    config = resolve([{**(settings or {}), "persist": True}]).harness
    harness = ReferenceHarness(ctx, config)
    restored = json.loads(json.dumps(harness.save_state()))
    want = json.loads(json.dumps(saved.state))
    same = restored == want
    if as_json:
        return Output(json.dumps({"session": meta.id, "user": meta.user, "rev": saved.rev,
                                  "fidelity": same, "integrity": [], "notes": list(notes),
                                  "state": restored}, ensure_ascii=False, indent=2) + "\n",
                      notes, same)
    ctx_msgs = restored.get("context", [])
    out = [f"resumed {meta.id} (user {meta.user}) at rev {saved.rev}, {saved.turns} turns: "
           f"{len(ctx_msgs)} messages, summary {len(restored.get('summary', ''))} chars",
           "integrity: ok" + (f"; {DB_NAME} lags the rollout (rev {meta.rev} against "
                              f"{saved.rev}): resumed from the rollout" if note else ""),
           "fidelity: the restored state equals the rollout's" if same else
           "fidelity: the restored state differs from the rollout's in "
           + ", ".join(differing_keys(want, restored))]
    out += [f"  {m}" for m in _messages(ctx_msgs)[-6:]]
    return Output("\n".join(out) + "\n", notes, same)
