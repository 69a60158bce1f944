"""A black-box harness that compacts as Codex does when its own prompt is over its limit:
before every model call, whatever the history holds beyond the user's messages and the last
handoff (the model's answers, its tool calls and their results) is summarised into a new
handoff by a separate call, so no request ever shows an answer or a tool round again.
``--keep``: the control, the whole history resent and no summary call.
Standard library only, over the OpenAI chat wire (OPENAI_BASE_URL) and the bench's tools."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from bench_loop import TOOLS, call_tool, serve
from chat_wire import chat

KEEP = "--keep" in sys.argv
ASK = "Write a handoff summary of the conversation so far for another model."
users: list[str] = []
handoff: list[dict] = []
history: list[dict] = []  # since the last handoff: answers, tool calls, results


def context(now: str) -> list[dict]:
    head = [{"role": "system", "content": f"You are a support agent. Current time: {now}"}]
    return head + [{"role": "user", "content": u} for u in users] + handoff + history


def compact(now: str) -> None:
    global handoff
    if KEEP or not history:
        return
    summary = chat([*context(now), {"role": "user", "content": ASK}])
    handoff = [{"role": "user", "content": "Summary of the conversation so far: "
                + (summary.get("content") or "")}]
    history.clear()


def answer(text: str, now: str) -> str:
    if KEEP:  # one transcript in order, never cut
        history.append({"role": "user", "content": text})
    else:
        users.append(text)
    while True:
        compact(now)
        msg = chat(context(now), TOOLS)
        calls = msg.get("tool_calls") or []
        history.append({"role": "assistant", "content": msg.get("content"),
                        **({"tool_calls": calls} if calls else {})})
        if not calls:
            return msg.get("content") or ""
        for c in calls:
            history.append({"role": "tool", "tool_call_id": c["id"],
                            "content": call_tool(c["function"]["name"],
                                                 c["function"]["arguments"])})


serve(answer)
