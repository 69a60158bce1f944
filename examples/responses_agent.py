"""An agent on the OpenAI Responses API (the official openai SDK), tested black-box by harnesslab:
    harnesslab run --set harness=cmd:"python examples/responses_agent.py"
Its context handling is the server's: each turn continues the last response by
previous_response_id (store: true), so the history is never trimmed; it states no time, binds
tool calls to the verified session user, and speaks the protocol on the bench's channel.

The server keeps the context in other ways the API offers, one per option:
  --conversation        a conversation of the Conversations API (conversation= on each request)
  --truncation-auto     truncation: "auto" (the server drops the oldest items to fit)
  --compact-at TOKENS   the history kept here (store: false), compacted by the server
                        (POST /v1/responses/compact) once a request's input passes TOKENS
"""
import argparse
import json
import os

import httpx
from openai import BadRequestError, OpenAI

ap = argparse.ArgumentParser()
ap.add_argument("--conversation", action="store_true")
ap.add_argument("--truncation-auto", action="store_true")
ap.add_argument("--compact-at", type=int, default=None)
ARGS = ap.parse_args()

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
TOOLS_URL, AUTH = os.environ["HARNESSLAB_TOOLS_URL"], {"Authorization": f"Bearer {client.api_key}"}
TOOLS = [{"type": "function", **t["function"]} for t in httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]]
USER = os.environ["HARNESSLAB_SESSION_USER"]
IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
INSTRUCTIONS = "You are a customer-service assistant."
last: str | None = None  # the id of the last response: the conversation so far
history: list = []  # --compact-at: the conversation, kept here
conversation = client.conversations.create().id if ARGS.conversation else None


def create(new: list):
    kw = {"model": "harnesslab", "instructions": INSTRUCTIONS, "tools": TOOLS}
    if ARGS.truncation_auto:
        kw["truncation"] = "auto"
    if conversation is not None:
        return client.responses.create(input=new, conversation=conversation, **kw)
    if ARGS.compact_at is not None:
        history.extend(new)
        resp = client.responses.create(input=history, store=False, **kw)
        history.extend(o.model_dump(exclude_none=True) for o in resp.output)
        calls = any(o.type == "function_call" for o in resp.output)
        # Between turns only: compacted mid-loop, the call its output answers would be gone.
        if not calls and resp.usage.input_tokens > ARGS.compact_at:
            compacted = client.responses.compact(model="harnesslab", input=history)
            history[:] = [o.model_dump(exclude_none=True, warnings=False) for o in compacted.output]
        return resp
    return client.responses.create(input=new, previous_response_id=last, **kw)


def answer(text: str, images: list[dict]) -> dict:
    global last
    parts = [{"type": "input_image", "image_url": f"data:{i['media_type']};base64,{i['data']}"}
             for i in images]
    new = [{"role": "user", "content": [{"type": "input_text", "text": text}, *parts] if parts else text}]
    for _ in range(8):
        try:
            resp = create(new)
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
