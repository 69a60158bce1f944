"""An agent on Anthropic's Messages API (the official anthropic SDK), tested black-box by harnesslab:
    harnesslab run --set harness=cmd:"python examples/anthropic_agent.py"
Its context handling: the whole conversation resent each call, streamed answers; it states no
time, binds tool calls to the verified session user, and speaks the protocol on the bench's
channel (what it prints on stdout is only its log)."""
import json
import os

import httpx
from anthropic import Anthropic, BadRequestError

client = Anthropic()  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY come from the environment
TOOLS_URL, AUTH = os.environ["HARNESSLAB_TOOLS_URL"], {"Authorization": f"Bearer {client.api_key}"}
TOOLS = [{"name": f["name"], "description": f.get("description", ""), "input_schema": f["parameters"]}
         for f in (t["function"] for t in httpx.get(TOOLS_URL, headers=AUTH).json()["tools"])]
USER = os.environ["HARNESSLAB_SESSION_USER"]
IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
history: list[dict] = []


def answer(text: str, images: list[dict]) -> dict:
    parts = [{"type": "image", "source": {"type": "base64", "media_type": i["media_type"], "data": i["data"]}}
             for i in images]
    history.append({"role": "user", "content": [{"type": "text", "text": text}, *parts] if parts else text})
    for _ in range(8):
        try:
            with client.messages.stream(model="harnesslab", max_tokens=1024, tools=TOOLS,
                                        system="You are a customer-service assistant.",
                                        messages=history) as stream:
                for piece in stream.text_stream:
                    print(piece, end="", flush=True)  # the log, as a CLI shows tokens
                msg = stream.get_final_message()
        except BadRequestError as e:  # e.g. prompt is too long
            history.pop()
            return {"text": "", "failed": True, "reason": e.body["error"]["message"][:80]}
        history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        uses = [b for b in msg.content if b.type == "tool_use"]
        if msg.stop_reason != "tool_use":
            return {"text": "".join(b.text for b in msg.content if b.type == "text")}
        results = []
        for b in uses:
            args = dict(b.input)
            if "user_id" in args:
                args["user_id"] = USER  # the verified user, never the one the model names
            out = httpx.post(f"{TOOLS_URL}/{b.name}", headers=AUTH, json={"arguments": args}).json()
            results.append({"type": "tool_result", "tool_use_id": b.id, "content": out["content"],
                            **({"is_error": True} if out["is_error"] else {})})
        history.append({"role": "user", "content": results})
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
