"""The reference harness's settings. Defaults reproduce AgentScope 2.0.x (semantics spec §7)."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from harnesslab.tokens import ESTIMATOR_NAMES


class CodexSettings(BaseModel):
    """Codex CLI's compaction knobs (persistence-codex-langgraph.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auto_compact_limit: int | None = Field(
        default=None, gt=0, description="Absolute token limit that triggers compaction; "
        "null: 90% of context_size")
    user_message_budget: int | None = Field(
        default=None, gt=0, description="Tokens of recent user messages kept after compaction; "
        "null: Codex's 20000, at most half the compaction limit")
    tool_output_limit: int = Field(default=10000, gt=0, description="Tool output tokens kept "
                                   "(head and tail) when a result is saved")


class MemorySettings(BaseModel):
    """Long-term memory (harness.memory): the mode and its knobs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: str = Field(default="none", description="none, vector, workspace, agentic, background")
    top_k: int = Field(default=5, gt=0, description="Items retrieved per turn at most")
    threshold: float | None = Field(default=None, ge=-1, le=1, description="Least cosine "
                                    "similarity of a retrieved item; null: the top_k best")
    position: Literal["start", "before_question"] = Field(
        default="start", description="Where retrieved items are injected: before the "
        "conversation, or right before the user's current message")
    agent_id: str = Field(default="assistant", description="The agent whose memory it is")
    key: Literal["verified", "named"] = Field(
        default="verified", description="verified: memory of the verified session user; named: "
        "of the user id the model last passed to a tool (a negative control)")
    volatile: list[str] = Field(default_factory=lambda: ["track_order", "get_logistics_trace"],
                                description="Tools whose results are time-sensitive")
    not_remembered: list[str] = Field(
        default_factory=lambda: ["search_kb"], description="Tools whose results are never "
        "written to memory: a knowledge base is its own source, kept current there")
    volatile_policy: Literal["reverify", "expire"] = Field(
        default="reverify", description="reverify: a volatile item is kept and shown with its "
        "age, to be looked up again; expire: it is dropped after ttl_hours")
    ttl_hours: float = Field(default=12.0, gt=0, description="Life of a volatile item under "
                             "expire")

    @model_validator(mode="before")
    @classmethod
    def _mode_alone(cls, v: object) -> object:
        return {"mode": v} if isinstance(v, str) else v  # memory: vector

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        from harnesslab.harness.memory import MEMORY_MODES

        if v not in MEMORY_MODES:
            raise ValueError(f"unknown memory mode {v!r}; expected one of "
                             f"{', '.join(MEMORY_MODES)}")
        return v


class HarnessConfig(BaseModel):
    """Everything a sweep can vary about the reference harness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    harness: str = Field(default="reference", description="The harness under test: reference, "
                         "a registered adapter name, module:Class, path/to/file.py:Class, or cmd:COMMAND (a "
                         "black-box program, harnesslab.adapters.cmd)")
    strategy: str = Field(default="structured", description="Compaction strategy: none, "
                          "truncate, structured, freeform, pinned, offload, codex")
    context_size: int = Field(default=32768, gt=0, description="The harness's belief about the "
                              "model's window (AgentScope ChatModelBase default 32768)")
    trigger_ratio: float = Field(default=0.8, gt=0, le=0.9, description="Compact when the "
                                 "estimate >= trigger_ratio x context_size")
    reserve_ratio: float = Field(default=0.1, gt=0, lt=0.9, description="Keep the newest "
                                 "reserve_ratio x context_size (including system, summary, tools)")
    context_buffer_ratio: float = Field(default=0.2, ge=0, le=1, description="Context-length "
                                        "hint above (trigger - buffer) x context_size")
    estimator: str = Field(default="bytes4", description=f"One of {', '.join(ESTIMATOR_NAMES)}")
    summary_template: Literal["agentscope", "seed"] = Field(
        default="agentscope", description="AgentScope's five fields or the seed's five")
    fallback_to_truncation: bool = Field(default=True, description="When the summary fails, "
                                         "drop the old messages anyway (AgentScope default)")
    offload: bool = Field(default=False, description="Offload compressed messages and long tool "
                          "results to JSONL/text files, with path hints")
    tool_result_limit: int = Field(default=50000, gt=0, description="Largest tool result kept, "
                                   "in estimated tokens; longer ones are truncated when saved")
    tools: list[str] | None = Field(default=None, description="The tools offered to the model "
                                    "(by name); null: every tool the deployment has. A tool "
                                    "left out is one the model cannot call")
    window_messages: int = Field(default=20, gt=0, description="strategy window: the newest "
                                 "messages sent with each request (starting at a user message)")
    max_image_num: int = Field(default=5, ge=0, description="Images kept in the context")
    time_hint: bool = Field(default=True, description="Inject the runtime-state time hint")
    time_interval_hours: float = Field(default=0.5, ge=0, description="Re-inject the time hint "
                                       "after this many hours")
    clock_offset_hours: float = Field(default=0.0, description="The harness's clock minus the "
                                      "world's, as a host clock or timezone bug would make it; "
                                      "0 for a correct harness")
    context_length_hint: bool = Field(default=True, description="Inject the context-length hint")
    identity: Literal["bind", "refuse", "trust"] = Field(
        default="bind", description="bind: tools act for the verified session user (a different "
        "user_id is overridden); refuse: a different user_id is an error result; trust: the "
        "model's user_id is used (a negative control)")
    retry_on_overflow: bool = Field(default=False, description="On a service overflow, compact "
                                    "and retry once")
    output_budget: int | None = Field(default=None, gt=0, description="Planned output sent with "
                                      "each request; null: the service default")
    max_iters: int = Field(default=8, gt=0, description="Model calls per reply at most")
    prompts: Literal["default", "agentscope"] = Field(default="default", description="Whose "
                                                      "prompt texts to send")
    system_prompt: str | None = Field(default=None, description="Overrides the prompts' system "
                                      "prompt")
    turn_timeout: float = Field(default=60.0, gt=0, le=3600, description="A black-box harness "
                                "(harness=cmd:...): seconds its program may take to answer one "
                                "step; past it the program is stopped and the run fails")
    tool_identity: Literal["caller", "server"] = Field(
        default="caller", description="A black-box harness (harness=cmd:...): who binds the "
        "acting user of a tool call on the bench's tool backend. caller: the backend trusts the "
        "user_id the harness sends, as an internal service trusts its caller, so the harness "
        "must bind it to the verified session user; server: the backend binds every call to the "
        "verified session user whatever the arguments say (the control)")
    persist: bool = Field(default=False, description="Keep each session in a store in the "
                          "workdir (JSONL rollout, SQLite metadata, memory/ folder); the bench "
                          "turns it on for scenarios with restart, session or instance steps")
    resume: Literal["store", "session_id"] = Field(
        default="store", description="store: a fresh instance restores the session's full state "
        "from the store, and reloads it before a turn when another instance changed it; "
        "session_id: it keeps only the session id and restores nothing (a negative control)")
    codex: CodexSettings = Field(default_factory=CodexSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Without memory the dump (a record's header) stays as it was before memory existed.
        data: dict[str, object] = handler(self)
        if self.memory == MemorySettings():
            data.pop("memory", None)
        if self.tool_identity == "caller":
            data.pop("tool_identity", None)  # nor before the setting existed
        return data

    @field_validator("estimator")
    @classmethod
    def _estimator(cls, v: str) -> str:
        if v not in ESTIMATOR_NAMES:
            raise ValueError(f"estimator must be one of {', '.join(ESTIMATOR_NAMES)}")
        return v

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, v: str) -> str:
        from harnesslab.harness.compaction import STRATEGIES

        if v not in STRATEGIES:
            raise ValueError(f"unknown strategy {v!r}; expected one of {', '.join(STRATEGIES)}")
        return v

    @model_validator(mode="after")
    def _check(self) -> HarnessConfig:
        # AgentScope's Agent._validate_configs.
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError("reserve_ratio must be smaller than trigger_ratio")
        if (self.time_hint or self.context_length_hint) \
                and self.context_buffer_ratio >= self.trigger_ratio:
            raise ValueError("context_buffer_ratio must be smaller than trigger_ratio while "
                             "runtime hints are on")
        budget = self.codex.user_message_budget
        if self.strategy == "codex" and budget is not None and budget >= self.codex_limit:
            # The kept user messages alone would reach the limit again: it would compact on
            # every call (55 compactions in 51 steps, seen before this check).
            raise ValueError(f"codex.user_message_budget ({budget}) must be below the "
                             f"compaction limit ({self.codex_limit:g})")
        return self

    @property
    def codex_user_budget(self) -> int:
        b = self.codex.user_message_budget
        return b if b is not None else int(min(20000, self.codex_limit / 2))

    @property
    def codex_limit(self) -> float:
        """Codex's auto-compaction limit: the absolute setting, or 90% of context_size."""
        c = self.codex
        return c.auto_compact_limit if c.auto_compact_limit is not None else 0.9 * self.context_size

    @property
    def trigger_tokens(self) -> float:
        return self.trigger_ratio * self.context_size

    @property
    def reserve_tokens(self) -> float:
        return self.reserve_ratio * self.context_size
