"""An agent on Ollama's native chat API (the official ollama client), tested black-box by harnesslab:
    harnesslab run --set harness=cmd:"python examples/ollama_agent.py [--num-ctx N]"
Its context handling: none of its own. The whole conversation is resent each call and Ollama
manages the window on the server: the context the model is loaded with (num_ctx, given by
--num-ctx) and, over it, Ollama's own truncation, which drops the oldest messages silently
(the record's calls say how many: server_truncation_rate). It states no time, binds tool calls
to the verified session user, and speaks the protocol on the bench's channel."""
import json
import os
import sys

import httpx
from ollama import Client, ResponseError

client = Client()  # OLLAMA_HOST and OLLAMA_API_KEY come from the environment
TOOLS_URL = os.environ["HARNESSLAB_TOOLS_URL"]
AUTH = {"Authorization": f"Bearer {os.environ['OLLAMA_API_KEY']}"}
TOOLS = httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]  # OpenAI's form, as Ollama takes it
USER = os.environ["HARNESSLAB_SESSION_USER"]
OPTIONS = {"num_ctx": int(sys.argv[sys.argv.index("--num-ctx") + 1])} if "--num-ctx" in sys.argv else {}
IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
history: list = [{"role": "system", "content": "You are a customer-service assistant."}]


def answer(text: str, images: list[dict]) -> dict:
    pictures = {"images": [i["data"] for i in images]} if images else {}
    history.append({"role": "user", "content": text, **pictures})
    for _ in range(8):
        try:
            resp = client.chat(model="qwen3", messages=history, tools=TOOLS, options=OPTIONS, stream=False)
        except ResponseError as e:  # e.g. the input length exceeds the context length
            history.pop()
            return {"text": "", "failed": True, "reason": str(e.error)[:80]}
        history.append(resp.message)  # as the client returns it: its calls carry no id
        if not resp.message.tool_calls:
            return {"text": resp.message.content or ""}
        for c in resp.message.tool_calls:
            args = dict(c.function.arguments)
            if "user_id" in args:
                args["user_id"] = USER  # the verified user, never the one the model names
            out = httpx.post(f"{TOOLS_URL}/{c.function.name}", headers=AUTH, json={"arguments": args}).json()
            history.append({"role": "tool", "tool_name": c.function.name, "content": out["content"]})
    return {"text": "", "failed": True, "reason": "max_iters"}


for line in IN:
    msg = json.loads(line)
    if msg["type"] == "shutdown":
        break
    if msg["type"] == "user":
        reply = {"type": "reply", **answer(msg["text"], msg["images"])}
    elif msg["type"] == "preload":  # the filler as earlier exchanges
        history += [{"role": m["role"], "content": m["content"]} for ex in msg["exchanges"] for m in ex]
        reply = {"type": "ok"}
    else:  # hello, advance: this agent ignores the time
        reply = {"type": "ok"}
    OUT.write(json.dumps(reply) + "\n")
    OUT.flush()
