"""A Semantic Kernel ChatCompletionAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/semantic-kernel && /work/fw/semantic-kernel/bin/pip install semantic-kernel
    harnesslab run --set harness=cmd:"/work/fw/semantic-kernel/bin/python examples/semantic_kernel_agent.py"

Its context management, as Semantic Kernel's documentation configures it: the thread's chat
history is a ChatHistorySummarizationReducer
(semantic_kernel/contents/history_reducer/chat_history_summarization_reducer.py), reduced
after each answer (``await thread.reduce()``, as the samples do): once the history holds more
than TARGET + THRESHOLD messages, the older ones (tool calls and results left out, its
default) are sent with the summarization instructions appended as a last system message, and
the answer replaces them as one summary message. The time is stated by a prompt template
function, ``{{time.now}}``, in the format of Semantic Kernel's own TimePlugin
(``Monday, December 07, 2026 08:15 AM``): the core plugin reads the wall clock and the
bench's clock is simulated, so the example's plugin of the same name gives the bench's "now".
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio
import inspect
import os
from datetime import datetime
from typing import Annotated

from openai import AsyncOpenAI, BadRequestError
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.contents import ChatHistorySummarizationReducer
from semantic_kernel.functions import KernelArguments, KernelFunctionFromMethod, kernel_function

TARGET, THRESHOLD = 6, 2
service = OpenAIChatCompletion(ai_model_id="gpt-4o-mini", async_client=AsyncOpenAI(
    base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "x")))


def tool(schema: dict) -> KernelFunctionFromMethod:
    # Semantic Kernel reads a function's parameters from its signature: the bench's schema
    # becomes one, every parameter an optional string.
    fn = schema["function"]
    props = fn["parameters"].get("properties", {})

    def run(**kw: str | None) -> str:
        return call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None})

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None,
                           annotation=Annotated[str | None, p.get("description", k)])
         for k, p in props.items()], return_annotation=str)
    return KernelFunctionFromMethod(
        kernel_function(run, name=fn["name"], description=fn.get("description") or fn["name"]),
        plugin_name="shop")


class BenchTime:
    """TimePlugin's ``now``, on the bench's clock instead of the wall clock."""

    def __init__(self) -> None:
        self.iso = ""

    @kernel_function(description="Get the current date and time in the local time zone")
    def now(self) -> str:
        return datetime.fromisoformat(self.iso).strftime("%A, %B %d, %Y %I:%M %p")


clock = BenchTime()
kernel = Kernel()
kernel.add_service(service)
kernel.add_plugin(clock, plugin_name="time")
for t in TOOLS:
    kernel.add_function("shop", tool(t))
agent = ChatCompletionAgent(
    kernel=kernel, name="helpdesk",
    instructions="You are a customer-service assistant. The current date and time is {{time.now}}.",
    arguments=KernelArguments(settings=service.get_prompt_execution_settings_class()(
        function_choice_behavior=FunctionChoiceBehavior.Auto())))
thread = ChatHistoryAgentThread(chat_history=ChatHistorySummarizationReducer(
    service=service, target_count=TARGET, threshold_count=THRESHOLD))
loop = asyncio.new_event_loop()  # one loop for the program's life: the client's connections live in it


def answer(text: str, now: str) -> str:
    clock.iso = now

    async def go() -> str:
        out = await agent.get_response(messages=text, thread=thread)
        await thread.reduce()
        return str(out.content or "")

    try:
        return loop.run_until_complete(go())
    except BadRequestError as e:
        raise Failed(str(e.code or "rejected")) from None
    except Exception as e:  # Semantic Kernel wraps the SDK's errors in its own
        if isinstance(e.__cause__, BadRequestError):
            raise Failed(str(e.__cause__.code or "rejected")) from None
        raise


serve(answer)
