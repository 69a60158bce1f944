"""A black-box harness that speaks the output-fields protocol as DSPy's ReAct does through its
ChatAdapter: no tools offered to the API; the tools listed in the system prompt; each step one
user message holding the inputs and the trajectory so far as ``[[ ## name ## ]]`` sections,
ending with the fields asked for (``next_thought``, ``next_tool_name`` among the tools and
``finish``, ``next_tool_args``); after ``finish`` an extract step asking for ``reasoning`` and
``answer``. Each turn is kept as DSPy's tutorial keeps it (``dspy.History``): the question
and the trajectory, serialised as JSON (a result's quotes escaped inside it), and the answer.
- ``--answers-only``: each turn keeps only its question and answer (the trajectory's calls
  and results dropped): the follow-up looks the order up again (the control).
Standard library only, over the OpenAI chat wire (OPENAI_BASE_URL) and the bench's tools."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from bench_loop import TOOLS, call_tool, serve
from chat_wire import chat

ANSWERS_ONLY = "--answers-only" in sys.argv[1:]
NAMES = [t["function"]["name"] for t in TOOLS] + ["finish"]
SYSTEM = "When selecting the next_tool_name and its next_tool_args, the tool must be one of:\n" \
    + "\n".join(
    f"({i + 1}) {t['function']['name']}, whose description is <desc>"
    f"{t['function'].get('description', '')}</desc>. It takes arguments "
    f"{json.dumps(t['function']['parameters'].get('properties', {}))}."
    for i, t in enumerate(TOOLS)) + f"\n({len(TOOLS) + 1}) finish, whose description is " \
    "<desc>Marks the task as complete.</desc>."
STEP = ("Respond with the corresponding output fields, starting with the field "
        "`[[ ## next_thought ## ]]`, then `[[ ## next_tool_name ## ]]` (must be formatted as a "
        f"valid Python Literal{NAMES!r}), then `[[ ## next_tool_args ## ]]` (must be formatted "
        "as a valid Python dict[str, Any]), and then ending with the marker for "
        "`[[ ## completed ## ]]`.")
EXTRACT = ("Respond with the corresponding output fields, starting with the field "
           "`[[ ## reasoning ## ]]`, then `[[ ## answer ## ]]`, and then ending with the marker "
           "for `[[ ## completed ## ]]`.")
history: list[dict] = []


def sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[[ ## ") and s.endswith(" ## ]]"):
            name = s[6:-6]
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def render(now: str, question: str, trajectory: dict | None, ask: str) -> str:
    parts = [f"[[ ## now ## ]]\n{now}", f"[[ ## question ## ]]\n{question}"]
    if trajectory is not None:
        parts.append("[[ ## trajectory ## ]]\n" + "\n\n".join(
            f"[[ ## {k} ## ]]\n{v if isinstance(v, str) else json.dumps(v)}"
            for k, v in trajectory.items()))
    return "\n\n".join([*parts, ask])


def past() -> list[dict]:
    out = []
    for h in history:
        user = f"[[ ## now ## ]]\n{h['now']}\n\n[[ ## question ## ]]\n{h['question']}"
        if "trajectory" in h:
            user += "\n\n[[ ## trajectory ## ]]\n" + json.dumps(h["trajectory"], ensure_ascii=False)
        out += [{"role": "user", "content": user},
                {"role": "assistant", "content": f"[[ ## answer ## ]]\n{h['answer']}\n\n"
                 "[[ ## completed ## ]]"}]
    return out


def answer(text: str, now: str) -> str:
    trajectory: dict = {}
    for i in range(6):
        msg = chat([{"role": "system", "content": SYSTEM}, *past(),
                    {"role": "user", "content": render(now, text, trajectory, STEP)}])
        step = sections(msg.get("content") or "")
        name = step.get("next_tool_name", "finish")
        try:
            args = json.loads(step.get("next_tool_args") or "{}")
        except ValueError:
            args = {}
        trajectory[f"thought_{i}"] = step.get("next_thought", "")
        trajectory[f"tool_name_{i}"] = name
        trajectory[f"tool_args_{i}"] = args
        if name == "finish" or name not in NAMES:
            trajectory[f"observation_{i}"] = "Completed."
            break
        trajectory[f"observation_{i}"] = call_tool(name, args)
    msg = chat([{"role": "system", "content": SYSTEM}, *past(),
                {"role": "user", "content": render(now, text, trajectory, EXTRACT)}])
    said = sections(msg.get("content") or "").get("answer", "")
    kept = {"now": now, "question": text, "answer": said}
    if not ANSWERS_ONLY:
        kept["trajectory"] = trajectory
    history.append(kept)
    return said


serve(answer)
