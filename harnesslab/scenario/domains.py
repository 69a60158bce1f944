"""Loading domain files (``*.domain.yaml``, ``harnesslab.sim.domain``): a path beside the
scenario that names it, or a bundled domain's name; one line naming the file, line and field
of anything wrong."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from pydantic import ValidationError

from harnesslab.errors import InputError
from harnesslab.scenario.yamlfile import loc_text, node_line, read_yaml, validation_message
from harnesslab.sim.domain import Domain, DomainFile, compile_domain

__all__ = ["DOMAIN_SUFFIX", "bundled_domains", "domain_path", "load_domain"]

DOMAIN_SUFFIX = ".domain.yaml"


def bundled_domains_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "domains"


def bundled_domains() -> list[str]:
    """The names of the bundled domains."""
    return sorted(p.name[:-len(DOMAIN_SUFFIX)] for p in bundled_domains_dir().glob(
        "*" + DOMAIN_SUFFIX))


def domain_path(name: str, scenario: Path | None) -> Path:
    """Where the domain a scenario names lives: a path relative to the scenario's folder, else
    a bundled domain of that name."""
    if scenario is not None:
        beside = scenario.parent / name
        if beside.is_file():
            return beside
    bundled = bundled_domains_dir() / f"{name}{DOMAIN_SUFFIX}"
    if "/" not in name and bundled.is_file():
        return bundled
    raise InputError(f"no domain file {name!r} beside the scenario, nor a bundled domain "
                     f"({', '.join(bundled_domains()) or 'none'})")


def load_domain(path: str | Path, raw: bytes | None = None) -> Domain:
    """Load, validate and compile one domain file (or ``raw``, its bytes, named by ``path``:
    a worker with no copy of the file); raises InputError (file:line: field: problem)."""
    p = Path(path)
    if raw is None:
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=str(p)) from None
    return _load(str(p), hashlib.sha256(raw).hexdigest(), raw)


@functools.lru_cache(maxsize=32)
def _load(path: str, sha256: str, raw: bytes) -> Domain:
    p = Path(path)
    node, data = read_yaml(p, raw, "a YAML domain file")
    if not isinstance(data, dict):
        raise InputError("a domain file holds a mapping (name, user, entities, tools, data)",
                         file=path, line=1)
    try:
        spec = DomainFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        raise InputError(validation_message(err), file=path, line=node_line(node, loc),
                         field=loc_text(loc) or None) from None
    problems = spec.problems()
    if problems:
        loc, problem = problems[0]
        raise InputError(problem, file=path, line=node_line(node, loc), field=loc_text(loc))
    return compile_domain(spec, path, sha256)
