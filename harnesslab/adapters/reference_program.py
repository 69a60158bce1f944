"""The reference harness as a black-box program: ``harness=cmd:"python -m
harnesslab.adapters.reference_program"``.

It speaks the cmd protocol on the bench's channel (``adapters.program``), takes the harness
settings from the first line (``hello``'s ``settings``), and hands the reference harness what a
deployment would: the model over the bench's own lossless wire (``POST /harnesslab/v1/request``,
the request as ``messages.request_to_dict``, its own estimate beside it), the tools over
``HARNESSLAB_TOOLS_URL`` (naming the acting user it bound: the backend trusts its caller), a
clock set from the ``now`` each line carries, its store in ``HARNESSLAB_WORKDIR``. It sends no
event to the bench: compactions and summary calls are found from its requests, as for any
program. Running the bundled suite through it and in process must agree on every verdict,
compaction and summary token (``tests/wire/test_reference_program.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from harnesslab.errors import ContextOverflowError, OverflowDetail, ProtocolError
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.base import HarnessContext, Session
from harnesslab.harness.config import HarnessConfig
from harnesslab.messages import (
    DataBlock,
    Message,
    Request,
    Response,
    ToolOutcome,
    ToolSchema,
    block_from_dict,
    request_to_dict,
)


class _Model:
    def __init__(self, http: httpx.Client, url: str) -> None:
        self._http, self._url = http, url

    def call(self, request: Request, *, purpose: str = "reply",
             estimate: int | None = None) -> Response:
        # purpose stays here: the bench finds what a call is for from the requests.
        body = {"request": {k: v for k, v in request_to_dict(request).items() if k != "meta"},
                "estimate": estimate}
        r = self._http.post(self._url, content=json.dumps(body, ensure_ascii=False).encode())
        out = r.json()
        if r.status_code == 400 and out["error"]["type"] == "overflow":
            d = out["error"]["detail"]
            raise ContextOverflowError(out["error"]["profile"], OverflowDetail(**d))
        if r.status_code == 400 and out["error"]["type"] == "protocol_error":
            raise ProtocolError(out["error"]["profile"], out["error"]["problem"])
        r.raise_for_status()
        return Response(tuple(block_from_dict(b) for b in out["blocks"]),
                        out["input_tokens"], out["output_tokens"])


class _Tools:
    def __init__(self, http: httpx.Client, url: str) -> None:
        self._http, self._url = http, url
        self._schemas: tuple[ToolSchema, ...] | None = None

    def schemas(self) -> tuple[ToolSchema, ...]:
        if self._schemas is None:
            raw = self._http.get(self._url).json()["tools"]
            self._schemas = tuple(ToolSchema.from_dict(t) for t in raw)
        return self._schemas

    def run(self, name: str, arguments: str, acting_user: str) -> ToolOutcome:
        # The tool context: the backend trusts the acting user its caller names.
        out = self._http.post(f"{self._url}/{name}", json={"arguments": arguments,
                                                           "acting_user": acting_user}).json()
        return ToolOutcome(out["content"], out["is_error"])


class _Clock:
    def __init__(self, now: str) -> None:
        self.at = datetime.fromisoformat(now)

    def now(self) -> datetime:
        return self.at


class _NoEvents:
    def emit(self, event: dict[str, Any]) -> None:
        pass  # a program's events do not reach the bench's record


def main() -> None:
    inp = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
    out = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
    base = os.environ["HARNESSLAB_TOOLS_URL"].removesuffix("/harnesslab/tools")
    http = httpx.Client(headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
                                 "content-type": "application/json"}, timeout=600)
    harness: ReferenceHarness | None = None
    clock: _Clock | None = None

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        out.flush()

    for line in inp:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "shutdown":
            break
        if msg.get("now") and clock is not None:
            clock.at = datetime.fromisoformat(msg["now"])
        if kind == "hello":
            clock = _Clock(msg["now"])
            workdir = os.environ.get("HARNESSLAB_WORKDIR")
            ctx = HarnessContext(_Model(http, f"{base}/harnesslab/v1/request"),
                                 _Tools(http, f"{base}/harnesslab/tools"), clock, _NoEvents(),
                                 Session(msg["session"], msg["user"]),
                                 Path(workdir) if workdir else None)
            # The bench keeps persist to itself: a workdir kept for the run is the store.
            cfg = HarnessConfig.model_validate({**msg["settings"], "persist": bool(workdir)})
            harness = ReferenceHarness(ctx, cfg)
            send({"type": "hello", "honours": ["*"]})  # it acts on every harness setting
        elif kind == "user":
            assert harness is not None
            images: Sequence[DataBlock] = tuple(
                DataBlock(i["media_type"], i["data"], i.get("name", "")) for i in msg["images"])
            res = harness.turn(msg["text"], images)
            send({"type": "reply", "text": res.text, "failed": res.failed,
                  "reason": res.reason})
        elif kind == "preload":
            assert harness is not None
            harness.preload([[Message.text(m["role"], m["content"]) for m in ex]
                             for ex in msg["exchanges"]])
            send({"type": "ok"})
        else:
            send({"type": "ok"})


if __name__ == "__main__":
    main()
