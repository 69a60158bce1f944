"""An autogen-agentchat AssistantAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/autogen && /work/fw/autogen/bin/pip install autogen-agentchat "autogen-ext[openai]"
    harnesslab run --set harness=cmd:"/work/fw/autogen/bin/python examples/autogen_agent.py"

Its context management, as autogen's documentation configures it: the agent's model_context
is a TokenLimitedChatCompletionContext (autogen_core/model_context/
_token_limited_chat_completion_context.py): every call sends the system message and the
newest messages that fit TOKEN_LIMIT by the model client's count; older ones are dropped
(autogen has no summariser of its own). The system message states the time as "Today is
<ISO>" (the agent is rebuilt each turn with the same context, which keeps the messages).

Counted once per message (CountedTokenLimitedContext, the same views): autogen's
TokenLimitedChatCompletionContext.get_messages trims by popping the middle message and
recounting the whole stored list with count_tokens after each pop (count_tokens_openai in
autogen_ext/models/openai/_openai_client.py), and the context stores every message ever
added, so one call costs O(n^2) token counts and a run of many short turns O(n^3)
(brevity-30-turns-zh did not finish in 25 minutes: 5 s a call at 320 stored messages on the
shared machine). count_tokens_openai is a sum over messages plus a constant, so the subclass
counts each message once and pops exactly as get_messages does; `--autogen-count` uses
autogen's own class unchanged.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_core.model_context import TokenLimitedChatCompletionContext
from autogen_core.models import FunctionExecutionResultMessage, LLMMessage, ModelInfo
from autogen_core.tools import BaseTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from openai import BadRequestError
from pydantic import BaseModel, create_model

TOKEN_LIMIT = 3000
client = OpenAIChatCompletionClient(
    model="harnesslab", model_info=ModelInfo(vision=False, function_calling=True, json_output=True,
                                             family="unknown", structured_output=False))


class CountedTokenLimitedContext(TokenLimitedChatCompletionContext):
    """TokenLimitedChatCompletionContext.get_messages (token_limit set), each message counted once."""

    _counted: dict[int, tuple[LLMMessage, int]] = {}  # id -> (the message, kept alive; its tokens)

    def _tokens(self, m: LLMMessage, empty: int) -> int:
        if id(m) not in self._counted:
            self._counted[id(m)] = (m, self._model_client.count_tokens([m], tools=self._tool_schema) - empty)
        return self._counted[id(m)][1]

    async def get_messages(self) -> list[LLMMessage]:
        assert self._token_limit is not None
        empty = self._model_client.count_tokens([], tools=self._tool_schema)
        messages = list(self._messages)
        counts = [self._tokens(m, empty) for m in messages]
        total = empty + sum(counts)
        while total > self._token_limit and messages:
            middle = len(messages) // 2
            messages.pop(middle)
            total -= counts.pop(middle)
        if messages and isinstance(messages[0], FunctionExecutionResultMessage):
            messages = messages[1:]
        return messages


context = (TokenLimitedChatCompletionContext if "--autogen-count" in sys.argv
           else CountedTokenLimitedContext)(client, token_limit=TOKEN_LIMIT)


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
