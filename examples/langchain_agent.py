"""A LangChain v1 agent (create_agent), tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/langgraph && /work/fw/langgraph/bin/pip install langchain langchain-openai langchain-ollama
    harnesslab run --set harness=cmd:"/work/fw/langgraph/bin/python examples/langchain_agent.py"

Its context management, as LangChain's documentation configures it:
- SummarizationMiddleware (langchain/agents/middleware/summarization.py): when the
  conversation reaches TRIGGER_TOKENS by count_tokens_approximately, the older messages are
  summarised by a separate call (DEFAULT_SUMMARY_PROMPT, the old messages quoted in one user
  message) and replaced by "Here is a summary of the conversation to date:" plus the summary,
  keeping the newest KEEP_MESSAGES messages;
- a dynamic system prompt (@dynamic_prompt) stating "Current time: <ISO>" on every call;
- the checkpointer keeps the thread's state between turns.

``--ollama``: the same agent on ``ChatOllama`` (langchain-ollama), as its documentation sets one
up: ``ChatOllama(model=...)``, the host and key from ``OLLAMA_HOST`` and ``OLLAMA_API_KEY``,
which the bench points at the session's ``/api/chat``; there Ollama's own truncation applies.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os
import sys

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware, dynamic_prompt
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from openai import BadRequestError

TRIGGER_TOKENS = 3000
KEEP_MESSAGES = 6
NOW = {"iso": ""}
if "--ollama" in sys.argv:
    from langchain_ollama import ChatOllama
    from ollama import ResponseError

    model = ChatOllama(model="harnesslab", temperature=0)
    REFUSED: tuple[type[Exception], ...] = (ResponseError,)
else:
    model = ChatOpenAI(model="harnesslab", temperature=0)
    REFUSED = (BadRequestError,)


def tool(schema: dict) -> StructuredTool:
    fn = schema["function"]
    return StructuredTool.from_function(
        func=lambda **kw: call_tool(fn["name"], kw), name=fn["name"],
        description=fn.get("description") or fn["name"], args_schema=fn["parameters"])


@dynamic_prompt
def with_time(request) -> str:
    return f"You are a customer-service assistant.\nCurrent time: {NOW['iso']}"


agent = create_agent(model, tools=[tool(t) for t in TOOLS], checkpointer=InMemorySaver(),
                     middleware=[with_time, SummarizationMiddleware(
                         model=model, trigger=("tokens", TRIGGER_TOKENS),
                         keep=("messages", KEEP_MESSAGES))])
CONFIG = {"configurable": {"thread_id": os.environ.get("HARNESSLAB_SESSION_ID", "s")},
          "recursion_limit": 25}


def answer(text: str, now: str) -> str:
    NOW["iso"] = now
    try:
        out = agent.invoke({"messages": [{"role": "user", "content": text}]}, CONFIG)
    except REFUSED as e:  # e.g. context_length_exceeded
        raise Failed(str(getattr(e, "code", None) or "rejected")) from None
    return out["messages"][-1].content


serve(answer)
