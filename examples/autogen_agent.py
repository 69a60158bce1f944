"""An autogen-agentchat AssistantAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/autogen && /work/fw/autogen/bin/pip install autogen-agentchat "autogen-ext[openai]"
    harnesslab run --set harness=cmd:"/work/fw/autogen/bin/python examples/autogen_agent.py"

Its context management, as autogen's documentation configures it: the agent's model_context
is a TokenLimitedChatCompletionContext (autogen_core/model_context/
_token_limited_chat_completion_context.py): every call sends the system message and the
newest messages that fit TOKEN_LIMIT by the model client's count; older ones are dropped
(autogen has no summariser of its own). The system message states the time as "Today is
<ISO>" (the agent is rebuilt each turn with the same context, which keeps the messages).
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_core.model_context import TokenLimitedChatCompletionContext
from autogen_core.models import ModelInfo
from autogen_core.tools import BaseTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from openai import BadRequestError
from pydantic import BaseModel, create_model

TOKEN_LIMIT = 3000
client = OpenAIChatCompletionClient(
    model="harnesslab", model_info=ModelInfo(vision=False, function_calling=True, json_output=True,
                                             family="unknown", structured_output=False))
context = TokenLimitedChatCompletionContext(client, token_limit=TOKEN_LIMIT)


class BenchTool(BaseTool[BaseModel, str]):
    def __init__(self, schema: dict) -> None:
        fn = schema["function"]
        props = fn["parameters"].get("properties", {})
        args = create_model(fn["name"] + "_args", **{k: (str | None, None) for k in props})
        super().__init__(args, str, fn["name"], fn.get("description") or fn["name"])

    async def run(self, args: BaseModel, cancellation_token) -> str:
        return call_tool(self.name, args.model_dump(exclude_none=True))


tools = [BenchTool(t) for t in TOOLS]
loop = asyncio.new_event_loop()  # one loop for the program's life: the client's connections live in it


def answer(text: str, now: str) -> str:
    agent = AssistantAgent("assistant", model_client=client, tools=tools, model_context=context,
                           reflect_on_tool_use=True, max_tool_iterations=8,
                           system_message=f"You are a customer-service assistant. Today is {now}.")
    try:
        result = loop.run_until_complete(agent.run(task=text))
    except BadRequestError as e:
        raise Failed(str(e.code or "rejected")) from None
    return str(result.messages[-1].content)


serve(answer)
