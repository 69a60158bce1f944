"""Tools offered in the prompt (``sim.react``): a harness that lists the tools in its
instructions and asks for ``Action:``/``Action Input:`` lines, or for code calling them as
Python functions, gets a model that follows them, and the judge reads the calls and the
answer so written."""

from __future__ import annotations

import json

from harnesslab.judge.checks import answer_call, answer_strings, called_tools
from harnesslab.messages import Request, TextBlock
from harnesslab.sim.model import ModelReply
from harnesslab.sim.react import answer_of, text_protocol

from .test_model import ASK_1001, WAIT, model, said, user

TOOLS_TEXT = """You have access to the following tools:
> Tool Name: track_order
Tool Description: Look up an order's current logistics status and ETA.
> Tool Name: search_kb
Tool Description: Search the store's policies.
"""
# LlamaIndex's ReActAgent's output format, abridged; CrewAI's asks for "Final Answer:".
LLAMA = TOOLS_TEXT + """Current time: 2026-11-28T10:00:00+08:00
```
Thought: I need to use a tool to help me answer the question.
Action: tool name (one of track_order, search_kb) if using a tool.
Action Input: the input to the tool, in a JSON format representing the kwargs
```
At that point, you MUST respond in the following format:
```
Thought: I can answer without using any more tools.
Answer: [your answer here]
```"""
CREW = TOOLS_TEXT.replace("> Tool Name: ", "Tool Name: ") + """Current time: 2026-11-28T10:00:00+08:00
Use the following format:
Thought: you should always think about what to do
Action: the action to take, only one name of [track_order, search_kb]
Action Input: the input to the action, just a simple JSON object
Observation: the result of the action
Once all necessary information is gathered:
Thought: I now know the final answer
Final Answer: the final answer to the original input question"""
RESULT = json.dumps({"tool": "track_order", "as_of": "2026-11-28T10:00:00+08:00",
                     "order_id": "O-1001", "status": "in_transit", "eta": "2026-11-30",
                     "location": "上海转运中心"}, ensure_ascii=False)


def text(r: ModelReply) -> str:
    (b,) = r.blocks
    assert isinstance(b, TextBlock)
    return b.text


def test_a_needed_lookup_is_written_as_an_action() -> None:
    r = model().reply(Request(LLAMA, (user(ASK_1001),)))
    assert text(r).splitlines()[1:] == ["Action: track_order",
                                        'Action Input: {"order_id": "O-1001"}']
    assert r.annotations["tool_protocol"] == "react"
    assert r.annotations["text_calls"] == [{"name": "track_order",
                                            "input": '{"order_id": "O-1001"}'}]


def test_the_observation_answers_after_the_prompts_marker() -> None:
    action = text(model().reply(Request(LLAMA, (user(ASK_1001),))))
    r = model().reply(Request(LLAMA, (user(ASK_1001), said(action),
                                      user("Observation: " + RESULT))))
    lines = text(r).splitlines()
    assert lines[0].startswith("Thought:") and lines[1].startswith("Answer: ")
    assert "2026-11-30" in lines[1] and r.annotations["kind"] == "answer"
    crew = model().reply(Request(CREW, (user(ASK_1001), said(action),
                                        user("Observation: " + RESULT))))
    assert text(crew).splitlines()[1].startswith("Final Answer: ")
    assert answer_of(text(crew)) == answer_of(text(r))
    # A follow-up later in the conversation resolves to the order the observation named.
    follow = model().reply(Request(LLAMA, (user(ASK_1001), said(action),
                                           user("Observation: " + RESULT), said(text(r)),
                                           user(WAIT))))
    assert follow.annotations["resolved"] == {"order": "O-1001"}


def test_the_control_tools_listed_without_the_protocol_are_not_offered() -> None:
    bare = TOOLS_TEXT + "Current time: 2026-11-28T10:00:00+08:00"
    r = model().reply(Request(bare, (user(ASK_1001),)))
    assert r.annotations.get("reason") == "tool_not_offered"
    assert "tool_protocol" not in r.annotations
    assert text_protocol(Request(bare, (user(ASK_1001),)), ["track_order"]) is None
    # Tools offered to the API win over the prompt's list: an ordinary tool call.
    from .test_model import ALL_TOOLS

    native = model().reply(Request(LLAMA, (user(ASK_1001),), tools=ALL_TOOLS))
    assert "tool_protocol" not in native.annotations
    assert native.blocks[0].__class__.__name__ == "ToolCallBlock"
    # Only the tools the instructions name are offered.
    got = text_protocol(Request(LLAMA, ()), ["track_order", "get_user_profile", "search_kb"])
    assert got is not None and got.tools == ("search_kb", "track_order")


