"""A black-box harness whose summary is kept as an assistant message, as Semantic Kernel's
ChatHistorySummarizationReducer and CAMEL's ChatAgent keep theirs: after each answer, when
the history holds more than LIMIT messages, everything before the newest user message is
summarised by a separate call and replaced by one assistant message.
- default (Semantic Kernel): the summary request is the old messages themselves (tool calls
  and results left out) with the instructions as a last system message; the summary is kept
  verbatim;
- ``--quoted`` (CAMEL): the summary request is one user message quoting the old messages as
  text; the summary is kept under a heading of the harness's;
- ``--system`` (agno): as the default, but the summary is asked in a JSON schema
  (``{"summary": ...}``) and its value kept in the system prompt;
- ``--text-calls`` (smolagents): no summary ever; a tool call is kept as assistant text
  (``Calling tools: [...]``, its id included) and its result as a user message
  (``Observation: ...``), and the answer is given through a ``final_answer`` tool.
Standard library only, over the OpenAI chat wire (OPENAI_BASE_URL) and the bench's tools."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from bench_loop import TOOLS, call_tool, serve
from chat_wire import chat

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
LIMIT = 6
ASK = "Summarize the conversation above in a few sentences, keeping every fact and request."
FINAL = {"type": "function", "function": {
    "name": "final_answer", "description": "Give the final answer to the user.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}},
                   "required": ["answer"]}}}
history: list[dict] = []
kept_in_system = [""]


def reduce() -> None:
    cut = max(i for i, m in enumerate(history) if m["role"] == "user")
    if len(history) <= LIMIT or cut == 0:
        return
    old = history[:cut]
    if MODE == "--quoted":
        quoted = "\n".join(f"{m['role']}: {m.get('content') or json.dumps(m.get('tool_calls'))}"
                           for m in old)
        summary = chat([{"role": "system", "content": "You summarize conversations."},
                        {"role": "user", "content": f"{ASK}\n\nConversation:\n{quoted}"}])
        kept = f"[SUMMARY] Earlier in this conversation: {summary.get('content') or ''}"
    else:
        # Tool calls and their results left out, Semantic Kernel's default.
        plain = [m for m in old if m["role"] != "tool" and not m.get("tool_calls")]
        if MODE == "--system":
            schema = {"type": "object", "properties": {"summary": {"type": "string"}},
                      "required": ["summary"]}
            summary = chat([*plain, {"role": "system", "content": ASK}], response_format={
                "type": "json_schema", "json_schema": {"name": "Summary", "schema": schema}})
            kept = json.loads(summary.get("content") or "{}").get("summary") or ""
        else:
            summary = chat([*plain, {"role": "system", "content": ASK}])
            kept = summary.get("content") or ""
    if MODE == "--system":
        kept_in_system[0] = kept
        del history[:cut]
        return
    history[:cut] = [{"role": "assistant", "content": kept}]


def answer(text: str, now: str) -> str:
    system = {"role": "system", "content": f"You are a support agent. Current time: {now}" + (
        f"\n\nSummary of the earlier conversation:\n{kept_in_system[0]}"
        if kept_in_system[0] else "")}
    history.append({"role": "user", "content": text})
    while True:
        text_calls = MODE == "--text-calls"
        msg = chat([system, *history], [*TOOLS, FINAL], tool_choice="required") \
            if text_calls else chat([system, *history], TOOLS)
        calls = msg.get("tool_calls") or []
        if text_calls and calls:
            history.append({"role": "assistant", "content": "Calling tools:\n" + json.dumps(
                [{"id": c["id"], "type": "function", "function": c["function"]}
                 for c in calls], ensure_ascii=False)})
            done = [c for c in calls if c["function"]["name"] == "final_answer"]
            if done:
                return json.loads(done[0]["function"]["arguments"]).get("answer", "")
            history.append({"role": "user", "content": "Observation:\n" + "\n".join(
                call_tool(c["function"]["name"], c["function"]["arguments"]) for c in calls)})
            continue
        history.append({"role": "assistant", "content": msg.get("content"),
                        **({"tool_calls": calls} if calls else {})})
        if not calls:
            reduce()
            return msg.get("content") or ""
        for c in calls:
            history.append({"role": "tool", "tool_call_id": c["id"],
                            "content": call_tool(c["function"]["name"],
                                                 c["function"]["arguments"])})


serve(answer)
