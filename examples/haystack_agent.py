"""A haystack-ai Agent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/haystack && /work/fw/haystack/bin/pip install haystack-ai openai
    harnesslab run --set harness=cmd:"/work/fw/haystack/bin/python examples/haystack_agent.py"

Its context management, as haystack's documentation configures it: the Agent (OpenAIChatGenerator)
keeps the conversation as a list of ChatMessages that the program passes back in each turn
(without the system prompt, which the Agent renders and prepends each run), and a
CompactionHook under ``before_llm`` (haystack/hooks/compaction/hooks.py) with a
SummarizationCompactor (haystack/hooks/compaction/summarization.py): once the estimated
conversation (ApproximateTokenCounter) reaches ``compact_at`` of CONTEXT_WINDOW, the oldest
complete turns are summarised by a separate call (system: "You are compacting one portion of
a conversation ... Summarize only what you are given ...", the turns as one user message in
``<conversation_to_summarize>``) and replaced by a user message
``<conversation_summary>...</conversation_summary>``. The system prompt, a Jinja template of the
Agent, states the time as "Current date and time: <ISO>".
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os
import warnings

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # offline: no usage ping

from haystack.components.agents import Agent
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, ChatRole
from haystack.hooks.compaction import CompactionHook, SummarizationCompactor
from haystack.tools import Tool
from haystack.utils import Secret
from openai import BadRequestError

warnings.filterwarnings("ignore", message=".*experimental component.*")

CONTEXT_WINDOW = 4000  # compact at 70% (2800 tokens), down to 40%


def generator() -> OpenAIChatGenerator:
    return OpenAIChatGenerator(api_key=Secret.from_env_var("OPENAI_API_KEY"), model="gpt-4o-mini",
                               api_base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)


def tool(schema: dict) -> Tool:
    fn = schema["function"]

    def run(**kw: str | None) -> str:
        return call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None})

    return Tool(name=fn["name"], description=fn.get("description") or fn["name"],
                parameters=fn["parameters"], function=run)


hook = CompactionHook(
    # approximate_summary_tokens: the docs' knob for "about how long a summary comes out";
    # the default 1024 would give up nearly the whole history of a 4000-token window at once.
    compactor=SummarizationCompactor(chat_generator=generator(), approximate_summary_tokens=300),
    context_window=CONTEXT_WINDOW, compact_at=0.7, compact_to=0.4)
agent = Agent(chat_generator=generator(), tools=[tool(t) for t in TOOLS], max_agent_steps=8,
              system_prompt="You are a customer-service assistant. Current date and time: {{ now }}",
              required_variables=["now"], hooks={"before_llm": [hook]})
history: list[ChatMessage] = []


def _rejected(e: BaseException) -> BadRequestError | None:
    while e is not None:  # the Agent may wrap the client's error
        if isinstance(e, BadRequestError):
            return e
        e = e.__cause__ or e.__context__
    return None


def answer(text: str, now: str) -> str:
    global history
    try:
        result = agent.run(messages=[*history, ChatMessage.from_user(text)], now=now)
    except Exception as e:
        bad = _rejected(e)
        if bad is None:
            raise
        raise Failed(str(bad.code or "rejected")) from None
    # The conversation as the Agent left it (compacted), less the system prompt it renders anew.
    history = [m for m in result["messages"] if not m.is_from(ChatRole.SYSTEM)]
    return result["last_message"].text or ""


serve(answer)
