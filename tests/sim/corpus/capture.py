"""Regenerate one framework's corpus file from the records of a black-box run (not a test).

    harnesslab run harnesslab/scenarios/followup-after-filler-zh.yaml --variant default \\
        --set harness=cmd:"/work/fw/langgraph/bin/python examples/langchain_agent.py" --out /tmp/lc
    python tests/sim/corpus/capture.py langchain 1.5.2 /tmp/lc

Keeps, from the record, the requests that show each form the understanding contract names
(docs/understanding.md): the turn that asks the follow-up (its question and its statement of
the time), the summary request, and the turn whose request presents the summary back. Each is
labelled with the exact text of what it shows, found from what the bench knows (the turn's
words, the clock, the summary the model wrote), never from the fake model's reading. The small
talk between is cut (two messages kept around each kept one) and session ids are blanked: the
file is small and holds nothing but the scenario's fake data and the framework's own texts.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harnesslab.messages import Message, Request, request_to_dict
from harnesslab.record.format import Record

# How each example states the time (its own words, examples/<name>_agent.py).
TIME_FORMS = {"langchain": "Current time: {now}", "llamaindex": "现在是 {now}",
              "autogen": "Today is {now}.", "agno": "The current time is {now}.",
              "haystack": "Current date and time: {now}",
              # Semantic Kernel's TimePlugin format, through a {{time.now}} template function.
              "semantic_kernel": "The current date and time is {en}.",
              "smolagents": "It is now {now}.",
              "adk": "Current time: {now}",
              # CAMEL keeps its system message in its memory: the time leads each user message.
              "camel": "[{stamp}] ",
              "griptape": "Current time: {now}",
              # BeeAI ToolCallingAgent's own system prompt, in UTC (its formatDate).
              "beeai": "The current date and time is: {utc}",
              # DSPy: an input field of the signature, a marked section of the user message.
              "dspy": "[[ ## now ## ]]\n{now}",
              "qwenagent": "Current time: {now}",
              # Codex CLI states a date only, in its <environment_context> user message.
              "codex": "<current_date>{date}</current_date>"}
# Whose first request is kept whole (its instructions are the CLI's own, and long).
WHOLE_FIRST = {"codex"}
# The framework's own summary instruction, as its source writes it (the ask to remove).
ASKS = {
    "langchain": ["<role>\nContext Extraction Assistant\n</role>", "Messages to summarize:",
                  "You should structure your summary using the following sections.",
                  "extract the most important and relevant context to replace it"],
    # Codex CLI 0.171's compaction prompt (codex-rs/core/templates/compact/prompt.md).
    "codex": ["You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary "
              "for another LLM that will resume the task."],
    "langgraph": ["Create a summary of the conversation above:",
                  "Extend the summary by taking into account the new messages above:"],
    "llamaindex": ["The following is a conversation between the user and assistant. Write a "
                   "concise summary about the contents of this conversation."],
    "haystack": ["You are compacting one portion of a conversation between a user and an AI agent",
                 "Summarize only what you are given",
                 "Treat it as conversation data to summarize",
                 "the harder you should compress"],
    # Semantic Kernel 1.45's ChatHistorySummarizationReducer DEFAULT_SUMMARIZATION_PROMPT,
    # appended as a last system message after the messages it summarises.
    "semantic_kernel": ["Provide a concise and complete summarization of the entire dialog that "
                        "does not exceed 5 sentences.", "This summary must always:",
                        "Include details from any existing summary",
                        "Exclude details from any existing summary"],
    # Google ADK 2.13's LlmEventSummarizer._DEFAULT_PROMPT_TEMPLATE (one user message).
    "adk": ["The following is a conversation history between a user and an AI agent.",
            "Please identify and reiterate the user request, summarize the context so far, "
            "focusing on key decisions made and information obtained",
            "The rest of the summary should be concise and capture the essence of the "
            "interaction."],
    # CAMEL 0.2.90's build_default_summary_prompt (camel/agents/_utils.py), the conversation
    # quoted in one user message to a summariser agent of its own.
    "camel": ["Summarize the conversation below.",
              "Produce markdown that strictly follows this outline and numbering:",
              "Do not invent details that are not supported by the conversation."],
    # Griptape 1.13's memory/conversation/summarize_conversation.j2 (one user message).
    "griptape": ["Summarize the following conversation:", "Update the summary with this:"],
    # BeeAI 0.1.85's SummarizeMemory._summarize_messages (one user message).
    "beeai": ["Summarize the following conversation. Be concise but include all key "
              "information."],
    "agno": ["Analyze the following conversation between a user and an assistant, and extract "
             "the following details:", "Provide a concise summary of the session",
             "Keep the summary concise and to the point.",
             "Provide the summary of the conversation."],
}


def _cut(r: Request, keep: set[int]) -> Request:
    """Only the messages near a kept one (tool calls stay with their results)."""
    near = {j for i in keep for j in range(i - 2, i + 3)}
    msgs: list[Message] = [m for i, m in enumerate(r.messages) if i in near]
    return replace(r, messages=tuple(msgs), session_id="")


def _time_text(framework: str, now: str) -> str:
    """How ``framework``'s example states ``now`` (ISO), as TIME_FORMS writes it."""
    at = datetime.fromisoformat(now)
    return TIME_FORMS[framework].format(now=now, date=now[:10], en=at.strftime(
        "%A, %B %d, %Y %I:%M %p"), stamp=at.strftime("%Y-%m-%d %H:%M"),
        utc=at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _text(r: Request) -> str:
    return "\n".join([r.system, r.summary, *(m.plain_text() for m in r.messages)])


def _written(call: dict[str, Any]) -> str:
    text = "".join(b.get("text", "") for b in call["reply"] if b["type"] == "text")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    return next((v for v in data.values() if isinstance(v, str) and v), "") \
        if isinstance(data, dict) else text


def _anonymised(d: Any, path: str) -> Any:
    """``d`` with the run's folder (a CLI's working directory it states, e.g. Codex's
    ``<cwd>``) written as ``/run``."""
    if isinstance(d, str):
        return d.replace(path, "/run")
    if isinstance(d, list):
        return [_anonymised(x, path) for x in d]
    if isinstance(d, dict):
        return {k: _anonymised(v, path) for k, v in d.items()}
    return d


def capture(framework: str, version: str, out: Path) -> dict[str, Any]:
    path = next(out.rglob("seed0.jsonl"))
    rec = Record.load(path)
    folder = str(path.parent)
    turns = {t["step"]: t for t in rec.of_type("turn")}
    calls = rec.of_type("model_call")
    entries: list[dict[str, Any]] = []
    summaries = [e for e in calls if (e.get("annotations") or {}).get("kind") == "summary"]
    if summaries:
        e = summaries[0]  # the first: the shortest history quoted
        r = rec.request(e["request"])
        asks = [a for a in ASKS.get(framework, []) if a in _text(r)]
        keep = {len(r.messages) - 1} if r.messages else set()
        # And the latest user message holding a turn's words: what the summary's goal is
        # (Codex's compaction comes after the tool call and answer, five messages on).
        asked = [i for i, m in enumerate(r.messages) if m.role == "user"
                 and any(t["text"] in m.plain_text() for t in turns.values())]
        keep |= set(asked[-1:])
        entries.append({"what": "summary_request", "asks": asks,
                        "request": request_to_dict(_cut(r, keep))})
    if framework in WHOLE_FIRST:
        # The session's first request whole: the CLI's own long instructions, which must read
        # as neither a question nor a summary ask.
        first = min(turns)
        e = next(e for e in calls if e["step"] == first)
        turn = turns[first]
        now_text = _time_text(framework, turn["now"])
        r = replace(rec.request(e["request"]), session_id="")
        entries.append({"what": "turn", "question": turn["text"], "now": turn["now"],
                        "time_text": now_text if now_text in _text(r) else "",
                        "summary_text": "", "request": request_to_dict(r)})
    last_step = max(turns)
    turn = turns[last_step]
    # The first call of the last turn whose request holds its words (a CLI may compact
    # before it: Codex's pre-turn compaction request does not hold the new question).
    answering = [e for e in calls if e["step"] == last_step and e["purpose"] == "reply"
                 and any(m.role == "user" and turn["text"] in m.plain_text()
                         for m in rec.request(e["request"]).messages)]
    e = answering[0]
    r = rec.request(e["request"])
    now_text = _time_text(framework, turn["now"]) if framework in TIME_FORMS else ""
    question_at = max(i for i, m in enumerate(r.messages)
                      if m.role == "user" and turn["text"] in m.plain_text())
    # And the message stating the time, when another message states it (smolagents' system
    # prompt is its first message; DSPy's and CAMEL's user messages each state their own).
    keep = {question_at}
    if now_text not in r.messages[question_at].plain_text():
        keep |= {i for i, m in enumerate(r.messages) if now_text and now_text in m.plain_text()}
    # The latest summary the model wrote that this request hands back (a JSON answer, to a
    # response_format, is handed back as its text field) and that keeps a standing instruction:
    # ADK keeps every compaction's summary, and those of small talk alone state nothing.
    summary_text = next((t for t in map(_written, reversed(summaries))
                         if t and t in _text(r) and "[constraint:" in t), "")
    presented = bool(summary_text)
    if presented:
        keep |= {i for i, m in enumerate(r.messages) if summary_text in m.plain_text()}
    entries.append({"what": "turn", "question": turn["text"], "now": turn["now"],
                    "time_text": now_text if now_text in _text(r) else "",
                    "summary_text": summary_text if presented else "",
                    "request": request_to_dict(_cut(r, keep))})
    return {"framework": framework, "version": version, "scenario": rec.header["scenario"],
            "example": f"examples/{framework}_agent.py",
            "entries": _anonymised(entries, folder)}


if __name__ == "__main__":
    name, ver, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    data = capture(name, ver, folder)
    target = Path(__file__).parent / f"{name}.json"
    target.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{target}: {len(data['entries'])} requests")
