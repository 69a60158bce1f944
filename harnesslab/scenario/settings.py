"""Setting overrides (a scenario's ``harness``, a variant's ``set``, the CLI's ``--set``)
resolved into the harness config, the service profile and the fake model's summarizer.

Keys: any harness field (``harness``, ``strategy``, ``context_size``,
``codex.auto_compact_limit``, ...); ``memory`` (a mode name or a mapping) and
``memory.<field>`` (``memory.top_k``, ``memory.key``, ...); ``service`` (a profile name or a mapping) and
``service.<field>``; ``summarizer`` / ``extractor`` (mappings: how faithfully the fake model
summarizes, and answers a pin or memory extraction) and their ``.<field>``; ``world.tools.<tool>`` (the
world's spec of that tool, replaced whole: max_age, failures); ``model`` (``fake``, the default,
or ``openai-compatible``: a real model, ``bench.real_model``) and ``model.<field>``;
``filler_base`` (tokens: what a ``times_trigger`` filler multiplies instead of trigger_ratio x
context_size; a sweep sets it once for its grid, ``harnesslab.sweep.plan``).

Layers, later wins: the defaults, the scenario's own settings, the command line (or a sweep
cell), then the variant's ``set``: a variant keeps what defines it whatever the command line
says, so a control stays a control.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harnesslab.adapters.real_model import ModelSpec, model_layer
from harnesslab.errors import InputError
from harnesslab.harness.config import HarnessConfig
from harnesslab.sim.service import PROFILES, ServiceProfile, get_profile

if TYPE_CHECKING:
    from harnesslab.scenario.schema import Scenario, Variant


@dataclass(frozen=True)
class Settings:
    harness: HarnessConfig
    service: ServiceProfile
    summarizer: dict[str, Any]
    extractor: dict[str, Any]
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # world tool spec overrides
    model: ModelSpec = field(default_factory=ModelSpec)  # which model answers
    # What a times_trigger filler multiplies, in tokens: a sweep sets it once for its grid so
    # that every cell runs the same conversation; None: trigger_ratio x context_size.
    filler_base: float | None = None


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
    nested: dict[str, dict[str, Any]] = {"codex": {}, "memory": {}}
    service: dict[str, Any] = {"profile": "openai-128k"}
    models: dict[str, dict[str, Any]] = {"summarizer": {}, "extractor": {}}
    tools: dict[str, dict[str, Any]] = {}
    model: dict[str, Any] = {}
    filler_base: float | None = None
    for layer in overrides:
        for key, value in layer.items():
            if key == "filler_base":
                if value is not None and (isinstance(value, bool) or not isinstance(
                        value, int | float) or value <= 0):
                    raise InputError("expected a positive number of tokens, or null", field=key)
                filler_base = None if value is None else float(value)
            elif key == "service":
                if isinstance(value, str):
                    # Another profile; field overrides from earlier layers (a scenario's small
                    # window) still hold.
                    service["profile"] = value
                elif isinstance(value, Mapping):
                    service = {"profile": service["profile"], **value}
                else:
                    raise InputError("expected a profile name or a mapping", field=key)
            elif key.startswith("service."):
                service[key.split(".", 1)[1]] = value
            elif key in models:
                if not isinstance(value, Mapping):
                    raise InputError("expected a mapping (profile, drop, swap, ...)", field=key)
                models[key] = dict(value)
            elif key.split(".", 1)[0] in models and "." in key:
                head, sub = key.split(".", 1)
                models[head][sub] = value
            elif key == "world.tools" or key.startswith("world.tools."):
                # The world's tools, replaced whole per tool: "world.tools.track_order:
                # {failures: [...]}" (a tool that fails longer), or "world.tools: {name: {...}}".
                # (The harness's own "tools" setting is which tools it offers the model.)
                value = {key.split(".", 2)[2]: value} if key.count(".") >= 2 else value
                if not isinstance(value, Mapping) or not all(isinstance(v, Mapping)
                                                              for v in value.values()):
                    raise InputError("expected a mapping per tool (max_age, failures)", field=key)
                tools.update({str(k): dict(v) for k, v in value.items()})
            elif key == "model" or key.startswith("model."):
                model_layer(key, value, model)
            elif key == "memory" and isinstance(value, str):
                nested["memory"]["mode"] = value  # "memory: vector", the mode alone
            elif key in nested:
                if not isinstance(value, Mapping):
                    raise InputError("expected a memory mode name or a mapping" if key ==
                                     "memory" else "expected a mapping", field=key)
                nested[key].update(value)
            elif key.split(".", 1)[0] in nested and "." in key:
                head, sub = key.split(".", 1)
                nested[head][sub] = value
            elif key in HarnessConfig.model_fields:
                harness[key] = value
            else:
                raise InputError(
                    "unknown setting; expected a harness field ("
                    + ", ".join(f for f in HarnessConfig.model_fields
                                if f not in ("codex", "memory"))
                    + "), codex.<field>, memory[.<field>], service[.<field>], filler_base, "
                    "summarizer[.<field>], "
                    "extractor[.<field>], world.tools.<tool> or model[.<field>]", field=key)
    try:
        cfg = HarnessConfig.model_validate({**harness, **nested})
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
    from harnesslab.harness.honours import honours_of
    from harnesslab.harnesses.registry import harness_label, load_harness
    from harnesslab.sim.model import SummarizerProfile

    chosen = load_harness(cfg.harness)  # a bad choice fails here, before anything runs
    try:
        honours_of(chosen, harness_label(cfg.harness))  # and so does a misspelt declaration
    except ValueError as e:
        raise InputError(str(e), field="harness") from None
    for name, spec in models.items():
        try:
            SummarizerProfile.model_validate(spec)
        except ValidationError as e:
            raise _first_error(e, f"{name}.") from None
    from harnesslab.sim.tools import TOOLS
    from harnesslab.sim.world import ToolSpec

    for name, spec in tools.items():
        if name not in TOOLS:
            raise InputError(f"unknown tool {name!r}; expected one of {', '.join(TOOLS)}",
                             field=f"world.tools.{name}")
        try:
            ToolSpec.model_validate(spec)
        except ValidationError as e:
            raise _first_error(e, f"world.tools.{name}.") from None
    try:
        answering = ModelSpec.model_validate(model)
    except ValidationError as e:
        raise _first_error(e, "model.") from None
    return Settings(cfg, profile, models["summarizer"], models["extractor"], tools, answering,
                    filler_base)


def scenario_layers(sc: Scenario) -> list[Mapping[str, Any]]:
    from harnesslab.scenario.steps import needs_workdir

    base: dict[str, Any] = {"service": sc.service}
    if needs_workdir(sc.steps):
        base["persist"] = True  # instances that restart or alternate need the harness's store
    if sc.model.summarizer != type(sc.model.summarizer)():
        base["summarizer"] = sc.model.summarizer.model_dump(exclude_none=True)
    return [base, sc.harness]


def resolve_settings(sc: Scenario, variant: Variant,
                     cli: Mapping[str, Any] | None = None) -> Settings:
    """The module docstring's layers: defaults, scenario, command line, variant."""
    return resolve([*scenario_layers(sc), cli or {}, variant.set])


def overridden(variant: Variant, cli: Mapping[str, Any] | None) -> list[str]:
    """The command-line keys that ``variant`` sets itself (its value wins)."""
    if not cli:
        return []
    mine = set(variant.set)
    return sorted(k for k in cli if k in mine or k.split(".", 1)[0] in mine
                  or any(m.split(".", 1)[0] == k for m in mine))
