"""An agent on the OpenAI Responses API (the official openai SDK), tested black-box by harnesslab:
    harnesslab run --set harness=cmd:"python examples/responses_agent.py"
Its context handling is the server's: each turn continues the last response by
previous_response_id (store: true), so the history is never trimmed; it states no time, binds
tool calls to the verified session user, and speaks the protocol on the bench's channel."""
import json
import os

import httpx
from openai import BadRequestError, OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
TOOLS_URL, AUTH = os.environ["HARNESSLAB_TOOLS_URL"], {"Authorization": f"Bearer {client.api_key}"}
TOOLS = [{"type": "function", **t["function"]} for t in httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]]
USER = os.environ["HARNESSLAB_SESSION_USER"]
IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
last: str | None = None  # the id of the last response: the conversation so far


def answer(text: str, images: list[dict]) -> dict:
    global last
    parts = [{"type": "input_image", "image_url": f"data:{i['media_type']};base64,{i['data']}"}
             for i in images]
    new = [{"role": "user", "content": [{"type": "input_text", "text": text}, *parts] if parts else text}]
    for _ in range(8):
        try:
            resp = client.responses.create(model="harnesslab", instructions="You are a "
                                           "customer-service assistant.", input=new,
                                           tools=TOOLS, previous_response_id=last)
        except BadRequestError as e:  # e.g. context_length_exceeded
            return {"text": "", "failed": True, "reason": str(e.code or "rejected")}
        last = resp.id
        calls = [o for o in resp.output if o.type == "function_call"]
        if not calls:
            return {"text": resp.output_text}
        new = []
        for c in calls:
            args = json.loads(c.arguments or "{}")
            if "user_id" in args:
                args["user_id"] = USER  # the verified user, never the one the model names
            out = httpx.post(f"{TOOLS_URL}/{c.name}", headers=AUTH, json={"arguments": args}).json()
            new.append({"type": "function_call_output", "call_id": c.call_id, "output": out["content"]})
    return {"text": "", "failed": True, "reason": "max_iters"}


for line in IN:
    msg = json.loads(line)
    if msg["type"] == "shutdown":
        break
    if msg["type"] == "user":
        reply = {"type": "reply", **answer(msg["text"], msg["images"])}
    else:  # hello, advance; preload: unsupported, the bench sends the filler as turns
        reply = {"type": "unsupported" if msg["type"] == "preload" else "ok"}
    OUT.write(json.dumps(reply) + "\n")
    OUT.flush()
