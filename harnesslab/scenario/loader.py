"""Loading scenario files: YAML with line numbers, the semantic checks a schema cannot
express, and one line naming the file, line and field of anything wrong.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import (
    ValidationError,
)

from harnesslab.errors import InputError
from harnesslab.scenario.domains import DOMAIN_SUFFIX, domain_path, load_domain
from harnesslab.scenario.schema import STEP_KEYS, Scenario, UserStep
from harnesslab.scenario.steps import (
    session_errors,
    step_checks,
)
from harnesslab.scenario.yamlfile import loc_text, node_line, read_yaml, validation_message
from harnesslab.sim.domain import USER, Domain, bundled_domain
from harnesslab.sim.intents import (
    ITEM,
    REF,
    Act,
    by_field,
    is_reference,
)
from harnesslab.sim.reading import item_name
from harnesslab.sim.world import World

Errs = list[tuple[tuple[int | str, ...], str]]


def _world_errors(sc: Scenario) -> tuple[Errs, set[str], tuple[str, ...]]:
    """The bundled world's (its short form: world.users, world.orders): its session, the
    orders and items the lexicon names, then the lexicon as any domain's."""
    d = bundled_domain("commerce")
    errs: Errs = []
    users, orders = sc.world.users, sc.world.orders
    if sc.session.user not in users:
        errs.append((("session", "user"), f"unknown user {sc.session.user!r}"))
    items = {item_name(i) for o in orders.values() for i in o.items}
    for utt, it in sc.lexicon.items():
        if it.order is not None and it.order.startswith(ITEM) and \
                item_name(it.order[len(ITEM):]) not in items:
            errs.append((("lexicon", utt, "order"), f"no order holds the item "
                         f"{it.order[len(ITEM):]!r}; the world's items: "
                         f"{', '.join(sorted(items)) or 'none'}"))
        elif it.order is not None and not is_reference(it.order) and it.order != REF \
                and it.order not in orders:
            errs.append((("lexicon", utt, "order"), f"unknown order {it.order!r}"))
    if sc.world.data:
        errs.append((("world", "data"), "data is for a declared domain's instances (name the "
                     "domain with domain:); the bundled world declares users and orders"))
    world = sc.make_world()
    errs += _lexicon_errors(sc, d, world, set(users))
    return errs, set(users), tuple(d.spec.tools)


# The acts every domain has; a domain file may declare more (acts:).
_GENERIC_ACTS = (Act.ASK, Act.LIST, Act.ASK_POLICY, Act.SET_CONSTRAINT, Act.CHITCHAT)


def _domain_errors(sc: Scenario, d: Domain) -> tuple[Errs, set[str], tuple[str, ...]]:
    """A declared domain's: the scenario's data, tools, lexicon and resolves checked against
    what the domain file declares; its users and its tools."""
    errs: Errs = [(loc, why) for loc, why in d.spec.problems(sc.world.data, ("world", "data"))]
    for short in ("users", "orders"):
        if getattr(sc.world, short) and d.name != "commerce":
            errs.append((("world", short), f"{short} is the bundled world's short form; a "
                         f"declared domain's instances go under world.data"))
    world = sc.make_world() if not errs else None
    users = set(sc.users())
    if sc.session.user not in users:
        errs.append((("session", "user"), f"unknown user {sc.session.user!r}; the domain's: "
                     f"{', '.join(sorted(users)) or 'none'}"))
    tools = tuple(d.spec.tools)
    for name in sc.world.tools:
        if name not in d.spec.tools:
            errs.append((("world", "tools", name), f"unknown tool {name!r}; the domain's: "
                         f"{', '.join(tools)}"))
    return errs + _lexicon_errors(sc, d, world, users), users, tools


def _lexicon_errors(sc: Scenario, d: Domain, world: World | None, users: set[str]) -> Errs:
    """The lexicon and the resolves checks against the domain: acts it has, types, fields and
    instances it declares, the tools each act needs offered."""
    errs: Errs = []
    offered = world.offered() if world is not None else tuple(d.spec.tools)
    for utt, it in sc.lexicon.items():
        at = ("lexicon", utt)
        act = d.spec.acts.get(str(it.act))
        if act is None and it.act not in _GENERIC_ACTS:
            errs.append(((*at, "act"), f"unknown act {str(it.act)!r}; the domain's: "
                         f"{', '.join([*(str(a) for a in _GENERIC_ACTS), *d.spec.acts])}"))
            continue
        if it.user not in (None, REF) and it.user not in users:
            errs.append(((*at, "user"), f"unknown user {it.user!r}"))
        need: str | None = None
        if act is not None:
            need = act.tool
        elif it.act is Act.ASK_POLICY:
            need = d.kb_tool()
            if need is None:
                errs.append(((*at, "act"), "the domain declares no knowledge-base tool (kb: true)"))
        elif it.act in (Act.ASK, Act.LIST):
            etype = it.entity or ""
            if etype not in d.types:
                errs.append(((*at, "entity"), f"unknown entity type {etype!r}; the domain's: "
                             f"{', '.join(d.types)}"))
                continue
            if it.act is Act.LIST:
                need = d.lister(etype)
                if need is None:
                    errs.append(((*at, "entity"), f"no tool of the domain lists {etype} "
                                 f"(lists: {etype})"))
            else:
                errs += _ask_errors(it.id, it.field or "", etype, d, world, at)
                need = d.reader(etype, it.field or "")
        if need is not None and need not in offered:
            errs.append(((*at, "act"), f"act {it.act} needs the tool {need}, which the "
                         f"world does not offer (add it under world.tools)"))
    for i, step in enumerate(sc.steps):
        resolves = step.expect.resolves if isinstance(step, UserStep) else None
        for k in resolves or {}:
            if k not in d.types:
                errs.append((("steps", i, "expect", "resolves", k), f"unknown entity type "
                             f"{k!r}; the domain's: {', '.join(d.types)}"))
    return errs


