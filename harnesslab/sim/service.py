"""The simulated model service: the true limits of a deployed model and the tokens it bills.

A harness's ``context_size`` is a belief; the service profile is the fact. The service renders
a request into billed input tokens with one documented formula per profile (below), and
rejects a request whose input or planned output crosses a limit, as a real API answers 400.

Billed input tokens (``ServiceRule``), with ``T(s)`` the profile tokenizer's count of ``s``
(each string encoded on its own, no special tokens)::

    per_request
    + [system]  per_message + T("system") + T(system_prompt)
    + [summary] per_message + T("user") + T(summary)            # sent as a user message
    + for each message: per_message + T(role) + [name] per_name + T(name)
        + text / thinking:  T(text)
        + hint:             T(each text part) + data_block per data part
        + tool call:        per_tool_call + T(tool name) + T(arguments JSON)
        + tool result:      T(each text part) + data_block per data part
        + data block:       data_block
    + [tools]   tools_overhead + T(json.dumps(schemas, ensure_ascii=False))

A request that breaks the chat protocol (``harnesslab.sim.protocol``) is rejected first, with
``ProtocolError``. A request is admitted iff ``planned_output <= max_output``, ``input <= max_input`` and
``input + planned_output <= window``; ``planned_output`` is the request's output budget, or
the profile's ``default_output`` when the harness sends none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harnesslab.errors import ContextOverflowError, InputError, OverflowDetail, ProtocolError
from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    Part,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    tools_json,
)
from harnesslab.sim.protocol import ProtocolChecker
from harnesslab.tokens import TOKENIZER_NAMES, CountingTokenizer, RequestCounter, TokenCache


class ServiceProfile(BaseModel):
    """The true limits and billing rule of a deployed model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Profile name, as scenarios and the CLI refer to it")
    window: int = Field(gt=0, description="True context window: input + planned output")
    max_input: int = Field(gt=0, description="Largest accepted input, in billed tokens")
    max_output: int = Field(gt=0, description="Largest accepted planned output (max_tokens)")
    default_output: int = Field(
        gt=0, description="Planned output when the request states none")
    tokenizer: str = Field(description=f"True tokenizer: one of {', '.join(TOKENIZER_NAMES)}")
    per_message: int = Field(ge=0, description="Template tokens per message, besides its role")
    per_name: int = Field(default=1, ge=0, description="Extra tokens when a message has a name")
    per_request: int = Field(ge=0, description="Tokens per request (reply priming)")
    per_tool_call: int = Field(default=0, ge=0, description="Extra tokens per tool call")
    tools_overhead: int = Field(default=0, ge=0,
                                description="Extra tokens when any tool schema is sent")
    data_block: int = Field(gt=0, description="Fixed cost of one image or other data block")

    @model_validator(mode="after")
    def _check(self) -> ServiceProfile:
        if self.tokenizer not in TOKENIZER_NAMES:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZER_NAMES)}, "
                             f"got {self.tokenizer!r}")
        if self.max_output > self.window or self.max_input > self.window:
            raise ValueError("max_input and max_output must not exceed the window")
        if self.default_output > self.max_output:
            raise ValueError("default_output must not exceed max_output")
        return self

    def with_overrides(self, **values: Any) -> ServiceProfile:
        """A copy with some values changed (validated); a smaller window or max output also
        caps the limits derived from it unless they are given too."""
        data = self.model_dump()
        if "window" in values:
            w = values["window"]
            for k in ("max_input", "max_output", "default_output"):
                if k not in values and isinstance(w, int):
                    data[k] = min(data[k], w)
        data.update(values)
        if "default_output" not in values:
            data["default_output"] = min(data["default_output"], data["max_output"])
        return ServiceProfile.model_validate(data)


# OpenAI chat format: 3 template tokens per message plus its role, 1 per name, 3 to prime the
# reply (OpenAI cookbook); a high-detail 1024x1024 image costs 765.
PROFILES: dict[str, ServiceProfile] = {
    p.name: p for p in (
        ServiceProfile(name="openai-128k", window=128000, max_input=128000, max_output=16384,
                       default_output=4096, tokenizer="o200k_base", per_message=3,
                       per_request=3, data_block=765),
        ServiceProfile(name="openai-cl100k-128k", window=128000, max_input=128000,
                       max_output=4096, default_output=4096, tokenizer="cl100k_base",
                       per_message=3, per_request=3, data_block=765),
        # ChatML: <|im_start|>role\n ... <|im_end|>\n is 4 tokens besides the role.
        ServiceProfile(name="qwen-131k", window=131072, max_input=129024, max_output=8192,
                       default_output=2048, tokenizer="qwen2.5", per_message=4,
                       per_request=3, data_block=1280),
        ServiceProfile(name="deepseek-64k", window=65536, max_input=65536, max_output=8192,
                       default_output=4096, tokenizer="deepseek-v4", per_message=2,
                       per_request=2, data_block=1000),
    )
}


def get_profile(name: str) -> ServiceProfile:
    p = PROFILES.get(name)
    if p is None:
        raise InputError(f"unknown service profile {name!r}; expected one of: "
                         f"{', '.join(PROFILES)}", field="service")
    return p


