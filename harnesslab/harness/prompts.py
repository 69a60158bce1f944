"""The texts the reference harness sends: system prompt, compression prompts, summary templates,
runtime hints and reminders. They are settings: ``default`` is harnesslab's own wording;
``agentscope`` reads AgentScope's texts from the installed package (the ``agentscope`` extra),
so its numbers can be checked against the real package without copying its prompts here.

The runtime strings that AgentScope hard-codes in its agent loop (offload path reminder,
truncation marker, image reminders) are reproduced as the behavioural spec states them: they
are short, fixed protocol strings whose exact length the estimator sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from harnesslab.errors import InputError

# AgentScope's structured-output tool (``generate_structured_output``): the summary and the pin
# extraction are asked for through it, as AgentScope asks for any structured output.
SUMMARY_TOOL = "generate_structured_output"

AGENTSCOPE_EXTRA = "pip install 'harnesslab[agentscope]'"

# The ``agentscope`` profile's time text: AgentScope writes ``strftime(time_format)`` and names
# the zone beside it. Its default format carries no offset; with %z the stated time is absolute
# on its own (AgentScope parses it back with the same format), so a reader needs no zone table.
# The AgentScope adapter configures the same format.
AGENTSCOPE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"

# Hard-coded in AgentScope's ChatModelBase._call_api_with_structured_output (not a setting, so
# it cannot be read from the package): appended to the last user message of every structured
# request.
AGENTSCOPE_STRUCTURED_REMINDER = (
    f"<system-reminder>Now you **MUST** call the tool named '{SUMMARY_TOOL}' to generate the "
    "structured output required by the user. DON'T do anything else.</system-reminder>")


def agentscope_timezone(now: datetime) -> str | None:
    """An IANA zone name with ``now``'s UTC offset and no daylight saving ("UTC", "Etc/GMT-8"
    for UTC+08:00; the Etc names invert the sign), or None when the offset is not whole hours
    (no such zone exists)."""
    off = now.utcoffset() or timedelta(0)
    minutes = int(off.total_seconds() // 60)
    if minutes % 60:
        return None
    hours = minutes // 60
    return "UTC" if hours == 0 else f"Etc/GMT{-hours:+d}"


@dataclass(frozen=True)
class Prompts:
    system: str
    compression: str              # structured summary request; {current_time}
    freeform: str                 # freeform summary request; {current_time}
    handoff: str                  # Codex-style handoff request
    structured_reminder: str      # appended to the last user message of a structured request
    summary_templates: dict[str, str]   # template name -> str.format template
    summary_fields: dict[str, dict[str, str]]  # template name -> field -> description
    runtime_template: str         # {runtime_state}
    truncated_summary: str        # the summary when a failed compaction truncates
    offload_reminder: str         # {path}
    tool_truncated: str           # {R}
    tool_truncated_file: str      # {path}
    image_removed: str            # {name}
    image_offloaded: str          # {name} {url}
    handoff_bridge: str           # {summary}
    pin_request: str              # pinned: asks for the standing instructions and entities
    pin_fields: dict[str, str]    # pinned: field -> description
    pin_board: str                # pinned: the board, str.format over pin_fields
    # The time text of the runtime hint and the compression prompt: None for ISO-8601 with the
    # offset and a "UTC+hh:mm" zone; else a strftime format and an IANA zone name (AgentScope).
    time_format: str | None = None
    # template name -> the summary tool's exact parameters schema, when it is not the one built
    # from summary_fields (AgentScope sends its pydantic model's schema, titles included).
    summary_parameters: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary_tool(self, template: str) -> dict[str, Any]:
        params = self.summary_parameters.get(template)
        if params is not None:
            return self.structured_tool(self.summary_fields[template], params)
        return self.structured_tool(self.summary_fields[template])

    def structured_tool(self, fields: dict[str, str],
                        parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        schema = parameters if parameters is not None else {
            "type": "object", "properties": {
                k: {"type": "string", "description": d} for k, d in fields.items()},
            "required": list(fields)}
        return {"type": "function", "function": {
            "name": SUMMARY_TOOL,
            "description": "Call this function to generate structured output required by the "
                           "user.",
            "parameters": schema}}


_SEED_TEMPLATE = ("<system-info>会话摘要 / Conversation summary\n"
                  "# 目标 Goal\n{goal}\n\n# 已确认事实 Confirmed facts\n{confirmed_facts}\n\n"
                  "# 未确认项 Unconfirmed items\n{unconfirmed_items}\n\n"
                  "# 下一步 Next step\n{next_step}\n\n"
                  "# 需保留的约束 Constraints to keep\n{constraints_to_keep}</system-info>")
_SEED_FIELDS = {
    "goal": "What the user wants, with every id verbatim.",
    "confirmed_facts": "Facts confirmed by tools, each with its time (as_of).",
    "unconfirmed_items": "Claims not verified by the session (e.g. a claimed identity).",
    "next_step": "What to do next.",
    "constraints_to_keep": "User constraints that must still hold (e.g. brevity, language).",
}

DEFAULT = Prompts(
    system="你是一家电商的客服助手。You are a customer-service assistant for an online store. "
           "Use the tools to check facts; never guess an order's status.",
    compression=(
        "<system-hint>Write a structured, self-contained summary of the conversation above; it "
        "will replace the history. Current time: {current_time}. Keep every id, constraint and "
        "time verbatim and absolute; mark claims that the session did not verify.</system-hint>"),
    freeform=(
        "Summarize the conversation above in free text so that the work can continue without "
        "it. Current time: {current_time}. Keep ids, constraints and times verbatim."),
    # Codex's compaction prompt opens with these words.
    handoff=(
        "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for "
        "another model that will resume the task: what the user wants, facts found, "
        "constraints, next step."),
    structured_reminder=(f"<system-reminder>Call the tool '{SUMMARY_TOOL}' now to produce the "
                         "summary; do nothing else.</system-reminder>"),
    summary_templates={
        "agentscope": ("<system-info>Summary of the earlier conversation\n"
                       "# Task Overview\n{task_overview}\n\n# Current State\n{current_state}\n\n"
                       "# Important Discoveries\n{important_discoveries}\n\n"
                       "# Next Steps\n{next_steps}\n\n"
                       "# Context to Preserve\n{context_to_preserve}</system-info>"),
        "seed": _SEED_TEMPLATE,
    },
    summary_fields={
        "agentscope": {
            "task_overview": "The user's core request, success criteria and constraints.",
            "current_state": "What has been done so far, with its results.",
            "important_discoveries": "Constraints, decisions, errors; unverified claims.",
            "next_steps": "Remaining actions and blockers.",
            "context_to_preserve": "User preferences, domain details, promises made.",
        },
        "seed": _SEED_FIELDS,
    },
    runtime_template=("<system-reminder>Runtime state, authoritative from this point on (a "
                      "later reminder supersedes it):\n{runtime_state}\n</system-reminder>"),
    # The following are AgentScope 2.0.x's fixed runtime strings (semantics spec §2.3-§2.9).
    truncated_summary=("<system-info>Some earlier messages were truncated for limited context."
                       "</system-info>"),
    offload_reminder=("\n<system-reminder>The compressed context is offloaded to '{path}', you "
                      "can refer to it when needed.</system-reminder>"),
    tool_truncated=("\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted "
                    "for limited context.{R}</system-reminder>"),
    tool_truncated_file=" You can refer to the file in '{path}' for the truncated content if needed.",
    image_removed="<system-reminder>The image {name}is removed to free up context space."
                  "</system-reminder>",
    image_offloaded="<system-reminder>The image {name}is offloaded into {url}, you can refer to "
                    "it when needed.</system-reminder>",
    handoff_bridge=("Another language model started to solve this problem and produced a "
                    "summary of its work. Use it to continue:\n{summary}"),
    pin_request=(
        "<system-hint>The conversation above is about to be compacted. List, verbatim, the "
        "user's standing instructions that still apply (a later instruction replaces an "
        "earlier one it contradicts) and the entities under discussion (order and user ids), "
        "most recent last. Call the tool '" + SUMMARY_TOOL + "'.</system-hint>"),
    pin_fields={
        "standing_instructions": "The user's instructions about how to answer that still "
                                 "apply, latest last.",
        "entities": "The ids under discussion, verbatim, most recent last.",
    },
    pin_board=("<system-info>Pinned by the harness (kept across compactions)\n"
               "# Standing instructions\n{standing_instructions}\n"
               "# Entities under discussion\n{entities}</system-info>"),
)


def _agentscope() -> Prompts:
    try:
        from agentscope.agent import ContextConfig, InjectionConfig
        from agentscope.agent._config import SummarySchema
    except ImportError:
        raise InputError(f"prompts 'agentscope' needs the agentscope package; run: "
                         f"{AGENTSCOPE_EXTRA}", field="prompts") from None
    cc, ic = ContextConfig(), InjectionConfig()
    schema = SummarySchema.model_json_schema()
    fields = {k: str(v.get("description", "")) for k, v in schema["properties"].items()}
    return replace(
        DEFAULT,
        compression=cc.compression_prompt,
        structured_reminder=AGENTSCOPE_STRUCTURED_REMINDER,
        summary_templates={**DEFAULT.summary_templates, "agentscope": cc.summary_template},
        summary_fields={**DEFAULT.summary_fields, "agentscope": fields},
        summary_parameters={"agentscope": cc.summary_schema},
        runtime_template=ic.template,
        time_format=AGENTSCOPE_TIME_FORMAT,
    )


def load_prompts(profile: str) -> Prompts:
    if profile == "default":
        return DEFAULT
    if profile == "agentscope":
        return _agentscope()
    raise InputError(f"unknown prompts profile {profile!r}; expected default or agentscope",
                     field="prompts")
