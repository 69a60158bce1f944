"""Loading scenario files: YAML with line numbers, the semantic checks a schema cannot
express, and one line naming the file, line and field of anything wrong.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from harnesslab.errors import InputError
from harnesslab.scenario.schema import STEP_KEYS, Scenario, UserStep
from harnesslab.scenario.steps import (
    session_errors,
    step_checks,
)
from harnesslab.sim.intents import (
    ACT_NEEDS,
    ITEM,
    REF,
    is_reference,
)
from harnesslab.sim.reading import item_name

# --- loading -------------------------------------------------------------------------------------

def _node_line(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (the deepest one that exists)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for key in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    nxt, line = v, k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and \
                key < len(node.value):
            nxt = node.value[key]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def _loc_text(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _message(err: Any) -> str:
    msg = str(err["msg"])
    msg = re.sub(r"^Value error, ", "", msg)
    if err["type"] == "missing":
        return "missing required field"
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "enum":
        return f"{msg} (got {err.get('input')!r})"
    return msg


def _semantic_errors(sc: Scenario) -> list[tuple[tuple[int | str, ...], str]]:
    """Cross-field problems pydantic cannot see: unknown utterances, tools, ids, check names."""
    from harnesslab.sim.tools import TOOLS

    errs: list[tuple[tuple[int | str, ...], str]] = []
    users, orders = sc.world.users, sc.world.orders
    if sc.session.user not in users:
        errs.append((("session", "user"), f"unknown user {sc.session.user!r}"))
    items = {item_name(i) for o in orders.values() for i in o.items}
    offered = sc.world.offered()
    for utt, it in sc.lexicon.items():
        if it.order is not None and it.order.startswith(ITEM) and \
                item_name(it.order[len(ITEM):]) not in items:
            errs.append((("lexicon", utt, "order"), f"no order holds the item "
                         f"{it.order[len(ITEM):]!r}; the world's items: "
                         f"{', '.join(sorted(items)) or 'none'}"))
        elif it.order is not None and not is_reference(it.order) and it.order != REF \
                and it.order not in orders:
            errs.append((("lexicon", utt, "order"), f"unknown order {it.order!r}"))
        needs = ACT_NEEDS[it.act]
        if needs is not None and needs[1] not in offered:
            errs.append((("lexicon", utt, "act"), f"act {it.act.value} needs the tool "
                         f"{needs[1]}, which the world does not offer (add it under world.tools)"))
        if it.user not in (None, REF) and it.user not in users:
            errs.append((("lexicon", utt, "user"), f"unknown user {it.user!r}"))
    kinds: dict[str, int] = {}
    for i, step in enumerate(sc.steps):
        if not isinstance(step, UserStep):
            continue
        if step.user not in sc.lexicon:
            errs.append((("steps", i, "user"), f"utterance {step.user!r} has no lexicon entry"))
        for field_name in ("called", "not_called"):
            for t in getattr(step.expect, field_name):
                if t not in TOOLS:
                    errs.append((("steps", i, "expect", field_name),
                                 f"unknown tool {t!r}; expected one of {', '.join(TOOLS)}"))
        for k in step.expect.kinds():
            kinds[k] = kinds.get(k, 0) + 1
    errs += session_errors(sc.steps, set(users), sc.session.id, UserStep)
    for where, files in [(("memory_files",), sc.memory_files)] + [
            (("variants", vi, "memory_files"), v.memory_files) for vi, v in enumerate(sc.variants)]:
        errs += [((*where, fi, "user"), f"unknown user {f.user!r}")
                 for fi, f in enumerate(files) if f.user not in users]
    for s in sc.steps:
        for k in step_checks(s):
            kinds[k] = kinds.get(k, 0) + 1
    ids = {f"s{i + 1}.{k}" for i, s in enumerate(sc.steps)
           for k in (s.expect.kinds() if isinstance(s, UserStep) else step_checks(s))}
    names: set[str] = set()
    for vi, v in enumerate(sc.variants):
        if v.name in names:
            errs.append((("variants", vi, "name"), f"duplicate variant {v.name!r}"))
        names.add(v.name)
        for fi, entry in enumerate(v.expect_fail):
            f = entry if isinstance(entry, str) else entry.check
            if f not in kinds and f not in ids:
                errs.append((("variants", vi, "expect_fail", fi)
                             + (() if isinstance(entry, str) else ("check",)),
                             f"no check {f!r} in this scenario; expected a kind "
                             f"({', '.join(sorted(kinds))}) or an id like s1.max_chars"))
        try:
            from harnesslab.scenario.settings import resolve_settings

            resolve_settings(sc, v)
        except InputError as e:
            errs.append((("variants", vi, "set") + ((e.field,) if e.field else ()),
                         f"in variant {v.name!r}: {e.problem}"))
    return errs


def load_scenario(path: str | Path, raw: bytes | None = None) -> Scenario:
    """Load and validate one scenario file (or ``raw``, its bytes, named by ``path``: a worker
    with no copy of the file); raises InputError (file:line: field: problem)."""
    p = Path(path)
    if raw is None:
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise InputError(f"not a UTF-8 text file (byte {e.start}); expected a YAML scenario",
                         file=str(p), line=line) from None
    if "\x00" in text:
        raise InputError("a binary file (it holds NUL bytes); expected a YAML scenario",
                         file=str(p), line=text[:text.index("\x00")].count("\n") + 1)
    try:
        node = yaml.compose(text)
        _no_duplicate_keys(node, str(p))
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"bad YAML: {problem}", file=str(p),
                         line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise InputError("a scenario file holds a mapping (id, title, world, ...)", file=str(p),
                         line=1)
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(x for i, x in enumerate(err["loc"]) if not _is_tag_position(err["loc"], i))
        raise InputError(_message(err), file=str(p), line=_node_line(node, loc),
                         field=_loc_text(loc) or None) from None
    errs = _semantic_errors(sc)
    if errs:
        loc, problem = errs[0]
        raise InputError(problem, file=str(p), line=_node_line(node, loc),
                         field=_loc_text(loc))
    return sc


def _no_duplicate_keys(node: yaml.Node | None, file: str, where: str = "") -> None:
    """YAML lets a later key silently replace an earlier one; in a scenario that hides a
    mistake (two lexicon entries for one utterance, two ``set`` keys), so it is an error."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            k = str(key.value)
            if k in seen:
                what = "duplicate lexicon entry" if where == "lexicon" else "duplicate key"
                raise InputError(f"{what} {k!r} (first at line {seen[k]})", file=file,
                                 line=key.start_mark.line + 1,
                                 field=f"{where}.{k}" if where else k)
            seen[k] = key.start_mark.line + 1
            _no_duplicate_keys(value, file, f"{where}.{k}" if where else k)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _no_duplicate_keys(item, file, f"{where}[{i}]")


