"""Setting overrides (a scenario's ``harness``, a variant's ``set``, the CLI's ``--set``)
resolved into the harness config, the service profile and the fake model's summarizer.

Keys: any harness field (``strategy``, ``context_size``, ``codex.auto_compact_limit``, ...);
``service`` (a profile name or a mapping) and ``service.<field>``; ``summarizer`` (a mapping)
and ``summarizer.<field>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harnesslab.errors import InputError
from harnesslab.harness.config import HarnessConfig
from harnesslab.sim.service import PROFILES, ServiceProfile, get_profile

if TYPE_CHECKING:
    from harnesslab.bench.scenario import Scenario, Variant


@dataclass(frozen=True)
class Settings:
    harness: HarnessConfig
    service: ServiceProfile
    summarizer: dict[str, Any]


def _first_error(e: ValidationError, prefix: str = "") -> InputError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown setting"
    return InputError(msg, field=(prefix + loc) if loc else prefix.rstrip(".") or None)


def parse_value(raw: str) -> Any:
    """A CLI value: YAML scalars and flow collections (8192, true, null, {profile: lossy})."""
    import yaml

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def resolve(overrides: list[Mapping[str, Any]]) -> Settings:
    """Apply override mappings in order (later wins) onto the defaults."""
    harness: dict[str, Any] = {}
    codex: dict[str, Any] = {}
    service: dict[str, Any] = {"profile": "openai-128k"}
    summarizer: dict[str, Any] = {}
    for layer in overrides:
        for key, value in layer.items():
            if key == "service":
                if isinstance(value, str):
                    service = {"profile": value}
                elif isinstance(value, Mapping):
                    service = {"profile": service["profile"], **value}
                else:
                    raise InputError("expected a profile name or a mapping", field=key)
            elif key.startswith("service."):
                service[key.split(".", 1)[1]] = value
            elif key == "summarizer":
                if not isinstance(value, Mapping):
                    raise InputError("expected a mapping (profile, drop, swap, ...)", field=key)
                summarizer = dict(value)
            elif key.startswith("summarizer."):
                summarizer[key.split(".", 1)[1]] = value
            elif key == "codex":
                if not isinstance(value, Mapping):
                    raise InputError("expected a mapping", field=key)
                codex.update(value)
            elif key.startswith("codex."):
                codex[key.split(".", 1)[1]] = value
            elif key in HarnessConfig.model_fields:
                harness[key] = value
            else:
                raise InputError(
                    "unknown setting; expected a harness field ("
                    + ", ".join(f for f in HarnessConfig.model_fields if f != "codex")
                    + "), codex.<field>, service[.<field>] or summarizer[.<field>]", field=key)
    try:
        cfg = HarnessConfig.model_validate({**harness, "codex": codex})
    except ValidationError as e:
        raise _first_error(e) from None
    name = service.pop("profile")
    if not isinstance(name, str) or name not in PROFILES:
        raise InputError(f"unknown service profile {name!r}; expected one of: "
                         f"{', '.join(PROFILES)}", field="service")
    try:
        profile = get_profile(name).with_overrides(**service) if service else get_profile(name)
    except ValidationError as e:
        raise _first_error(e, "service.") from None
    from harnesslab.sim.model import SummarizerProfile

    try:
        SummarizerProfile.model_validate(summarizer)
    except ValidationError as e:
        raise _first_error(e, "summarizer.") from None
    return Settings(cfg, profile, summarizer)


def scenario_layers(sc: Scenario) -> list[Mapping[str, Any]]:
    base: dict[str, Any] = {"service": sc.service}
    if sc.model.summarizer != type(sc.model.summarizer)():
        base["summarizer"] = sc.model.summarizer.model_dump(exclude_none=True)
    return [base, sc.harness]


def resolve_settings(sc: Scenario, variant: Variant,
                     cli: Mapping[str, Any] | None = None) -> Settings:
    return resolve([*scenario_layers(sc), variant.set, cli or {}])
