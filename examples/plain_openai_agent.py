"""A plain agent on the official openai SDK, tested black-box by harnesslab:
    harnesslab run --set harness=cmd:"python examples/plain_openai_agent.py"
Its context handling: the last 12 messages, no summary, no time stated to the model.
``--typed``: its answers are asked in a JSON schema (structured outputs, a pydantic model, as
typed agent frameworks ask), parsed, and the answer field given to the user.
``--after``: the loop answers in words, then the answer is asked again in the schema over
the same messages with no tools (LangGraph's ``create_react_agent(response_format=...)``).
``--json-mode``: every call in JSON mode (``json_object``), the keys named in the system
prompt, the ``answer`` key given to the user."""
import json
import os
import sys

import httpx
from openai import BadRequestError, OpenAI
from pydantic import BaseModel, ValidationError

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment
TOOLS_URL, AUTH = os.environ["HARNESSLAB_TOOLS_URL"], {"Authorization": f"Bearer {client.api_key}"}
TOOLS = httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]
SYSTEM = {"role": "system", "content": "You are a customer-service assistant."}
history: list[dict] = []


class Reply(BaseModel):
    answer: str
    needs_follow_up: bool


SCHEMA = {"response_format": {"type": "json_schema", "json_schema": {
    "name": "Reply", "strict": True, "schema": Reply.model_json_schema()}}}
TYPED = SCHEMA if "--typed" in sys.argv else {}
AFTER = "--after" in sys.argv
JSON_MODE = "--json-mode" in sys.argv
if JSON_MODE:
    TYPED = {"response_format": {"type": "json_object"}}
    SYSTEM = {"role": "system", "content": SYSTEM["content"] + " Reply with a JSON object "
              "with the keys `answer` and `needs_follow_up`."}


def answer(text: str, images: list[dict]) -> dict:
    urls = [{"type": "image_url", "image_url": {"url": f"data:{i['media_type']};base64,{i['data']}"}}
            for i in images]
    history.append({"role": "user", "content": [{"type": "text", "text": text}, *urls] if urls else text})
    for _ in range(8):
        window = history[-12:]
        while window and window[0]["role"] == "tool":  # never a result without its call
            window = window[1:]
        try:
            reply = client.chat.completions.create(model="harnesslab", messages=[SYSTEM, *window],
                                                   tools=TOOLS, **TYPED).choices[0].message
        except BadRequestError as e:  # e.g. context_length_exceeded
            return {"text": "", "failed": True, "reason": str(e.code or "rejected")}
        history.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls and JSON_MODE:
            try:
                return {"text": str(json.loads(reply.content or "")["answer"])}
            except (ValueError, KeyError, TypeError):
                return {"text": "", "failed": True, "reason": "no answer key"}
        if not reply.tool_calls and AFTER:  # the structured response, over the same messages
            final = client.chat.completions.create(
                model="harnesslab", messages=[SYSTEM, *window, history[-1]], **SCHEMA)
            reply = final.choices[0].message
        if not reply.tool_calls and (TYPED or AFTER):
            try:
                return {"text": Reply.model_validate_json(reply.content or "").answer}
            except ValidationError:
                return {"text": "", "failed": True, "reason": "not a Reply"}
        if not reply.tool_calls:
            return {"text": reply.content or ""}
        for call in reply.tool_calls:
            out = httpx.post(f"{TOOLS_URL}/{call.function.name}", headers=AUTH,
                             json={"arguments": call.function.arguments}).json()
            history.append({"role": "tool", "tool_call_id": call.id, "content": out["content"]})
    return {"text": "", "failed": True, "reason": "max_iters"}


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({"type": "reply", **answer(msg["text"], msg["images"])}), flush=True)
    else:  # preload: the filler as earlier exchanges; advance: this agent ignores the time
        history += [m for exchange in msg.get("exchanges", []) for m in exchange]
        print(json.dumps({"type": "ok"}), flush=True)