def test_the_judge_reads_calls_and_answers_written_as_text() -> None:
    action = model().reply(Request(LLAMA, (user(ASK_1001),)))
    answer = model().reply(Request(LLAMA, (user(ASK_1001), said(text(action)),
                                           user("Observation: " + RESULT))))

    def event(r: ModelReply) -> dict[str, object]:
        return {"reply": [{"type": "text", "text": text(r)}], "annotations": r.annotations}

    assert [n for n, _ in called_tools(event(action))] == ["track_order"]
    assert called_tools(event(answer)) == []
    final = answer_of(text(answer))
    assert final and final in answer_strings(event(answer))
    calls = [event(answer), event(action)]  # not the last: found by its answer
    assert answer_call(calls, final) is calls[0]
    # The control: a reply with no marker gives no answer of its own.
    assert answer_of("订单 O-1001 在运输中。") is None


# smolagents' CodeAgent's system prompt, abridged.
CODE = """You have been given access to a list of tools: these tools are basically Python
functions which you can call with code. The code sequence must be opened with '<code>', and
closed with '</code>'. In the end you have to return a final answer using the `final_answer`
tool.
<code>
def track_order(order_id: string, user_id: string) -> string:
    \"\"\"Look up an order's current logistics status and ETA.\"\"\"

def final_answer(answer: any) -> any:
    \"\"\"Provides a final answer to the given problem.\"\"\"
</code>
Current time: 2026-11-28T10:00:00+08:00"""


def test_code_actions_call_the_tool_and_answer_through_final_answer() -> None:
    r = model().reply(Request(CODE, (user("New task:\n" + ASK_1001),)))
    assert text(r).splitlines()[1:] == ["<code>", 'result = track_order(order_id="O-1001")',
                                        "print(result)", "</code>"]
    assert r.annotations["tool_protocol"] == "code"
    assert [n for n, _ in called_tools({"reply": [], "annotations": r.annotations})] == \
        ["track_order"]
    done = model().reply(Request(CODE, (user("New task:\n" + ASK_1001), said(text(r)),
                                        user("Observation:\nExecution logs:\n" + RESULT))))
    final = answer_of(text(done))
    assert text(done).splitlines()[2].startswith("final_answer(\"") and final is not None
    assert "2026-11-30" in final and done.annotations["kind"] == "answer"
    # The control: the same functions with no code blocks asked for offer nothing.
    plain = CODE.replace("<code>", "").replace("</code>", "")
    assert text_protocol(Request(plain, (user(ASK_1001),)), ["track_order"]) is None


# DSPy's ReAct through its ChatAdapter (dspy 3.4), abridged: the tools in the system prompt,
# the inputs and the trajectory as marked sections of one user message, the output fields asked
# for at its end; the extract step after ``finish`` asks for ``reasoning`` and ``answer``.
DSPY_SYSTEM = """Your input fields are:
1. `now` (str): the current time
2. `question` (str):
3. `trajectory` (str):
Your output fields are:
1. `next_thought` (str):
2. `next_tool_name` (Literal['track_order', 'search_kb', 'finish']):
3. `next_tool_args` (dict[str, Any]):
When selecting the next_tool_name and its next_tool_args, the tool must be one of:
(1) track_order, whose description is <desc>Look up an order's current logistics status and
ETA.</desc>. It takes arguments {'order_id': {'type': 'string'}}.
(2) search_kb, whose description is <desc>Search the store's policies.</desc>.
(3) finish, whose description is <desc>Marks the task as complete.</desc>."""
STEP_FIELDS = ("Respond with the corresponding output fields, starting with the field "
               "`[[ ## next_thought ## ]]`, then `[[ ## next_tool_name ## ]]` (must be formatted "
               "as a valid Python Literal['track_order', 'search_kb', 'finish']), then "
               "`[[ ## next_tool_args ## ]]` (must be formatted as a valid Python dict[str, Any]), "
               "and then ending with the marker for `[[ ## completed ## ]]`.")
STEP_JSON = ("Respond with a JSON object in the following order of fields: `next_thought`, then "
             "`next_tool_name` (must be formatted as a valid Python Literal['track_order', "
             "'search_kb', 'finish']), then `next_tool_args` (must be formatted as a valid "
             "Python dict[str, Any]).")
EXTRACT_FIELDS = ("Respond with the corresponding output fields, starting with the field "
                  "`[[ ## reasoning ## ]]`, then `[[ ## answer ## ]]`, and then ending with the "
                  "marker for `[[ ## completed ## ]]`.")


def dspy_user(question: str, trajectory: str, ask: str) -> object:
    return user(f"[[ ## now ## ]]\n2026-11-28T10:00:00+08:00\n\n[[ ## question ## ]]\n{question}"
                f"\n\n[[ ## trajectory ## ]]\n{trajectory}\n\n{ask}")