_UNION_TAGS = {"steps": STEP_KEYS, "expect_fail": ("check", "rate")}


def _is_tag_position(loc: tuple[int | str, ...], idx: int) -> bool:
    """True when ``loc[idx]`` is the union tag pydantic inserts after a step or expect_fail
    index (by position: a step's tag and its field share a name, as ``instances``)."""
    return idx >= 2 and isinstance(loc[idx - 1], int) and \
        loc[idx] in _UNION_TAGS.get(str(loc[idx - 2]), ())


def scenario_paths(paths: list[str]) -> list[Path]:
    """Files, folders (all *.yaml inside, sorted) and bundled scenario ids (a name that is no
    file here, such as ``followup-o1001-zh``) as a flat list of scenario files."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        bundled = bundled_dir() / f"{raw}.yaml"
        if not p.exists() and "/" not in raw and bundled.is_file():
            p = bundled
        if p.is_dir():
            found = sorted(x for x in p.iterdir() if x.suffix in (".yaml", ".yml"))
            if not found:
                raise InputError("no scenario files (*.yaml) in this folder", file=str(p))
            out += found
        elif not p.exists():
            raise InputError("no such file or folder, nor a bundled scenario id", file=str(p))
        else:
            out.append(p)
    return out


def bundled_dir() -> Path:
    """The bundled suite: package data (``harnesslab/scenarios``; ``scenarios/`` at the top of
    a checkout links to it), so an installed package runs it outside a checkout."""
    return Path(__file__).resolve().parents[1] / "scenarios"


@functools.lru_cache(maxsize=64)
def planned_scenario(path: str, sha256: str, raw: bytes | None = None) -> Scenario:
    """A scenario file as planned (its sha256), loaded once per process; from ``raw`` (the
    planned bytes, shipped with the task) when the worker has no copy of the file."""
    import hashlib

    data = Path(path).read_bytes() if raw is None else raw
    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError("the scenario file changed since the sweep was planned", file=path)
    return load_scenario(path, data)
