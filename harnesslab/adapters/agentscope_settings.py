"""Which bench settings the real AgentScope 2.0.x can express, and how (light: no agentscope
import, so ``harnesslab fidelity`` can say what is not applicable before running anything).

Mapped: context_size (the chat model's), trigger_ratio, reserve_ratio, context_buffer_ratio,
fallback_to_truncation, tool_result_limit, max_image_num (``ContextConfig``); time_interval_hours,
time_hint and context_length_hint when both are on or both off (``InjectionConfig``);
summary_template (``summary_template`` and ``summary_schema``); strategy structured, or offload
/ ``offload: true`` (an offloader); max_iters (``ReActConfig``: AgentScope adds one forced final
call at the limit); tools (the toolkit); output_budget and system_prompt (what is sent);
identity and clock_offset_hours (the integrator's tool wiring and host clock, not AgentScope's).

Ignored: ``prompts`` (AgentScope always sends its own texts), ``codex`` and
``window_messages`` (settings of strategies it has not).

Not applicable (the run is reported not applicable, with the reason; ``fidelity`` reports it):
every other strategy, estimators other than bytes4, a memory mode without a wired middleware
(``MEMORY_MODES``: agentic is AgenticMemoryMiddleware, ``agentscope_memory``; vector is
Mem0Middleware, ``agentscope_mem0``), ``memory.key: named`` (the middlewares have no notion of
users), the memory settings Mem0Middleware decides itself (``_MEM0_FIXED``) when a vector
variant sets them, one runtime hint without the other,
retry_on_overflow, and a session clock whose UTC offset is not whole hours. A variant defined
by an ignored setting alone is not applicable too (``HONOURS``).
"""

from __future__ import annotations

from pathlib import Path

from harnesslab.errors import NotApplicable
from harnesslab.harness.config import HarnessConfig, MemorySettings
from harnesslab.harness.memory.items import safe_name

__all__ = ["HONOURS", "MEMORY_MODES", "STRATEGIES", "NotApplicable", "memory_folder",
           "not_applicable"]

STRATEGIES = ("structured", "offload")
# Why a mode has no middleware here (docs/agentscope-memory.md).
_UNWIRED = {
    "background": "AgentScope 2.0.11 has no middleware that consolidates a user's queued "
                  "sessions later",
}
# What Mem0Middleware decides itself (memory.mode vector): a variant that sets one of these is
# not applicable (at its default it is the middleware's own behaviour that is measured).
_MEM0_FIXED = {
    "position": "Mem0Middleware always puts retrieved memory right after the user's message",
    "volatile": "mem0 has no notion of time-sensitive items (no re-verify note, no expiry)",
    "volatile_policy": "mem0 has no notion of time-sensitive items (no re-verify note, no "
                       "expiry)",
    "ttl_hours": "mem0 keeps every item until it is deleted or updated",
    "not_remembered": "mem0 remembers whatever its extraction returns from the exchange; the "
                      "middleware cannot exclude a tool's results",
}
# What ReMeMiddleware decides itself (memory.mode workspace), the same way.
_REME_FIXED = {
    "threshold": "ReMeMiddleware passes no score threshold to ReMe's search (its top_k best)",
    "position": "ReMeMiddleware always puts retrieved memory after the user's message",
    "volatile": "ReMe has no notion of time-sensitive items (no re-verify note, no expiry)",
    "volatile_policy": "ReMe has no notion of time-sensitive items (no re-verify note, no "
                       "expiry)",
    "ttl_hours": "ReMe keeps every daily card",
    "not_remembered": "ReMe's auto_memory records whatever its extraction agent takes from the "
                      "exchange; the middleware cannot exclude a tool's results",
}
_FIXED = {"vector": _MEM0_FIXED, "workspace": _REME_FIXED}
# The memory modes the adapter wires, and the AgentScope middleware each one is.
MEMORY_MODES = {"none": "no middleware", "agentic": "AgenticMemoryMiddleware",
                "vector": "Mem0Middleware", "workspace": "ReMeMiddleware"}

def memory_folder(workdir: Path, agent: str, user: str) -> Path:
    """Where one (agent, verified user)'s AgentScope memory lives in the run's workdir (the
    adapter mounts it at /agent; ``fidelity`` reads MEMORY.md from it after a run)."""
    return workdir / "memory" / "agentscope" / safe_name(agent) / safe_name(user)


# The declaration (``harnesslab.harness.honours``): every mapped setting above. The ignored ones
# (prompts, codex.*, window_messages) are left out, so a variant defined by them alone is not
# applicable rather than a run of AgentScope's defaults under another name. The bench's own
# settings (harness, turn_timeout, persist, resume) need no declaring.
HONOURS: frozenset[str] = frozenset({
    "strategy", "context_size", "trigger_ratio", "reserve_ratio", "context_buffer_ratio",
    "fallback_to_truncation", "tool_result_limit", "max_image_num", "time_interval_hours",
    "time_hint", "context_length_hint", "summary_template", "offload", "max_iters", "tools",
    "output_budget", "system_prompt", "identity", "clock_offset_hours", "estimator",
    "retry_on_overflow", "memory.*"})


def not_applicable(cfg: HarnessConfig) -> list[str]:
    """Why AgentScope cannot run with ``cfg``: one reason per setting; empty when it can."""
    out: list[str] = []
    if cfg.strategy not in STRATEGIES:
        out.append(f"strategy {cfg.strategy}: AgentScope 2.0.x compacts with a structured "
                   "summary only (structured, or offload with an offloader)")
    mem = cfg.memory
    if mem.mode not in MEMORY_MODES:
        out.append(f"memory {mem.mode}: " + _UNWIRED.get(
            mem.mode, "the adapter does not wire an AgentScope middleware for it") + " (wired: "
            + ", ".join(f"{k}: {v}" for k, v in MEMORY_MODES.items() if k != "none") + ")")
    elif mem.mode == "vector" and mem.threshold is not None and mem.threshold < 0:
        out.append(f"memory.threshold={mem.threshold}: mem0 accepts similarity thresholds in "
                   "[0, 1] only")
    if mem.mode in _FIXED:
        default = MemorySettings()
        for key, why in _FIXED[mem.mode].items():
            if getattr(mem, key) != getattr(default, key):
                out.append(f"memory.{key}={getattr(mem, key)}: {why}")
    if mem.mode in MEMORY_MODES and mem.mode != "none" and mem.key == "named":
        out.append("memory.key=named: AgentScope's memory middlewares have no notion of users; "
                   "the integrator fixes whose memory it is (its workdir) when the agent is "
                   "built, so it cannot follow the user id the model names")
    if cfg.estimator != "bytes4":
        out.append(f"estimator {cfg.estimator}: AgentScope estimates with its own count_tokens "
                   "(bytes4)")
    if cfg.time_hint != cfg.context_length_hint:
        out.append(f"time_hint={str(cfg.time_hint).lower()} with context_length_hint="
                   f"{str(cfg.context_length_hint).lower()}: AgentScope's runtime hints switch "
                   "on and off together (InjectionConfig.inject_runtime_state)")
    if cfg.retry_on_overflow:
        out.append("retry_on_overflow: AgentScope does not compact and retry after a "
                   "provider's overflow error")
    return out