def sections(reply: str) -> dict[str, str]:
    """The reply parsed as DSPy's ChatAdapter parses it: a value per ``[[ ## name ## ]]``."""
    out: dict[str, list[str]] = {}
    name = None
    for line in reply.splitlines():
        if line.startswith("[[ ## ") and line.endswith(" ## ]]"):
            name = line[6:-6]
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


TRAJECTORY = ("[[ ## thought_0 ## ]]\nI need to look the order up.\n\n[[ ## tool_name_0 ## ]]\n"
              "track_order\n\n[[ ## tool_args_0 ## ]]\n{\"order_id\": \"O-1001\"}\n\n"
              "[[ ## observation_0 ## ]]\n" + RESULT)


def test_output_fields_carry_the_call_the_finish_and_the_answer() -> None:
    r = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, "", STEP_FIELDS),)))
    got = sections(text(r))
    assert list(got) == ["next_thought", "next_tool_name", "next_tool_args", "completed"]
    assert got["next_tool_name"] == "track_order"
    assert json.loads(got["next_tool_args"]) == {"order_id": "O-1001"}
    assert r.annotations["tool_protocol"] == "fields"
    assert [n for n, _ in called_tools({"reply": [], "annotations": r.annotations})] == \
        ["track_order"]
    # With the observation in the trajectory: the loop ends on the value that names no tool.
    done = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, TRAJECTORY, STEP_FIELDS),)))
    assert sections(text(done))["next_tool_name"] == "finish"
    assert json.loads(sections(text(done))["next_tool_args"]) == {}
    # The extract step: the answer in its field, which the judge takes an answer from.
    final = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, TRAJECTORY, EXTRACT_FIELDS),)))
    answer = sections(text(final))["answer"]
    assert "2026-11-30" in answer and final.annotations["kind"] == "answer"
    assert answer in answer_strings({"reply": [{"type": "text", "text": text(final)}]})
    # JSONAdapter's form: the same fields as one JSON object.
    js = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, "", STEP_JSON),)).with_meta(
        ("response_format", '{"type": "json_object"}')))
    assert json.loads(text(js)) == {"next_thought": got["next_thought"],
                                    "next_tool_name": "track_order",
                                    "next_tool_args": {"order_id": "O-1001"}}


def test_the_control_fields_not_asked_for_offer_no_tool() -> None:
    # The same request without the sentence asking for the fields: the tools are only listed.
    r = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, "", ""),)))
    assert r.annotations.get("reason") == "tool_not_offered"
    assert "tool_protocol" not in r.annotations
    # And a Literal that names no tool of the world's offers none: no call is made.
    other = STEP_FIELDS.replace("'track_order', 'search_kb', ", "'lookup', ")
    o = model().reply(Request(DSPY_SYSTEM, (dspy_user(ASK_1001, "", other),)))
    assert o.annotations.get("reason") == "tool_not_offered" and "text_calls" not in o.annotations


# Qwen-Agent's NousFnCallPrompt (qwen-agent 0.0.34), its default over an OpenAI-compatible
# endpoint, and the Hermes chat templates: the signatures in <tools>, calls in <tool_call>.
TAGGED = """You are a helpful assistant. Current time: 2026-11-28T10:00:00+08:00

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "track_order", "description": "Look up an order's current logistics status and ETA.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>"""  # noqa: E501


def test_tagged_calls_are_written_in_tool_call_tags() -> None:
    r = model().reply(Request(TAGGED, (user(ASK_1001),)))
    assert text(r) == ('<tool_call>\n{"name": "track_order", "arguments": {"order_id": '
                       '"O-1001"}}\n</tool_call>')
    assert r.annotations["tool_protocol"] == "tagged"
    assert [n for n, _ in called_tools({"reply": [], "annotations": r.annotations})] == \
        ["track_order"]
    back = user(f"<tool_response>\n{RESULT}\n</tool_response>")
    done = model().reply(Request(TAGGED, (user(ASK_1001), said(text(r)), back)))
    assert "2026-11-30" in text(done) and done.annotations["kind"] == "answer"
    assert "<tool_call>" not in text(done)
    follow = model().reply(Request(TAGGED, (user(ASK_1001), said(text(r)), back,
                                            said(text(done)), user(WAIT))))
    assert follow.annotations["kind"] == "answer" and follow.annotations["resolved"] == \
        {"order": "O-1001"}
    # The control: the same signatures with no call format asked for offer nothing.
    bare = TAGGED.split("\n\nFor each function call")[0]
    assert model().reply(Request(bare, (user(ASK_1001),))).annotations.get("reason") == \
        "tool_not_offered"
