"""A BeeAI Framework ToolCallingAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/beeai && /work/fw/beeai/bin/pip install beeai-framework openai
    harnesslab run --set harness=cmd:"/work/fw/beeai/bin/python examples/beeai_agent.py"

Its context management, as BeeAI's documentation configures it: the agent's memory is a
SummarizeMemory (beeai_framework/memory/summarize_memory.py); after each run the agent
resets it and adds the run's messages (its default ``save_intermediate_steps``), and the
memory replaces everything it holds by one summary, written by a separate call (``Summarize
the following conversation. Be concise but include all key information.`` with the messages
quoted as ``role: text``), kept as a system message. Every call asks for a tool call, its
``final_answer`` tool being how it answers: against an endpoint of one's own (``base_url``)
BeeAI assumes the endpoint cannot force one and offers no tools to the API, asking for the
call as structured output instead (a ``response_format`` JSON schema, a choice of
``{"name": <tool>, "parameters": {...}}`` under ``item``: ChatModel's
tool_call_fallback_via_response_format, its default). ``--native-tools`` declares the
endpoint's tool_choice support instead: the tools offered to the API, ``tool_choice:
"required"``. The
time is BeeAI's own: its system prompt states ``The current date and time is: <ISO>`` through
the template function ``formatDate``, here on the bench's clock instead of the wall clock.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio
import os
import sys
from datetime import UTC, datetime

from beeai_framework.adapters.openai import OpenAIChatModel
from beeai_framework.agents.tool_calling import ToolCallingAgent
from beeai_framework.agents.tool_calling.prompts import ToolCallingAgentSystemPrompt
from beeai_framework.memory import SummarizeMemory
from beeai_framework.tools import StringToolOutput, tool as create_tool
from pydantic import Field, create_model

NOW = {"iso": ""}
NATIVE = {"tool_choice_support": {"required", "none", "single", "auto"}} \
    if "--native-tools" in sys.argv else {}
llm = OpenAIChatModel("gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"],
                      api_key=os.environ.get("OPENAI_API_KEY", "x"), **NATIVE)


def bench_tool(schema: dict):
    fn = schema["function"]
    props = fn["parameters"].get("properties", {})
    model = create_model(f"{fn['name']}_input", **{
        k: (str | None, Field(None, description=p.get("description", k))) for k, p in props.items()})

    def run(**kw: str | None) -> StringToolOutput:
        return StringToolOutput(call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None}))

    return create_tool(name=fn["name"], description=fn.get("description") or fn["name"],
                       input_schema=model)(run)


def now_utc(_data: dict) -> str:
    return datetime.fromisoformat(NOW["iso"]).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


system = ToolCallingAgentSystemPrompt.fork(None).update(
    functions={"formatDate": now_utc}, defaults={"role": "a customer-service assistant"})
agent = ToolCallingAgent(llm=llm, memory=SummarizeMemory(llm), tools=[bench_tool(t) for t in TOOLS],
                         templates={"system": system})
loop = asyncio.new_event_loop()


def answer(text: str, now: str) -> str:
    NOW["iso"] = now
    try:
        out = loop.run_until_complete(agent.run(text))
    except Exception as e:  # BeeAI wraps a failed model call in its own errors
        cause = e
        while cause is not None and type(cause).__name__ != "BadRequestError":
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            raise Failed(str(getattr(cause, "code", None) or "rejected")) from None
        raise
    return out.last_message.text if hasattr(out, "last_message") else out.output[-1].text


serve(answer)
