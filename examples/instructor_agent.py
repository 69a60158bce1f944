"""An in-house support bot on the openai SDK with instructor for its answers, tested black-box
by harnesslab, in its own venv:
    python -m venv /work/fw/instructor && /work/fw/instructor/bin/pip install instructor
    harnesslab run --set harness=cmd:"/work/fw/instructor/bin/python examples/instructor_agent.py"

Its loop: the model is called with the tools until it stops calling them; then the answer is
asked as a pydantic model through instructor over the same messages, without the tools (as
LangGraph's ``response_format`` asks it), and its ``answer`` field given to the user.
``--mode JSON`` (or ``MD_JSON``, ``JSON_SCHEMA``, default ``TOOLS``) picks instructor's mode:
the schema in the system prompt with JSON mode or a ```json block asked for, structured
outputs, or a forced tool. Its context: the whole history, never trimmed or summarised (as
a simple bot keeps it), the time stated in the system prompt; each turn keeps its question,
its tool round and the answer given.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import sys

import instructor
from instructor.core import InstructorRetryException
from openai import BadRequestError, OpenAI
from pydantic import BaseModel

MODE = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "TOOLS"
raw = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
client = instructor.from_openai(raw, mode=getattr(instructor.Mode, MODE))
history: list[dict] = []


class Answer(BaseModel):
    """The reply to the customer."""
    answer: str
    needs_follow_up: bool


def answer(text: str, now: str | None) -> str:
    system = {"role": "system", "content": "You are a customer-service assistant."
              + (f" Current time: {now}." if now else "")}
    history.append({"role": "user", "content": text})
    turn_start = len(history)
    try:
        for _ in range(6):
            reply = raw.chat.completions.create(model="harnesslab", tools=TOOLS,
                                                messages=[system, *history]).choices[0].message
            if not reply.tool_calls:
                break
            history.append({"role": "assistant", "content": reply.content, "tool_calls": [
                c.model_dump() for c in reply.tool_calls]})
            for c in reply.tool_calls:
                history.append({"role": "tool", "tool_call_id": c.id,
                                "content": call_tool(c.function.name, c.function.arguments)})
        got = client.chat.completions.create(model="harnesslab", response_model=Answer,
                                             messages=[system, *history], max_retries=1)
    except BadRequestError as e:  # the service's rejection (e.g. context_length_exceeded)
        del history[turn_start:]
        raise Failed(str(e.code or "rejected")) from None
    except InstructorRetryException as e:
        del history[turn_start:]
        raise Failed(f"no {Answer.__name__}: {type(e).__name__}") from None
    history.append({"role": "assistant", "content": got.answer})
    return got.answer


serve(answer)
