"""A Qwen-Agent Assistant, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/qwen-agent && /work/fw/qwen-agent/bin/pip install qwen-agent \
        numpy soundfile tqdm python-dateutil
    harnesslab run --set harness=cmd:"/work/fw/qwen-agent/bin/python examples/qwenagent_agent.py"

Its context management, as Qwen-Agent's README configures an Assistant: the conversation's
messages kept by the caller and passed back whole each turn (``bot.run(messages)``, the
responses appended), and Qwen-Agent's own cut before each call: at most ``max_input_tokens``
(here 3,000; 58,000 by default) by its Qwen tokenizer, older turns dropped first
(``_truncate_input_messages_roughly`` in ``qwen_agent/llm/base.py``). Over an
OpenAI-compatible endpoint Qwen-Agent offers no tools to the API by default: it writes their
JSON signatures into the system prompt inside ``<tools>`` and asks for each call as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` (its NousFnCallPrompt), handing
results back as ``<tool_response>`` user messages. The time in the system message
(``Current time: <ISO>``).
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import json
import os

from qwen_agent.agents import Assistant
from qwen_agent.tools.base import BaseTool

LLM = {"model": "qwen-max", "model_server": os.environ["OPENAI_BASE_URL"],
       "api_key": os.environ.get("OPENAI_API_KEY", "x"),
       "generate_cfg": {"max_input_tokens": 3000, "max_retries": 0}}


def tool(schema: dict) -> BaseTool:
    fn = schema["function"]

    class BenchTool(BaseTool):
        name = fn["name"]
        description = fn.get("description") or fn["name"]
        parameters = fn.get("parameters") or {"type": "object", "properties": {}}

        def call(self, params: str | dict, **kwargs: object) -> str:
            args = params if isinstance(params, dict) else json.loads(params or "{}")
            return call_tool(fn["name"], args)

    return BenchTool()


TOOL_OBJECTS = [tool(t) for t in TOOLS]
messages: list = []


def answer(text: str, now: str) -> str:
    bot = Assistant(llm=LLM, function_list=TOOL_OBJECTS,
                    system_message=f"You are a customer-service assistant. Current time: {now}")
    messages.append({"role": "user", "content": text})
    response: list = []
    try:
        for response in bot.run(messages=messages):
            pass
    except Exception as e:  # Qwen-Agent's ModelServiceError on the service's rejection
        if type(e).__name__ == "ModelServiceError":
            messages.pop()
            raise Failed(str(getattr(e, "code", "") or "rejected")) from None
        raise
    messages.extend(response)
    said = [m for m in response if m.get("role") == "assistant" and m.get("content")]
    content = said[-1]["content"] if said else ""
    return content if isinstance(content, str) else "".join(
        c.get("text", "") for c in content if isinstance(c, dict))


serve(answer)
