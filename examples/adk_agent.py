"""A Google ADK LlmAgent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/google-adk && /work/fw/google-adk/bin/pip install google-adk litellm
    harnesslab run --set harness=cmd:"/work/fw/google-adk/bin/python examples/adk_agent.py"

Its context management, as ADK's documentation configures it: one session in an
InMemorySessionService, run by a Runner over an App with event compaction
(``EventsCompactionConfig(compaction_interval=COMPACT_EVERY, overlap_size=1)``): after every
COMPACT_EVERY new invocations, ADK's LlmEventSummarizer (google/adk/apps/llm_event_summarizer.py)
asks the model in one user message ("The following is a conversation history between a user
and an AI agent ... Please identify and reiterate the user request, summarize the context so
far ...", the events quoted as ``helpdesk: ...``, ``helpdesk called tool: ...``, ``Tool response
from ...: ...``) and the summary stands for those events from then on. The model through
LiteLLM (``openai/...`` at OPENAI_BASE_URL); each tool returns the bench's text, which ADK
hands the model wrapped as ``{"result": "<text>"}``. The time is stated by an instruction
provider, ``Current time: <ISO>``.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import asyncio
import os

# LiteLLM fetches a model price map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps.app import App, EventsCompactionConfig  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.genai import types  # noqa: E402

COMPACT_EVERY = 3
SESSION = os.environ.get("HARNESSLAB_SESSION_ID", "s")
USER = "customer"


class BenchTool(BaseTool):
    """One of the bench's tools, declared with the bench's JSON schema."""

    def __init__(self, schema: dict) -> None:
        fn = schema["function"]
        super().__init__(name=fn["name"], description=fn.get("description") or fn["name"])
        self._parameters = fn["parameters"]

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=self._parameters)

    async def run_async(self, *, args: dict, tool_context: object) -> str:
        return call_tool(self.name, args)


clock = {"now": ""}
agent = LlmAgent(
    name="helpdesk",
    model=LiteLlm(model="openai/gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                  api_key=os.environ.get("OPENAI_API_KEY", "x")),
    instruction=lambda ctx: f"You are a customer-service assistant. Current time: {clock['now']}",
    tools=[BenchTool(t) for t in TOOLS])
app = App(name="shop", root_agent=agent, events_compaction_config=EventsCompactionConfig(
    compaction_interval=COMPACT_EVERY, overlap_size=1))
sessions = InMemorySessionService()
runner = Runner(app=app, session_service=sessions)
loop = asyncio.new_event_loop()  # one loop for the program's life: the client's connections live in it
loop.run_until_complete(sessions.create_session(app_name="shop", user_id=USER, session_id=SESSION))


def answer(text: str, now: str) -> str:
    clock["now"] = now

    async def go() -> str:
        out = ""
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(user_id=USER, session_id=SESSION,
                                            new_message=message):
            if event.error_code:  # a rejected call (ADK reports it as an event)
                raise Failed(str(event.error_code))
            if event.is_final_response() and event.content and event.content.parts:
                out = "".join(p.text or "" for p in event.content.parts)
        return out

    try:
        return loop.run_until_complete(go())
    except Failed:
        raise
    except Exception as e:  # LiteLLM raises its own error types for a rejected request
        if "BadRequest" in type(e).__name__ or "ContextWindow" in type(e).__name__:
            raise Failed(type(e).__name__) from None
        raise


serve(answer)
