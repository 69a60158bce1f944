"""A CAMEL ChatAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/camel && /work/fw/camel/bin/pip install camel-ai
    harnesslab run --set harness=cmd:"/work/fw/camel/bin/python examples/camel_agent.py"

Its context management, as CAMEL's documentation configures it (camel/agents/chat_agent.py):
the agent's ChatHistoryMemory is sent whole with every call until its token count (CAMEL's
tiktoken counter) passes SUMMARIZE_AT percent of TOKEN_LIMIT; then a separate summariser agent
gets the conversation as text under CAMEL's default outline prompt (``Summarize the
conversation below. ...``), the memory is cleared and refilled with the system message, the
summary as an assistant message (``[CONTEXT_SUMMARY] The following is a summary of our
conversation from a previous session: ...`` with the user's messages listed after it) and the
turn's user message decorated as ``Based on the previous CONTEXT_SUMMARY, continue with my
current message: ...``. A tool result above TOKEN_LIMIT x SUMMARIZE_AT is cut to a prefix
behind a ``[TRUNCATED]`` notice. CAMEL keeps the system message in the memory, so the time
is stated with each user message (``[2026-12-07 08:15] ...``): CAMEL states none of its own.
The summaries are also written as markdown files (CAMEL's ContextUtility) under the
program's workdir (HARNESSLAB_WORKDIR).
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os
import tempfile
from datetime import datetime

from camel.agents import ChatAgent
from camel.models import ModelFactory
from camel.toolkits import FunctionTool
from camel.types import ModelPlatformType
from openai import BadRequestError

# CAMEL writes each summary as markdown under $CAMEL_WORKDIR/context_files: the bench's
# workdir for the program, never the folder it was started from.
os.environ.setdefault("CAMEL_WORKDIR", os.environ.get("HARNESSLAB_WORKDIR")
                      or tempfile.mkdtemp(prefix="camel-"))
# Below the smallest window of the bundled scenarios (4,096): CAMEL summarises at half of it,
# and leaves a context already over TOKEN_LIMIT as it is (camel/agents/chat_agent.py).
TOKEN_LIMIT, SUMMARIZE_AT = 4000, 50
model = ModelFactory.create(
    model_platform=ModelPlatformType.OPENAI_COMPATIBLE_MODEL, model_type="gpt-4o-mini",
    url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "x"),
    model_config_dict={"temperature": 0})


def tool(schema: dict) -> FunctionTool:
    name = schema["function"]["name"]

    def run(**kw: str) -> str:
        return call_tool(name, kw)

    run.__name__ = name
    return FunctionTool(run, openai_tool_schema=schema)


agent = ChatAgent(system_message="You are a customer-service assistant.", model=model,
                  tools=[tool(t) for t in TOOLS], token_limit=TOKEN_LIMIT,
                  summarize_threshold=SUMMARIZE_AT)


def answer(text: str, now: str) -> str:
    stamp = datetime.fromisoformat(now).strftime("%Y-%m-%d %H:%M")
    try:
        out = agent.step(f"[{stamp}] {text}")
    except BadRequestError as e:
        raise Failed(str(e.code or "rejected")) from None
    except Exception as e:  # CAMEL wraps a failed model call in its own error
        if isinstance(e.__cause__, BadRequestError):
            raise Failed(str(e.__cause__.code or "rejected")) from None
        raise
    if out.info.get("termination_reasons") and not out.msgs:
        raise Failed(", ".join(out.info["termination_reasons"]))
    return str(out.msgs[-1].content if out.msgs else "")


serve(answer)