def _ask_errors(ident: str | None, field: str, etype: str, d: Domain, world: World | None,
                at: tuple[str, ...]) -> Errs:
    spec = d.types[etype]
    if field not in spec.fields:
        return [((*at, "field"), f"{etype} has no field {field!r}; its fields: "
                 f"{', '.join(spec.fields) or 'none'}")]
    errs: Errs = []
    if d.reader(etype, field) is None:
        errs.append(((*at, "field"), f"no tool of the domain reads {etype} and returns {field} "
                     f"(reads: {etype}, returns: [{field}])"))
    ref = by_field(ident) if ident is not None else None
    if ref is not None and ref[0] not in spec.fields:
        errs.append(((*at, "id"), f"{etype} has no field {ref[0]!r} to find it by"))
    elif ident is not None and not is_reference(ident) and ident != REF and etype != USER \
            and world is not None and ident not in world.data.get(etype, {}):
        errs.append(((*at, "id"), f"unknown {etype} {ident!r}"))
    return errs


def _semantic_errors(sc: Scenario) -> Errs:
    """Cross-field problems pydantic cannot see: unknown utterances, tools, ids, check names."""
    domain = sc.compiled_domain
    errs, users, tools = _world_errors(sc) if domain is None else _domain_errors(sc, domain)
    kinds: dict[str, int] = {}
    for i, step in enumerate(sc.steps):
        if not isinstance(step, UserStep):
            continue
        if step.user not in sc.lexicon:
            errs.append((("steps", i, "user"), f"utterance {step.user!r} has no lexicon entry"))
        for field_name in ("called", "not_called"):
            for t in getattr(step.expect, field_name):
                if t not in tools:
                    errs.append((("steps", i, "expect", field_name),
                                 f"unknown tool {t!r}; expected one of {', '.join(tools)}"))
        for k in step.expect.kinds():
            kinds[k] = kinds.get(k, 0) + 1
    errs += session_errors(sc.steps, users, sc.session.id, UserStep)
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


def load_scenario(path: str | Path, raw: bytes | None = None,
                  domain_raw: tuple[str, bytes] | None = None) -> Scenario:
    """Load and validate one scenario file (or ``raw``, its bytes, named by ``path``: a worker
    with no copy of the file; ``domain_raw``: its domain file's path and bytes, likewise);
    raises InputError (file:line: field: problem)."""
    p = Path(path)
    node, data = read_yaml(p, raw, "a YAML scenario")
    if not isinstance(data, dict):
        raise InputError("a scenario file holds a mapping (id, title, world, ...)", file=str(p),
                         line=1)
    domain = None
    if isinstance(data.get("domain"), str):
        try:
            domain = load_domain(*domain_raw) if domain_raw is not None else \
                load_domain(domain_path(data["domain"], p))
        except InputError as e:
            if e.file is not None:  # the domain file's own problem, named in it
                raise
            raise InputError(e.problem, file=str(p), line=node_line(node, ("domain",)),
                             field="domain") from None
    try:
        sc = Scenario.model_validate(data, context={"domain": domain is not None})
        if domain is not None:
            sc = sc.with_domain(domain)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(x for i, x in enumerate(err["loc"]) if not _is_tag_position(err["loc"], i))
        raise InputError(validation_message(err), file=str(p), line=node_line(node, loc),
                         field=loc_text(loc) or None) from None
    errs = _semantic_errors(sc)
    if errs:
        loc, problem = errs[0]
        raise InputError(problem, file=str(p), line=node_line(node, loc),
                         field=loc_text(loc))
    return sc


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
            # A domain file beside its scenarios is no scenario.
            found = sorted(x for x in p.iterdir() if x.suffix in (".yaml", ".yml")
                           and not x.name.endswith(DOMAIN_SUFFIX))
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
def planned_scenario(path: str, sha256: str, raw: bytes | None = None,
                     domain_sha256: str | None = None,
                     domain_raw: tuple[str, bytes] | None = None) -> Scenario:
    """A scenario file as planned (its sha256, and its domain file's), loaded once per
    process; from ``raw`` and ``domain_raw`` (the planned bytes, shipped with the task) when
    the worker has no copy of the files."""
    import hashlib

    data = Path(path).read_bytes() if raw is None else raw
    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError("the scenario file changed since the sweep was planned", file=path)
    sc = load_scenario(path, data, domain_raw)
    domain = sc.compiled_domain
    if domain is not None and domain.sha256 != domain_sha256:
        raise InputError("the domain file changed since the sweep was planned",
                         file=domain.path)
    return sc
