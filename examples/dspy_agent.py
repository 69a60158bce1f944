"""A DSPy ReAct agent, tested black-box by harnesslab, in its own venv:
    python -m venv /work/fw/dspy && /work/fw/dspy/bin/pip install dspy
    harnesslab run --set harness=cmd:"/work/fw/dspy/bin/python examples/dspy_agent.py"

Its context management, as DSPy's tutorial on conversation history configures it: a
``dspy.ReAct`` module over the signature ``history, now, question -> answer``, each turn
appended to a ``dspy.History`` as the tutorial does (its inputs and every output: ReAct's
trajectory of thoughts, tool calls and observations, its reasoning and answer), never trimmed
or summarised. DSPy offers no tools to the API: its ChatAdapter lists them in the system
prompt and asks for the reply as ``[[ ## field ## ]]`` sections (``next_thought``,
``next_tool_name``, ``next_tool_args``); when a reply does not parse it asks again for one
JSON object of the same fields (its JSONAdapter). DSPy's response cache is off: a cached
reply is a call the bench never sees.
"""
# First: it routes what the framework logs on stdout to stderr before the framework loads.
from bench_loop import TOOLS, Failed, call_tool, serve
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no price list fetched
import dspy

lm = dspy.LM("openai/gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
             api_key=os.environ.get("OPENAI_API_KEY", "x"), cache=False, num_retries=0)
dspy.configure(lm=lm)


def tool(schema: dict) -> dspy.Tool:
    fn = schema["function"]
    props = fn["parameters"].get("properties", {})

    def run(**kw: str) -> str:
        return call_tool(fn["name"], {k: v for k, v in kw.items() if v is not None})

    return dspy.Tool(run, name=fn["name"], desc=fn.get("description") or fn["name"],
                     args={k: {"type": "string", **({"description": p["description"]}
                                                   if p.get("description") else {})}
                           for k, p in props.items()})


class Assist(dspy.Signature):
    """You are a customer-service assistant. Answer the customer's question."""

    history: dspy.History = dspy.InputField()
    now: str = dspy.InputField(desc="the current time")
    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


agent = dspy.ReAct(Assist, tools=[tool(t) for t in TOOLS], max_iters=6)
history: list[dict] = []


def answer(text: str, now: str) -> str:
    try:
        out = agent(history=dspy.History(messages=list(history)), now=now, question=text)
    except Exception as e:  # litellm's rejection of the request (a 400 from the service)
        if "BadRequest" in type(e).__name__ or "ContextWindow" in type(e).__name__:
            raise Failed(type(e).__name__) from None
        raise
    # As DSPy's tutorial appends a turn: its inputs and every output (ReAct's trajectory of
    # thoughts, calls and observations among them).
    history.append({"question": text, "now": now, **out})
    return out.answer


serve(answer)
