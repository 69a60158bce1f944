"""A Griptape Agent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/griptape && /work/fw/griptape/bin/pip install griptape openai
    harnesslab run --set harness=cmd:"/work/fw/griptape/bin/python examples/griptape_agent.py"

Its context management, as Griptape's documentation configures it: the Agent's conversation
memory is a SummaryConversationMemory (griptape/memory/structure/summary_conversation_memory.py)
that keeps the newest OFFSET runs whole and, after each run, summarises the older ones into one
running summary by a separate call (its summarize_conversation.j2 template: the earlier summary
and the runs quoted as ``Human: ...`` / ``Assistant: ...`` in one user message); the summary
is handed back as a user message ``Summary of the conversation so far: ...``. Only a run's
input and final output are kept (tool calls and results are not). The tools are activities of
one Griptape tool, offered as ``Shop_track_order``, ...; the time is a rule of the Agent's
ruleset (``Current time: <ISO>``), set before each run.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os

from griptape.artifacts import ErrorArtifact, TextArtifact
from griptape.drivers.prompt.openai import OpenAiChatPromptDriver
from griptape.memory.structure import SummaryConversationMemory
from griptape.rules import Rule, Ruleset
from griptape.structures import Agent
from griptape.tools import BaseTool
from griptape.utils.decorators import activity
from openai import BadRequestError
from schema import Literal, Optional, Schema

OFFSET = 2
driver = OpenAiChatPromptDriver(model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"],
                                api_key=os.environ.get("OPENAI_API_KEY", "x"))


def _activity(schema: dict):
    fn = schema["function"]
    params = fn["parameters"]
    required = set(params.get("required", []))
    keys = {(Literal if k in required else Optional)(k, description=p.get("description", k)): str
            for k, p in params.get("properties", {}).items()}

    @activity(config={"name": fn["name"], "description": fn.get("description") or fn["name"],
                      **({"schema": Schema(keys)} if keys else {})})
    def run(self, params: dict):
        text = call_tool(fn["name"], params.get("values") or {})
        return TextArtifact(text)

    return run


# One tool whose activities are the bench's tools (Griptape names them Shop_<activity>).
Shop = type("Shop", (BaseTool,), {t["function"]["name"]: _activity(t) for t in TOOLS})
clock = Ruleset(name="Clock", rules=[])
agent = Agent(prompt_driver=driver, tools=[Shop(name="Shop")], rulesets=[
    Ruleset(name="Role", rules=[Rule("You are a customer-service assistant.")]), clock],
    conversation_memory=SummaryConversationMemory(prompt_driver=driver, offset=OFFSET))


def answer(text: str, now: str) -> str:
    clock.rules = [Rule(f"Current time: {now}")]
    try:
        out = agent.run(text).output
    except BadRequestError as e:
        raise Failed(str(e.code or "rejected")) from None
    if isinstance(out, ErrorArtifact):
        raise Failed(out.value)
    return out.to_text()


serve(answer)
