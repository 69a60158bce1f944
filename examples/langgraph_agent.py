"""A LangGraph agent, tested black-box by harnesslab (pip install 'harnesslab[langgraph,mcp]'):
    harnesslab run --set harness=cmd:"python examples/langgraph_agent.py"

Its own context handling, as LangGraph's documentation teaches it:
- trimming: every model call sees the system prompt and the newest messages that fit
  MAX_TOKENS by LangChain's approximate count (trim_messages, strategy "last", starting on a
  human message);
- summarising: after an answer, when the conversation holds more than KEEP_BEFORE_SUMMARY
  messages, the model summarises it (extending the previous summary) and all but the last two
  messages are removed; the summary is given back as a system message on every call.
It states no time to the model. Its tools come from the bench's MCP server
(HARNESSLAB_MCP_URL, with the session's bearer token), the model from OPENAI_BASE_URL.
Its state is kept by a SQLite checkpointer in HARNESSLAB_WORKDIR (thread id: the session id),
so a restarted or second process picks the conversation up (after a kill, from the last
finished turn: the turn in flight is dropped); `--no-checkpointer` keeps it in memory only
(the control: a restart forgets). Protocol lines go over the bench's channel
(HARNESSLAB_PROTOCOL_IN / _OUT), so what LangChain prints cannot corrupt them.
"""
import asyncio
import contextlib
import json
import os
import sys

from langchain_core.messages import (AIMessage, HumanMessage, RemoveMessage, SystemMessage,
                                     ToolMessage, trim_messages)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from openai import BadRequestError

SYSTEM = "You are a customer-service assistant."
MAX_TOKENS = 2000          # what each model call may carry, by the approximate count
KEEP_BEFORE_SUMMARY = 6    # summarise when the conversation holds more messages than this
CONFIG = {"configurable": {"thread_id": os.environ.get("HARNESSLAB_SESSION_ID", "session")}}


class State(MessagesState):
    summary: str


def mcp_tools(client: Client, listed: list) -> list[StructuredTool]:
    def make(name: str):
        async def run(**arguments):
            out = await client.call_tool(name, arguments)
            return "".join(getattr(c, "text", "") for c in out.content)
        return run
    return [StructuredTool.from_function(coroutine=make(t.name), name=t.name,
                                         description=t.description or t.name,
                                         args_schema=t.input_schema) for t in listed]


def build(model: ChatOpenAI, tools: list[StructuredTool], checkpointer):
    bound = model.bind_tools(tools)

    async def call_model(state: State) -> dict:
        head = [SystemMessage(SYSTEM)]
        if state.get("summary"):
            head.append(SystemMessage(f"Summary of the conversation earlier: {state['summary']}"))
        recent = trim_messages(state["messages"], max_tokens=MAX_TOKENS, strategy="last",
                               token_counter=count_tokens_approximately, start_on="human",
                               end_on=("human", "tool"))
        return {"messages": [await bound.ainvoke(head + recent)]}

    async def summarize(state: State) -> dict:
        summary = state.get("summary", "")
        ask = (f"This is the summary of the conversation to date: {summary}\n\nExtend the "
               "summary by taking into account the new messages above:") if summary else \
            "Create a summary of the conversation above:"
        reply = await model.ainvoke(state["messages"] + [HumanMessage(ask)])
        return {"summary": reply.content,
                "messages": [RemoveMessage(id=m.id) for m in state["messages"][:-2]]}

    def route(state: State) -> str:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return "tools"
        return "summarize" if len(state["messages"]) > KEEP_BEFORE_SUMMARY else END

    g = StateGraph(State)
    g.add_node("model", call_model)
    g.add_node("tools", ToolNode(tools))
    g.add_node("summarize", summarize)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", "summarize", END])
    g.add_edge("tools", "model")
    g.add_edge("summarize", END)
    return g.compile(checkpointer=checkpointer)


def as_message(m: dict):
    if m["role"] == "user":
        return HumanMessage(m["content"])
    if m["role"] == "tool":
        return ToolMessage(m["content"], tool_call_id=m["tool_call_id"])
    return AIMessage(m.get("content") or "", tool_calls=[
        {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
        for c in m.get("tool_calls", [])])


PROTOCOL_IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
PROTOCOL_OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")


def send(obj: dict) -> None:
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


async def main() -> None:
    http = create_mcp_http_client(
        headers={"Authorization": f"Bearer {os.environ['HARNESSLAB_MCP_TOKEN']}"})
    workdir = os.environ.get("HARNESSLAB_WORKDIR")
    if "--no-checkpointer" in sys.argv or not workdir:
        store = contextlib.nullcontext(InMemorySaver())
    else:
        store = AsyncSqliteSaver.from_conn_string(os.path.join(workdir, "checkpoints.sqlite"))
    async with store as checkpointer, Client(streamable_http_client(
            os.environ["HARNESSLAB_MCP_URL"], http_client=http)) as client:
        tools = mcp_tools(client, (await client.list_tools()).tools)
        model = ChatOpenAI(model="harnesslab", base_url=os.environ["OPENAI_BASE_URL"],
                           api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
        graph = build(model, tools, checkpointer)
        # A turn killed mid-flight left a run with nodes still to do: drop it, and go on from
        # the last checkpoint where a turn had finished (its answer given).
        start = CONFIG
        if (await graph.aget_state(CONFIG)).next:
            async for snap in graph.aget_state_history(CONFIG):
                if not snap.next:
                    start = snap.config
                    break
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, PROTOCOL_IN.readline):
            msg = json.loads(line)
            if msg["type"] == "shutdown":
                break
            if msg["type"] == "user":
                parts = [{"type": "image_url",
                          "image_url": {"url": f"data:{i['media_type']};base64,{i['data']}"}}
                         for i in msg["images"]]
                content = [{"type": "text", "text": msg["text"]}, *parts] if parts else msg["text"]
                try:
                    # durability="sync": each step's checkpoint is written before the next
                    # step runs (the default, "async", writes it alongside, so a kill can lose
                    # the tool step and leave a call without its result in the store).
                    state = await graph.ainvoke({"messages": [HumanMessage(content)]}, start,
                                                durability="sync")
                    start = CONFIG
                    answers = [m for m in state["messages"] if isinstance(m, AIMessage)]
                    out = {"text": answers[-1].content if answers else ""}
                except BadRequestError as e:  # e.g. context_length_exceeded
                    out = {"text": "", "failed": True, "reason": str(e.code or "rejected")}
                send({"type": "reply", **out})
            elif msg["type"] == "preload":  # the filler: earlier exchanges, as if they happened
                history = [as_message(m) for exchange in msg["exchanges"] for m in exchange]
                await graph.aupdate_state(CONFIG, {"messages": history})
                send({"type": "ok"})
            else:  # hello, advance: this agent does not tell the model the time
                send({"type": "ok"})


if __name__ == "__main__":
    asyncio.run(main())
