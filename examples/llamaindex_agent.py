"""A llama-index FunctionAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/llamaindex && /work/fw/llamaindex/bin/pip install llama-index-core llama-index-llms-openai llama-index-llms-ollama
    harnesslab run --set harness=cmd:"/work/fw/llamaindex/bin/python examples/llamaindex_agent.py"

Its context management, as llama-index's documentation configures it: the agent's memory is
a ChatSummaryMemoryBuffer (llama_index/core/memory/chat_summary_memory_buffer.py): when the
history exceeds TOKEN_LIMIT, the oldest messages are summarised by a separate call (system:
"The following is a conversation ... Write a concise summary ...", the old messages as one
user message) and the summary is given back as a system message. The system prompt states
the time as "现在是 <ISO>".
``--react``: a ReActAgent instead, which offers the tools in its prompt (Thought / Action /
Action Input lines, results handed back as "Observation: ...") and none to the API.
``--ollama``: the model is llama-index's ``Ollama`` (llama-index-llms-ollama) on the session's
Ollama ``/api/chat`` (``OLLAMA_HOST``; the key from ``OLLAMA_API_KEY``, which the ollama client
sends), as its documentation sets one up: its context window left unset, so it asks the server
(``/api/show``) and sends it as ``num_ctx``.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio
import os
import sys

from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.memory import ChatSummaryMemoryBuffer
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI
from openai import BadRequestError
from pydantic import create_model

TOKEN_LIMIT = 3000
if "--ollama" in sys.argv:
    from llama_index.llms.ollama import Ollama
    from ollama import ResponseError

    llm = Ollama(model="harnesslab", base_url=os.environ["OLLAMA_HOST"], temperature=0,
                 request_timeout=120)
    REFUSED: tuple[type[Exception], ...] = (ResponseError,)
else:
    llm = OpenAI(model="gpt-4o-mini", temperature=0, api_base=os.environ["OPENAI_BASE_URL"])  # the name only sizes llama-index's own window
    REFUSED = (BadRequestError,)
memory = ChatSummaryMemoryBuffer.from_defaults(llm=llm, token_limit=TOKEN_LIMIT)


def tool(schema: dict) -> FunctionTool:
    fn = schema["function"]
    props = fn["parameters"].get("properties", {})
    args = create_model(fn["name"] + "_args", **{k: (str | None, None) for k in props})

    def run(**kw: str | None) -> str:
        return call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None})

    return FunctionTool.from_defaults(fn=run, name=fn["name"], fn_schema=args,
                                      description=fn.get("description") or fn["name"])


tools = [tool(t) for t in TOOLS]
loop = asyncio.new_event_loop()  # one loop for the program's life: the client's connections live in it


def answer(text: str, now: str) -> str:
    agent = (ReActAgent if "--react" in sys.argv else FunctionAgent)(
        tools=tools, llm=llm, system_prompt=f"你是一家电商的客服助手。现在是 {now}")

    async def go() -> str:
        return str(await agent.run(user_msg=text, memory=memory, max_iterations=8))

    try:
        return loop.run_until_complete(go())
    except REFUSED as e:
        raise Failed(str(getattr(e, "code", None) or "rejected")) from None


serve(answer)
