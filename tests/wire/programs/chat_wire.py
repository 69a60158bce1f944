"""One chat completion over the OpenAI wire (OPENAI_BASE_URL), standard library only, for the
test programs in this folder; a refused request is the turn's known failure."""
import json
import os
import urllib.error
import urllib.request

from bench_loop import Failed


def chat(messages: list[dict], tools: list[dict] | None = None, **extra: object) -> dict:
    body = {"model": "hl", "messages": messages, **({"tools": tools} if tools else {}), **extra}
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())["choices"][0]["message"]
    except urllib.error.HTTPError as e:
        raise Failed(f"the service refused the request: {e.code}") from None
