"""What the ``agentscope`` prompts profile changes beyond texts, so that the reference harness
behaves as AgentScope 2.0.x does at its edges (semantics spec §2.3, §2.6, §5.1):

- the time is written ``strftime(time_format)`` with an IANA zone name beside it, and the
  compression prompt states it as ``<time> (<zone>)``;
- structured output (the summary) is repaired when its JSON is slightly broken and validated
  against the tool's schema; only the first ``generate_structured_output`` call counts;
- tool arguments are repaired and validated against the tool's schema before the tool runs; a
  failure is an error result the model sees, and the tool never runs;
- offloaded data is named ``workspace:///data/<sha256 of the base64>.<ext>``;
- the runtime hint says so when the same tool call failed three times in a row (§2.8);
- at ``max_iters`` a reply gets one more call, told to answer in text without tools, and ends
  as exceeded whatever that call does (``Agent._next_action``).

Only that profile calls this module, and that profile needs the ``agentscope`` extra already
(its texts are read from the package): the JSON repair is AgentScope's own function, so the
repaired values are the ones AgentScope would use.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from harnesslab.harness.offload import Offloader
from harnesslab.harness.prompts import agentscope_timezone
from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)


def zone_name(now: datetime) -> str:
    """The zone named beside the time: AgentScope's ``InjectionConfig.timezone`` for a clock
    at ``now``'s offset (a non-whole-hour offset has no IANA name: ``UTC+hh:mm``)."""
    zone = agentscope_timezone(now)
    if zone is not None:
        return zone
    off = now.utcoffset()
    minutes = int(off.total_seconds() // 60) if off is not None else 0
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def time_text(now: datetime, fmt: str) -> str:
    """``datetime.now(ZoneInfo(zone)).strftime(fmt)`` for the clock at ``now``."""
    zone = agentscope_timezone(now)
    local = now.astimezone(ZoneInfo(zone)) if zone is not None else now
    return local.strftime(fmt)


def _repair(raw: str, schema: dict[str, Any]) -> dict[str, Any]:
    from agentscope._utils._common import _json_loads_with_repair

    parsed: dict[str, Any] = _json_loads_with_repair(raw, schema)
    return parsed


def parse_structured(raw: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The structured output AgentScope accepts from a ``generate_structured_output`` call's
    arguments: repaired, then valid against ``schema``; None when it would raise
    StructuredOutputError."""
    import jsonschema
    from agentscope.exception import ToolJSONDecodeError

    try:
        data = _repair(raw, schema)
        jsonschema.validate(data, schema)
    except (ToolJSONDecodeError, jsonschema.ValidationError):
        return None
    return data


def check_tool_input(name: str, raw: str,
                     tools: tuple[ToolSchema, ...]) -> tuple[dict[str, Any] | None, str]:
    """AgentScope's step 1 of a tool call (``Agent._execute_tool_call``): the tool exists, its
    arguments parse (with repair) and are valid against its schema. Returns the arguments the
    tool is called with, or None and the error text the model is shown instead."""
    import jsonschema
    from agentscope.exception import ToolJSONDecodeError

    schema = next((t.to_dict().get("function", {}).get("parameters") for t in tools
                   if t.name == name), None)
    if schema is None:
        return None, f"ToolNotFoundError: The tool named '{name}' doesn't exist."
    try:
        args = _repair(raw, schema)
    except ToolJSONDecodeError as e:
        return None, e.message
    try:
        jsonschema.validate(args, schema)
    except jsonschema.ValidationError as e:
        return None, (f"Input validation failed for tool '{name}': {e.message} "
                      f"(at {e.json_path})")
    return args, ""


def repeated_tool_error(context: Sequence[Message]) -> str | None:
    """AgentScope's ``tool-error`` runtime hint (``Agent._get_repeated_tool_error``): when the
    newest tool results of the reply message are ``tool_retries_limit`` failures of the same
    tool with the same arguments (compared as sorted JSON, or as stripped text when they do not
    parse), the hint that tells the model to stop retrying; else None."""
    from agentscope.agent import InjectionConfig

    cfg = InjectionConfig()
    last = context[-1] if context else None
    if last is None or last.role != "assistant":
        return None
    results = [b for b in last.content if isinstance(b, ToolResultBlock)]
    if not results or not results[-1].is_error:
        return None
    name = results[-1].name
    streak: list[str] = []
    for r in reversed(results):
        if not r.is_error or r.name != name:
            break
        streak.append(r.id)
    if len(streak) < cfg.tool_retries_limit:
        return None
    inputs = {b.id: b.input for b in last.content if isinstance(b, ToolCallBlock)}
    args: list[str] = []
    for call_id in streak:
        raw = inputs.get(call_id, "")
        try:
            args.append(json.dumps(json.loads(raw), sort_keys=True))
        except (TypeError, ValueError):
            args.append(raw.strip())
    count = 0
    for a in args:
        if a != args[0]:
            break
        count += 1
    if count < cfg.tool_retries_limit:
        return None
    hint: str = cfg.tool_retries_hint
    return hint.replace("{tool_name}", name).replace("{count}", str(count))


MAX_ITERS_EXCEEDED = "The maximum reasoning-acting iterations are exceeded."


def max_iters_hint(max_iters: int) -> HintBlock:
    """The hint AgentScope adds before its last, forced-final call of a reply."""
    return HintBlock(
        f"<system-reminder>You have reached the maximum of {max_iters} reasoning-acting "
        "iterations. Summarize the work and findings so far and return the final answer as "
        "text. Do not call any tools.</system-reminder>",
        source='{"label": "System", "sublabel": "Max Iterations Reached"}')


def tool_arguments(args: dict[str, Any]) -> str:
    """The arguments as the tool receives them, written back as JSON."""
    return json.dumps(args, ensure_ascii=False)


class AgentScopeOffloader(Offloader):
    """The reference offloader with AgentScope's name for offloaded data."""

    def offload_data(self, block: DataBlock) -> str | None:
        path = super().offload_data(block)  # the file, under the run's workspace
        if path is None:
            return None
        digest = path.rsplit("/", 1)[-1].split(".", 1)[0]
        ext = mimetypes.guess_extension(block.media_type) or ".bin"
        return f"workspace:///data/{digest}{ext}"
