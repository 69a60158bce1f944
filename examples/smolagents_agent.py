"""A smolagents ToolCallingAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/smolagents && /work/fw/smolagents/bin/pip install 'smolagents[openai]'
    harnesslab run --set harness=cmd:"/work/fw/smolagents/bin/python examples/smolagents_agent.py"

Its context management, as smolagents' documentation configures a conversation: one agent
whose memory runs on from task to task (``agent.run(task, reset=False)``), replayed whole with
every call: each task as a user message ``New task:\\n<task>``, each tool call as an assistant
message ``Calling tools: [...]`` and each result as a user message ``Observation: ...``
(smolagents/memory.py), never trimmed or summarised. Every call asks the API for a tool call
(``tool_choice: "required"``): the agent answers by calling its ``final_answer`` tool. The
time is stated through ``instructions`` (added to smolagents' system prompt) as
``It is now <ISO>.``: smolagents states none of its own.
``--code``: its CodeAgent instead (the agent its documentation leads with), which offers no
tools to the API: the tools are Python functions listed in its system prompt, the model
writes ``<code>`` blocks calling them and ``final_answer(...)``, and the printed results come
back as ``Observation:`` messages.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os
import sys

from openai import BadRequestError
from smolagents import CodeAgent, OpenAIServerModel, Tool, ToolCallingAgent

MAX_STEPS = 6
model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                          api_key=os.environ.get("OPENAI_API_KEY", "x"))


def tool(schema: dict) -> Tool:
    fn = schema["function"]
    props = fn["parameters"].get("properties", {})

    class BenchTool(Tool):
        name = fn["name"]
        description = fn.get("description") or fn["name"]
        inputs = {k: {"type": "string", "description": p.get("description", k), "nullable": True}
                  for k, p in props.items()}
        output_type = "string"
        skip_forward_signature_validation = True  # the parameters come from the schema

        def forward(self, **kw: str | None) -> str:
            return call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None})

    return BenchTool()


agent = (CodeAgent if "--code" in sys.argv else ToolCallingAgent)(
    tools=[tool(t) for t in TOOLS], model=model, max_steps=MAX_STEPS, verbosity_level=0)


def answer(text: str, now: str) -> str:
    agent.instructions = f"You are a customer-service assistant. It is now {now}."
    try:
        out = agent.run(text, reset=False)
    except BadRequestError as e:
        raise Failed(str(e.code or "rejected")) from None
    except Exception as e:  # smolagents wraps a failed model call in its own error
        if isinstance(e.__cause__, BadRequestError):
            raise Failed(str(e.__cause__.code or "rejected")) from None
        raise
    return str(out or "")


serve(answer)