class ServiceRule:
    """The billing formula of the module docstring, as a counting rule."""

    def __init__(self, profile: ServiceProfile, tokenizer: CountingTokenizer) -> None:
        self.name = f"service:{profile.name}"
        self.p = profile
        self.tok = tokenizer

    def _parts(self, parts: str | tuple[Part, ...]) -> int:
        if isinstance(parts, str):
            return self.tok.count(parts)
        return sum(self.tok.count(x.text) if isinstance(x, TextBlock) else self.p.data_block
                   for x in parts)

    def message_units(self, m: Message) -> int:
        t = self.tok.count
        u = self.p.per_message + t(m.role)
        if m.name:
            u += self.p.per_name + t(m.name)
        for b in m.content:
            if isinstance(b, TextBlock):
                u += t(b.text)
            elif isinstance(b, ThinkingBlock):
                u += t(b.thinking)
            elif isinstance(b, HintBlock):
                u += self._parts(b.hint)
            elif isinstance(b, ToolCallBlock):
                u += self.p.per_tool_call + t(b.name) + t(b.input)
            elif isinstance(b, ToolResultBlock):
                u += self._parts(b.output)
            elif isinstance(b, DataBlock):
                u += self.p.data_block
        return u

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int:
        t = self.tok.count
        u = self.p.per_request
        if system:
            u += self.p.per_message + t("system") + t(system)
        if summary:
            u += self.p.per_message + t("user") + t(summary)
        if tools:
            u += self.p.tools_overhead + t(tools_json(tools))
        return u

    def finalize(self, units: int) -> int:
        return units


def _into_rest(request: Request) -> bool:
    """Whether ``request`` writes its output into what its input leaves of the window
    (``("output", "rest")`` meta: Ollama without ``num_predict``), reserving none ahead."""
    return request.output_budget is None and bool(request.meta) \
        and request.stated("output") == "rest"


@dataclass(frozen=True)
class Usage:
    """What the service bills for an admitted request."""

    input_tokens: int
    planned_output: int


class SimulatedService:
    """Admits or rejects requests against a profile's true limits, counting incrementally."""

    def __init__(self, profile: ServiceProfile | str = "openai-128k",
                 cache: TokenCache | None = None) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.cache = cache or TokenCache()
        self.tokenizer = self.cache.tokenizer(self.profile.tokenizer)
        self._counter = RequestCounter(ServiceRule(self.profile, self.tokenizer))
        self._protocol = ProtocolChecker()

    def count_input(self, request: Request) -> int:
        """The billed input tokens of a request (the true count)."""
        return self._counter.count(request)

    def count_aside(self, request: Request) -> int:
        """The true count of a request that is not a call (``RequestCounter.count_aside``)."""
        return self._counter.count_aside(request)

    def count_output(self, text: str) -> int:
        return self.tokenizer.count(text)

    def planned_output(self, request: Request, true_input: int | None = None) -> int:
        """The output the request plans for: its budget, or the profile's default; or, for a
        request that writes into what its input leaves of the window (``("output", "rest")``
        meta: Ollama without ``num_predict``, which generates until done), that room, at
        least 1 and at most the default."""
        if request.output_budget is not None:
            return request.output_budget
        if _into_rest(request):
            used = self.count_input(request) if true_input is None else true_input
            return max(1, min(self.profile.default_output, self.window(request) - used))
        return self.profile.default_output

    def window(self, request: Request) -> int:
        """The window ``request`` is served in: the profile's, or less when the request sets
        a smaller one (``("window", N)`` meta: Ollama's ``num_ctx``, the context the model is
        loaded with)."""
        asked = request.stated("window") if request.meta else None
        return self.profile.window if asked is None else min(self.profile.window, int(asked))

    def fit(self, request: Request, *, keep_system: bool = False) -> tuple[Request, int]:
        """The server's own truncation: ``request`` with messages dropped from the beginning
        of the conversation until its input and planned output fit the window and the input
        limit (the API subtracts the output allowance from the input limit); a tool result
        left at the head without its call goes with it. The Responses API's ``truncation:
        "auto"``; Ollama's (``keep_system``) keeps the system messages among those dropped.
        Returns the request and how many messages were dropped (0: it fit as it was). The
        last message stays: a request that does not fit even so is rejected by
        :meth:`admit`, as with ``disabled``."""
        p = self.profile
        # What stays for the output: the planned output, or (writing into what is left) one.
        reserve = 1 if _into_rest(request) else self.planned_output(request)
        limit = min(self.window(request) - reserve, p.max_input)
        if self.count_input(request) <= limit:
            return request, 0  # the usual case: counted as admit counts it, incrementally
        c = self._counter
        finalize = c.rule.finalize
        head = c.head_units(request.system, request.summary, request.tools)
        units = [c.message_units(m) for m in request.messages]
        total = sum(units)
        msgs = request.messages
        kept: list[Message] = []
        k = 0
        while k < len(msgs) - 1 and finalize(head + total) > limit:
            if keep_system and msgs[k].role == "system":
                kept.append(msgs[k])
            else:
                total -= units[k]
            k += 1
            while k < len(msgs) - 1 and msgs[k].role == "tool":
                total -= units[k]
                k += 1
        dropped = k - len(kept)
        return (request, 0) if dropped == 0 else \
            (replace(request, messages=(*kept, *msgs[k:])), dropped)

    def admit(self, request: Request) -> Usage:
        """Return the true usage, or raise ProtocolError for a request that breaks the chat
        protocol (``harnesslab.sim.protocol``) or ContextOverflowError naming the limit
        crossed."""
        p = self.profile
        problem = self._protocol.problem(request)
        if problem is not None:
            raise ProtocolError(p.name, problem)
        true_input = self.count_input(request)
        planned = self.planned_output(request, true_input)
        if planned <= 0:
            raise InputError(f"planned output must be positive, got {planned}",
                             field="output_budget")

        def reject(limit_name: str, limit: int) -> ContextOverflowError:
            return ContextOverflowError(p.name, OverflowDetail(limit_name, limit, true_input,
                                                               planned))

        if planned > p.max_output:
            raise reject("max_output", p.max_output)
        if true_input > p.max_input:
            raise reject("max_input", p.max_input)
        window = self.window(request)
        if true_input + planned > window:
            raise reject("window", window)
        return Usage(true_input, planned)
