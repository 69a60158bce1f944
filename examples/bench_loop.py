"""The bench's side of a black-box example, shared by the framework examples in this folder (it
imports only the standard library, so it runs in each framework's own virtual environment):
the stdin/stdout protocol of ``harness=cmd:`` (harnesslab/adapters/cmd.py) and the bench's
tools over HTTP (HARNESSLAB_TOOLS_URL, the session's key as bearer token).

    serve(answer)            # answer(text, now) -> reply text; raise Failed(reason) to fail
    TOOLS                    # the tool schemas (OpenAI function format)
    call_tool(name, args)    # run one; returns the result text the model should see
"""
import json
import os
import sys
import urllib.request

# stdout carries the protocol only: whatever a framework logs goes to stderr.
_PROTOCOL, sys.stdout = sys.stdout, sys.stderr
# Frameworks that count tokens with tiktoken read its vocab from the cache harnesslab seeds
# (offline: never a download).
os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(
    os.environ.get("HARNESSLAB_CACHE_DIR") or os.path.expanduser("~/.cache/harnesslab"), "tiktoken"))
_URL = os.environ.get("HARNESSLAB_TOOLS_URL", "")
_AUTH = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",
         "Content-Type": "application/json"}


class Failed(Exception):
    """The harness knows it could not answer (e.g. the service rejected the request)."""


def _http(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=_AUTH, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


TOOLS: list[dict] = _http(_URL)["tools"] if _URL else []


def call_tool(name: str, arguments: dict | str) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return _http(f"{_URL}/{name}", {"arguments": args})["content"]


def serve(answer) -> None:
    """Answer each user line; filler is sent as ordinary user turns (preload unsupported)."""
    now = None
    for line in sys.stdin:
        msg = json.loads(line)
        now = msg.get("now", now)
        if msg["type"] == "user":
            try:
                out = {"type": "reply", "text": answer(msg["text"], now) or ""}
            except Failed as e:
                out = {"type": "reply", "text": "", "failed": True, "reason": str(e)}
            print(json.dumps(out, ensure_ascii=False), file=_PROTOCOL, flush=True)
        elif msg["type"] == "preload":
            print(json.dumps({"type": "unsupported"}), file=_PROTOCOL, flush=True)
        else:  # advance: the clock moved; "now" is read from the next line
            print(json.dumps({"type": "ok"}), file=_PROTOCOL, flush=True)
