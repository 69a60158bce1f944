"""An agno Agent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/agno && /work/fw/agno/bin/pip install agno openai sqlalchemy
    harnesslab run --set harness=cmd:"/work/fw/agno/bin/python examples/agno_agent.py"

Its context management, as agno's documentation configures it (agno/agent/agent.py):
- add_history_to_context with num_history_runs=HISTORY_RUNS: each call sends the last runs
  of the session (stored in an in-memory db), older ones are not sent;
- enable_session_summaries with add_session_summary_to_context: after each run a separate
  call (agno/session/summary.py: system "Analyze the following conversation ... extract ...
  Summary ...", the conversation quoted in <conversation>, user "Provide the summary of the
  conversation.") writes the session summary, given back in the system message;
- the time, in agno's own words ("The current time is <time>.", agno/agent/_messages.py,
  add_datetime_to_context): agno's option reads the wall clock and the bench's clock is
  simulated, so the example states the bench's "now" in those words through
  additional_context, which agno adds to the system message.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.openai import OpenAIChat
from agno.tools.function import Function

HISTORY_RUNS = 3
SESSION = os.environ.get("HARNESSLAB_SESSION_ID", "s")


def tool(schema: dict) -> Function:
    fn = schema["function"]

    def run(**kw: str) -> str:
        return call_tool(fn["name"], kw)

    return Function(name=fn["name"], description=fn.get("description") or fn["name"],
                    parameters=fn["parameters"], entrypoint=run, skip_entrypoint_processing=True)


agent = Agent(model=OpenAIChat(id="gpt-4o-mini"), tools=[tool(t) for t in TOOLS],
              db=InMemoryDb(), session_id=SESSION, add_history_to_context=True,
              num_history_runs=HISTORY_RUNS, enable_session_summaries=True,
              add_session_summary_to_context=True,
              instructions="You are a customer-service assistant.")


def answer(text: str, now: str) -> str:
    # agno states the wall clock (add_datetime_to_context); the bench's clock is simulated, so
    # the time is given the documented way for a custom value: additional_context.
    agent.additional_context = f"The current time is {now}."
    try:
        out = agent.run(text, session_id=SESSION)
    except Exception as e:  # agno wraps the SDK's errors
        raise Failed(type(e).__name__) from None
    return str(out.content or "")


serve(answer)
