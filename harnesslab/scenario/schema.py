"""Scenario files: the typed schema (also exported as JSON Schema by ``harnesslab schema``); the
YAML loader, which names the file, the line and the field of anything wrong, is ``loader``.

A scenario declares a world, the verified session, the lexicon (the only meaning the fake
model gets), the steps, and variants: named setting overrides with the checks expected to
fail under them (controls) — every other check is expected to pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harnesslab.scenario.memory_files import MemoryFile
from harnesslab.scenario.steps import (
    SESSION_KEYS,
    InstancesStep,
    KillStep,
    NewSessionStep,
    RestartStep,
    SwitchStep,
)
from harnesslab.sim.domain import USER, Domain
from harnesslab.sim.intents import (
    ID_PATTERNS,
    REF,
    Act,
    Claim,
    ClaimKind,
    Constraint,
    Intent,
    Slot,
    by_field,
    is_reference,
)
from harnesslab.sim.world import World, WorldSpec, parse_duration


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimSpec(_Strict):
    identity: str | None = Field(default=None, description="The user id the speaker claims to be")
    ownership: str | None = Field(default=None, description="The order id the speaker claims")

    @model_validator(mode="after")
    def _one(self) -> ClaimSpec:
        if (self.identity is None) == (self.ownership is None):
            raise ValueError("a claim states exactly one of identity or ownership")
        return self

    def to_claim(self) -> Claim:
        if self.identity is not None:
            return Claim(ClaimKind.IDENTITY, self.identity)
        assert self.ownership is not None
        return Claim(ClaimKind.OWNERSHIP, self.ownership)


def _slot_value(slot: Slot, v: str | None) -> str | None:
    if v is None or v == REF or ID_PATTERNS[slot].fullmatch(v):
        return v
    if slot is Slot.ORDER and is_reference(v) and by_field(v) is None:
        return v
    if slot is Slot.ORDER:
        raise ValueError(f"expected an id like O-1001, @ref, @first, @last or @item:<name>, "
                         f"got {v!r}")
    raise ValueError(f"expected @ref or an id like U-1, got {v!r}")


class IntentSpec(_Strict):
    """What an utterance means: the lexicon entry the fake model looks up verbatim."""

    act: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="What the utterance asks: a "
                     "generic act (ask, list, ask_policy, set_constraint, chitchat) or one the "
                     "domain declares (the bundled world's: order_status, ask_eta, ask_wait, "
                     "ask_trace, ask_ship_to, list_orders, ask_address, ask_phone)")
    order: str | None = Field(default=None, description="An order id, or a reference resolved "
                              "from the request: @ref (the latest visible order), @first / @last "
                              "(of the latest visible order list), @item:<name> (the order a "
                              "visible fact says holds that item)")
    user: str | None = Field(default=None, description="A user id or @ref")
    topic: str | None = Field(default=None, description="Knowledge-base topic (ask_policy)")
    constraints: list[Constraint] = Field(default_factory=list)
    claims: list[ClaimSpec] = Field(default_factory=list)
    entity: str | None = Field(default=None, description="A declared domain's acts (ask, list): "
                               "the entity type, e.g. ticket (user: the acting user's own)")
    id: str | None = Field(default=None, description="ask: the instance, an id or a reference "
                           "resolved from the request: @ref (default), @first / @last (of the "
                           "latest visible list), @<field>:<value> (the instance a visible "
                           "fact gives that value)")
    field: str | None = Field(default=None, description="ask: the field asked, e.g. status")

    @model_validator(mode="after")
    def _domain_act(self) -> IntentSpec:
        if self.act in (Act.ASK, Act.LIST):
            if self.entity is None:
                raise ValueError(f"act {self.act} names the entity type (entity)")
            if self.act == Act.ASK and self.field is None:
                raise ValueError("act ask names the field asked (field)")
            if self.act == Act.LIST and (self.id is not None or self.field is not None):
                raise ValueError("act list takes only entity (the acting user's are listed)")
            if self.order is not None:
                raise ValueError(f"act {self.act} takes entity and id, not order")
        elif self.entity is not None or self.field is not None:
            raise ValueError("entity and field are for the generic acts ask and list")
        return self

    @field_validator("order")
    @classmethod
    def _order(cls, v: str | None) -> str | None:
        return _slot_value(Slot.ORDER, v)

    @field_validator("user")
    @classmethod
    def _user(cls, v: str | None, info: ValidationInfo) -> str | None:
        if (info.context or {}).get("domain") and v is not None:
            return v  # a declared domain's user ids: checked against it (scenario.loader)
        return _slot_value(Slot.USER, v)

    def to_intent(self) -> Intent:
        # An ask names the instance discussed unless it says which; of the users, the acting
        # one (an omitted user_id).
        ident = self.id if self.id is not None or self.act != Act.ASK \
            or self.entity == "user" else REF
        # A generic act is its enum member (compared by identity); a domain's keeps its name.
        act: Act | str = Act(self.act) if self.act in Act._value2member_map_ else self.act
        return Intent(act, self.order, self.user, self.topic, tuple(self.constraints),
                      tuple(c.to_claim() for c in self.claims), self.entity, ident, self.field)


class Expect(_Strict):
    """Answer-level checks of one user turn (each key is one check, named ``s<step>.<key>``)."""

    answered: bool = Field(default=False, description="Check that the turn ends with an answer "
                           "(not a failure, overflow, clarifying question or could-not-check); "
                           "mentions, max/min_chars and not_called require an answer too")
    mentions: list[str] = Field(default_factory=list, description="Strings the answer contains")
    not_mentions: list[str] = Field(default_factory=list, description="Strings it must not")
    max_chars: int | None = Field(default=None, gt=0, description="Answer length at most")
    min_chars: int | None = Field(default=None, gt=0, description="Answer length at least")
    called: list[str] = Field(default_factory=list, description="Tools called in this turn")
    not_called: list[str] = Field(default_factory=list, description="Tools not called")
    fresh_fact: bool | None = Field(default=None, description="The fact the answer states is "
                                    "within its tool's max_age at answer time")
    resolves: dict[str, str] | None = Field(default=None, description="Fake model only: the "
                                            "referent each slot resolved to (order, user, or "
                                            "a declared domain's entity type)")
    no_leak: bool | None = Field(default=None, description="No other user's private data in the "
                                 "answer or in any request of this turn")
    request_contains: list[str] = Field(default_factory=list, description="Strings present in "
                                        "the turn's last request")
    states_now: bool | Literal["zone"] | None = Field(
        default=None, description="The request that answered the turn states the current time "
        "to the minute, in any form the fake model reads (docs/understanding.md), and any zone "
        "it names is the user's; \"zone\": stated in the user's zone too (its offset, a zone "
        "named beside it, or none: the scenario's)")
    notes_removed: bool | None = Field(default=None, description="The request that answered the "
                                       "turn tells the model that earlier messages were removed "
                                       "(a truncation notice, in any wording the bench reads: "
                                       "docs/understanding.md)")
    max_images: int | None = Field(default=None, ge=0, description="Images in any request of "
                                   "this turn, at most")
    min_images: int | None = Field(default=None, ge=0, description="Images in the turn's last "
                                   "request, at least (the newest kept, not only the oldest "
                                   "removed)")
    in_force: list[Constraint] | None = Field(default=None, description="Fake model only: "
                                              "constraints in force in the request that "
                                              "answered (what the model could see)")
    unable: Literal["not_found", "forbidden", "unavailable", "not_offered", "failed"] | None = \
        Field(default=None, description="Fake model only: the answer says it could not check, "
              "for this reason (a tool's error told apart, or no such tool offered)")

    reports_failure: bool | None = Field(
        default=None, description="What the harness tells its caller about the turn, read from "
        "its own report (the harness interface's TurnResult.failed, a program's reply "
        "`failed`, an exception it raised), never from the answer's text: true, it reports "
        "the turn failed (the service rejected the request, the iteration limit ran out "
        "without an answer) rather than returning an empty or canned answer as a success; "
        "false, it reports an answer")

    def kinds(self) -> list[str]:
        out = ["answered"] if self.answered else []
        for k in ("mentions", "not_mentions", "called", "not_called", "request_contains"):
            if getattr(self, k):
                out.append(k)
        for k in ("max_chars", "min_chars", "fresh_fact", "resolves", "no_leak", "states_now",
                  "notes_removed",
                  "max_images", "min_images", "in_force", "unable", "reports_failure"):
            if getattr(self, k) is not None:
                out.append(k)
        return out


# What a step that expects nothing holds: one frozen instance for all of them (a 5,000-turn
# scenario would otherwise hold 5,000 of a kilobyte each).
_NO_EXPECT = Expect()


class UserStep(_Strict):
    user: str = Field(description="The user's utterance, verbatim (must be in the lexicon)")
    images: int = Field(default=0, ge=0, description="Images attached to the message")
    expect: Expect = Field(default_factory=lambda: _NO_EXPECT)

    @field_validator("expect")
    @classmethod
    def _shared(cls, v: Expect) -> Expect:
        return _NO_EXPECT if not v.model_fields_set else v


class AdvanceStep(_Strict):
    advance: str = Field(description="Move the clock, e.g. 1d, 6h, 30m")

    @field_validator("advance")
    @classmethod
    def _d(cls, v: str) -> str:
        parse_duration(v)
        return v


class FillerSpec(_Strict):
    times_trigger: float | None = Field(default=None, gt=0, le=50, description="Filler size as "
                                        "a multiple of trigger_ratio x context_size, in the "
                                        "harness's estimator")
    fill_to: float | None = Field(default=None, gt=0, lt=1, description="Instead: add filler "
                                  "until the whole context's estimate reaches this fraction of "
                                  "the trigger, staying below it (an exchange too large for "
                                  "the room left is passed over for the next ones; no "
                                  "compaction during filler)")
    locale: Literal["zh", "en"] | None = Field(default=None, description="Default: the "
                                               "scenario's locale")

    @model_validator(mode="after")
    def _one(self) -> FillerSpec:
        if (self.times_trigger is None) == (self.fill_to is None):
            raise ValueError("a filler states exactly one of times_trigger or fill_to")
        return self


_FILLERS: dict[tuple[Any, ...], FillerSpec] = {}  # one instance per spec, as _NO_EXPECT


class FillerStep(_Strict):
    filler: FillerSpec

    @field_validator("filler")
    @classmethod
    def _shared(cls, v: FillerSpec) -> FillerSpec:
        key = (v.times_trigger, v.fill_to, v.locale, frozenset(v.model_fields_set))
        return _FILLERS.setdefault(key, v) if len(_FILLERS) < 1024 else v


STEP_KEYS = ("user", "advance", "filler", *SESSION_KEYS)


def _step_kind(v: Any) -> str | None:
    if isinstance(v, dict):
        for k in STEP_KEYS:
            if k in v:
                return k
        return None
    for k in STEP_KEYS:
        if hasattr(v, k):
            return k
    return None


Step = Annotated[
    Annotated[UserStep, Tag("user")] | Annotated[AdvanceStep, Tag("advance")]
    | Annotated[FillerStep, Tag("filler")] | Annotated[RestartStep, Tag("restart")]
    | Annotated[NewSessionStep, Tag("new_session")] | Annotated[SwitchStep, Tag("switch")]
    | Annotated[InstancesStep, Tag("instances")] | Annotated[KillStep, Tag("kill")],
    Discriminator(_step_kind, custom_error_type="step_kind",
                  custom_error_message="a step needs one of the keys " + ", ".join(STEP_KEYS)),
]


class SummarizerSpec(_Strict):
    profile: Literal["faithful", "lossy", "failing"] = "faithful"
    drop: dict[Literal["constraint", "fact", "claim", "goal", "entity"], float] = \
        Field(default_factory=dict)
    paraphrase: float = 0.0
    swap: float = 0.0
    refuse: float | None = None
    keep_superseded: float | None = None
    promote_claims: float | None = None
    json_form: Literal["strict", "trailing_comma", "code_fence", "raw_newlines"] | None = None


class ModelSpec(_Strict):
    summarizer: SummarizerSpec = Field(default_factory=SummarizerSpec)
    phrases: dict[Constraint, list[str]] = Field(default_factory=dict, description="Extra "
                                                 "constraint phrases the fake model recognises")


class SessionSpec(_Strict):
    user: str = Field(description="The verified user of the session")
    id: str = Field(default="S-1", description="Session id")


class FailRate(_Strict):
    """A check expected to fail in at least ``at_least`` of ``of`` seeds: for a control whose
    failure depends on the seed. In a single run either outcome is as expected; across n seeds
    (``needed``) it must fail often enough that the expectation still holds: up to ``of``
    seeds, in at least at_least - (of - n) of them (the rest could still fail), so one seed of
    "3 of 5" proves nothing either way; beyond, in the same fraction, rounded up."""

    check: str = Field(description="A check kind or id (s<step>.<kind>)")
    at_least: int = Field(ge=1, description="Seeds in which it fails, at least ...")
    of: int = Field(ge=1, description="... out of this many")

    @model_validator(mode="after")
    def _fraction(self) -> FailRate:
        if self.at_least > self.of:
            raise ValueError("at_least cannot exceed of")
        return self

    def needed(self, seeds: int) -> int:
        """Failures needed over ``seeds`` runs."""
        if seeds <= self.of:
            return max(0, self.at_least - (self.of - seeds))
        return -(-seeds * self.at_least // self.of)


def _fail_kind(v: Any) -> str:
    return "check" if isinstance(v, str) else "rate"


# A check id or kind (fails in every seed), or a FailRate; tagged so that a bad mapping is
# reported against FailRate's fields rather than as "not a string".
FailEntry = Annotated[Annotated[str, Tag("check")] | Annotated[FailRate, Tag("rate")],
                      Discriminator(_fail_kind)]


# The extras a variant may require (pyproject's optional dependencies a run can need), and
# the module whose import says the extra is installed.
EXTRAS: dict[str, str] = {"agentscope": "agentscope"}
Extra = Literal["agentscope"]


def missing_extras(names: Sequence[str]) -> list[str]:
    """The extras of ``names`` whose module this interpreter cannot import."""
    from importlib.util import find_spec

    return [n for n in names if find_spec(EXTRAS[n]) is None]


def skip_reason(missing: list[str]) -> str:
    """The one line a skipped variant reports: what it needs and how to install it."""
    extras = ",".join(missing)
    return (f"requires the {' and '.join(missing)} extra{'s' if len(missing) > 1 else ''}, "
            f"not installed: pip install 'harnesslab[{extras}]'")


class Variant(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    set: dict[str, Any] = Field(default_factory=dict, description="Setting overrides: harness "
                                "fields (harness, strategy, context_size, "
                                "codex.auto_compact_limit, ...), service / service.<field>, "
                                "summarizer / extractor (.<field>); they win over the command "
                                "line")
    expect_fail: list[FailEntry] = Field(
        default_factory=list, description="Check kinds (at least one such check fails) or check "
        "ids s<step>.<kind> (that check fails), in every seed; or {check, at_least, of}: fails "
        "in at least that fraction of the seeds; every other check must pass")
    expect: Literal["pass"] | None = Field(default=None, description="'pass': every check is "
                                           "expected to pass (the default when expect_fail is "
                                           "empty)")
    role: Literal["baseline", "control", "fix"] | None = Field(
        default=None, description="What the variant shows: a control (its checks must fail), "
        "a fix (the setting that repairs a control's failure), or a baseline; null: control "
        "when expect_fail is set, else baseline")
    world_alone: bool = Field(
        default=False, description="The variant's world settings (summarizer, extractor, "
        "service, world.tools) alone make its point: it applies to a harness that honours none "
        "of its harness settings, which then serve the reference harness only (a lossy summary "
        "with strategy: structured applies to any harness that summarises). A summarizer or "
        "extractor it sets that the harness never asked to act leaves the run not applicable")
    requires: list[Extra] = Field(default_factory=list, description="Optional extras of "
                                  "harnesslab the variant needs (prompts: agentscope reads "
                                  "AgentScope's texts from its package): where one is not "
                                  "installed the variant is skipped, with the reason and the "
                                  "pip install that adds it, never passed nor failed")
    memory_files: list[MemoryFile] = Field(
        default_factory=list, description="Files placed in the memory folders after the "
        "scenario's (one at the same user and path replaces the scenario's)")

    @model_validator(mode="after")
    def _consistent(self) -> Variant:
        if self.expect == "pass" and self.expect_fail:
            raise ValueError("expect: pass contradicts a non-empty expect_fail")
        if self.role == "control" and not self.expect_fail:
            raise ValueError("a control names the checks expected to fail (expect_fail)")
        return self

    @property
    def kind(self) -> str:
        return self.role or ("control" if self.expect_fail else "baseline")

    @property
    def fail_always(self) -> list[str]:
        """The checks expected to fail in every seed."""
        return [f for f in self.expect_fail if isinstance(f, str)]

    @property
    def fail_rates(self) -> list[FailRate]:
        """The checks expected to fail in a fraction of the seeds."""
        return [f for f in self.expect_fail if isinstance(f, FailRate)]


class Scenario(_Strict):
    """One scripted conversation with its world, lexicon, steps and variants."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    locale: Literal["zh", "en"]
    tags: list[str] = Field(default_factory=list)
    domain: str | None = Field(default=None, description="A declared domain: a domain file's "
                               "path relative to this file (e.g. helpdesk.domain.yaml) or a "
                               "bundled domain's name; none: the bundled e-commerce world "
                               "(orders, users, logistics)")
    world: WorldSpec
    session: SessionSpec
    service: str | dict[str, Any] = Field(default="openai-128k", description="A service "
                                          "profile name, or {profile: name, <field>: value}")
    harness: dict[str, Any] = Field(default_factory=dict, description="Harness settings for "
                                    "every variant of this scenario")
    model: ModelSpec = Field(default_factory=ModelSpec)
    lexicon: dict[str, IntentSpec]
    steps: list[Step] = Field(min_length=1)
    variants: list[Variant] = Field(min_length=1)
    cost: dict[Literal["true_input_tokens", "overflows", "summary_tokens"],
               Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="The costs this scenario is sensitive to, each with "
        "its relative margin (0.01 = 1%): a harness whose cost on a run exceeds the reference "
        "harness's on the same variant and seed by more than the margin is worse, whatever its "
        "answers (harnesslab bugs and the mutation report count it as a kill)")
    memory_files: list[MemoryFile] = Field(
        default_factory=list, description="Files and folders placed in users' memory folders "
        "before the first step, as a deployment's memory workspace holds them from earlier "
        "weeks (the reference harness's per-user folder of workspace notes and MEMORY.md; a "
        "harness without such a folder: not applicable)")

    # The compiled domain (sim.domain.Domain), set by the loader from the domain file.
    _domain: Domain | None = PrivateAttr(default=None)

    def intents(self) -> dict[str, Intent]:
        return {k: v.to_intent() for k, v in self.lexicon.items()}

    @property
    def compiled_domain(self) -> Domain | None:
        """The declared domain (None: the bundled e-commerce world)."""
        if self.domain is not None and self._domain is None:
            raise ValueError(f"scenario {self.id}: its domain {self.domain!r} was not loaded "
                             f"(load the file with harnesslab.load_scenario)")
        return self._domain

    def with_domain(self, domain: Domain) -> Scenario:
        """This scenario with its declared domain compiled (the loader's)."""
        out = self.model_copy()
        out._domain = domain
        return out

    def make_world(self, tools: Mapping[str, Mapping[str, Any]] | None = None) -> World:
        """The running world of a run: the scenario's, with a variant's per-tool settings."""
        domain = self.compiled_domain
        spec = self.world.with_tools(tools or {}, domain=domain is not None)
        return World(spec, domain=domain)

    def users(self) -> list[str]:
        """Every user id of the world (the domain's and the scenario's, with a domain)."""
        domain = self.compiled_domain
        if domain is None:
            return list(self.world.users)
        return list(dict.fromkeys([*domain.spec.data.get(USER, {}),
                                   *self.world.data.get(USER, {})]))
