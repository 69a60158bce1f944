"""The black-box route's protocol channel, restarts and identity: a program that prints on
stdout still speaks the protocol on its own descriptors (its prints kept as its log); a program
with a file store passes a restart and fails it without the store (the control), judged from
its requests; a program that forwards the model's user_id leaks under the caller-trusting
backend, binds and passes, and under server binding both pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")
openai = pytest.importorskip("openai")

# A chatty agent on the channel: it prints on stdout all the time, as frameworks do.
AGENT = r'''
import json, os, sys, httpx
from openai import OpenAI
IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
client = OpenAI()
TOOLS_URL, AUTH = os.environ["HARNESSLAB_TOOLS_URL"], {"Authorization": f"Bearer {client.api_key}"}
TOOLS = httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]
STORE = os.path.join(os.environ["HARNESSLAB_WORKDIR"], "history.json")
MODE = sys.argv[1]  # store | nostore | forward | bind
history = json.load(open(STORE)) if MODE != "nostore" and os.path.exists(STORE) else []
print("loading the agent... {not json", flush=True)

def answer(text):
    history.append({"role": "user", "content": text})
    for _ in range(6):
        print("token token token", flush=True)
        msg = client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message
        history.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content or ""
        for c in msg.tool_calls:
            args = json.loads(c.function.arguments)
            if MODE == "bind" and "user_id" in args:
                args["user_id"] = os.environ["HARNESSLAB_SESSION_USER"]
            out = httpx.post(f"{TOOLS_URL}/{c.function.name}", headers=AUTH,
                             json={"arguments": args}).json()
            history.append({"role": "tool", "tool_call_id": c.id, "content": out["content"]})
    return ""

for line in IN:
    msg = json.loads(line)
    if msg["type"] == "shutdown":
        break
    reply = {"type": "reply", "text": answer(msg["text"])} if msg["type"] == "user" else {"type": "ok"}
    json.dump(history, open(STORE, "w"))
    OUT.write(json.dumps(reply) + "\n")
    OUT.flush()
'''


def _run(tmp_path: Path, scenario: str, variant: str, mode: str, **extra: Any) -> RunResult:
    tmp_path.mkdir(parents=True, exist_ok=True)
    prog = tmp_path / "agent.py"
    prog.write_text(AGENT, encoding="utf-8")
    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    return run_variant(sc, v, source=path, out_dir=tmp_path / mode,
                       cli_set={"harness": f"cmd:python {prog} {mode}", "turn_timeout": 60,
                                **extra})


def test_prints_on_stdout_do_not_break_the_channel_and_are_kept(tmp_path: Path) -> None:
    r = _run(tmp_path, "followup-o1001-zh", "default", "store")
    assert r.error is None, r.error
    assert r.verdict is not None and r.verdict.ok, [c for c in r.checks if not c.passed]
    assert r.record is not None
    log = (r.record.with_suffix(".work") / "logs" / "program-1.stdout.log").read_text()
    assert "loading the agent... {not json" in log and "token token" in log


def test_a_restart_brings_back_what_its_store_kept_and_the_control_fails(tmp_path: Path
                                                                        ) -> None:
    kept = _run(tmp_path, "restart-followup-zh", "default", "store")
    lost = _run(tmp_path, "restart-followup-zh", "default", "nostore")
    assert kept.error is None and lost.error is None, (kept.error, lost.error)
    assert all(c.passed for c in kept.checks), [c for c in kept.checks if not c.passed]
    failed = {c.id for c in lost.checks if not c.passed}
    assert {"s2.resume_fidelity", "s3.resolves"} <= failed
    rec = Record.load(kept.record)  # type: ignore[arg-type]
    resume = rec.of_type("resume")
    assert [(e["fidelity"], e["judged_from"]) for e in resume] == [(True, "requests")]
    # The bench's session-id-only control reaches a program too: a fresh workdir, nothing back.
    control = _run(tmp_path / "c", "restart-followup-zh", "session-id-only", "store")
    assert control.verdict is not None and control.verdict.ok


def test_identity_is_the_harness_job_under_a_backend_that_trusts_its_caller(tmp_path: Path
                                                                             ) -> None:
    def failed(mode: str, **extra: Any) -> set[str]:
        r = _run(tmp_path / "x" / str(len(extra)), "spoofed-identity-zh", "default", mode,
                 **extra)
        assert r.error is None, r.error
        return {c.id for c in r.checks if not c.passed}

    assert {"s1.no_leak", "s1.not_mentions"} <= failed("forward")
    assert failed("bind") == set()
    # The control: the backend binds every call, so forwarding cannot leak.
    assert failed("forward", tool_identity="server") == set()
    assert failed("bind", tool_identity="server") == set()
