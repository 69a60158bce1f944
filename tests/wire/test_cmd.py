"""Black-box harnesses (``harness=cmd:...``): a program that hangs, exits or writes garbage is
a failed run with a clear reason within its timeout; the stdin protocol (user lines, clock
advances, preload or filler as turns); the plain SDK example's records hold every request it
sent."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from harnesslab.harnesses.registry import harness_label
from harnesslab.record.format import Record
from harnesslab.run.runner import RunResult, run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")

ROOT = Path(__file__).resolve().parents[2]
HEAD = """import json, os, sys, time
open(os.environ["PIDFILE"], "a").write(f"{os.getpid()}\\n")
sys.stdin.readline()  # the first line (hello), answered on stdout: the first protocol
print(json.dumps({"type": "hello"}), flush=True)
"""


def _program(tmp_path: Path, body: str, name: str = "prog.py") -> Path:
    p = tmp_path / name
    p.write_text(HEAD + body, encoding="utf-8")
    return p


def _run(tmp_path: Path, prog: Path, scenario: str = "followup-o1001-zh", variant: str = "default",
         timeout: float = 3, **extra: Any) -> RunResult:
    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == variant)
    return run_variant(sc, v, source=path, out_dir=tmp_path / "runs",
                       cli_set={"harness": f"cmd:python {prog}", "turn_timeout": timeout, **extra})


def _all_ended(tmp_path: Path) -> bool:
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def _pidfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIDFILE", str(tmp_path / "pids"))


def test_a_program_that_hangs_fails_the_run_within_its_timeout(tmp_path: Path) -> None:
    prog = _program(tmp_path, "sys.stdin.readline()\nprint('thinking...', file=sys.stderr, "
                    "flush=True)\ntime.sleep(600)\n")
    started = time.monotonic()
    r = _run(tmp_path, prog, timeout=2)
    took = time.monotonic() - started
    assert r.error is not None and "HarnessGone" in r.error
    assert "no reply to step 1 (user) within 2 s (stopped)" in r.error
    assert "thinking..." in r.error  # what it wrote
    assert took < 2 + 20, took  # the timeout, plus starting the server and a loaded machine
    assert _all_ended(tmp_path)
    rec = Record.load(r.record)  # type: ignore[arg-type]
    assert rec.of_type("run_error")[0]["error"] == r.error


def test_a_program_that_hangs_mid_line_fails_with_the_partial_line(tmp_path: Path) -> None:
    prog = _program(tmp_path, "sys.stdin.readline()\nsys.stdout.write('{\"type\": \"rep')\n"
                    "sys.stdout.flush()\ntime.sleep(600)\n")
    r = _run(tmp_path, prog, timeout=2)
    assert r.error is not None and "within 2 s (stopped)" in r.error
    assert "then on stdout: '{\"type\": \"rep'" in r.error, r.error


def test_a_program_that_exits_fails_the_run_with_its_code_and_stderr(tmp_path: Path) -> None:
    prog = _program(tmp_path, "sys.stdin.readline()\nprint('no key', file=sys.stderr)\n"
                    "sys.exit(3)\n")
    r = _run(tmp_path, prog)
    assert r.error is not None
    assert "exited with code 3 before replying to step 1 (user)" in r.error and "no key" in r.error


@pytest.mark.parametrize(("reply", "match"), [
    ("hello, not json", "wrote a line that is not a JSON object in reply to step 1 (user): "
                        "'hello, not json'"),
    ("[1, 2]", "not a JSON object"),
    ('{"type": "reply", "txt": "typo"}', "without a string 'text'"),
])
def test_a_program_that_writes_garbage_fails_the_run_with_what_it_wrote(
        tmp_path: Path, reply: str, match: str) -> None:
    prog = _program(tmp_path, f"sys.stdin.readline()\nprint({reply!r}, flush=True)\n"
                    "time.sleep(600)\n")
    r = _run(tmp_path, prog)
    assert r.error is not None and match in r.error, r.error
    assert _all_ended(tmp_path)


def test_a_command_that_cannot_start_is_a_failed_run(tmp_path: Path) -> None:
    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    r = run_variant(sc, sc.variants[0], source=path,
                    cli_set={"harness": f"cmd:{tmp_path}/no-such-program"})
    assert r.error is not None and "cannot start" in r.error


ECHO = """log = open(os.environ["STDIN_LOG"], "a")
for line in sys.stdin:
    msg = json.loads(line)
    log.write(line)
    log.flush()
    if msg["type"] == "preload":
        print(json.dumps({"type": os.environ.get("PRELOAD", "ok")}), flush=True)
    elif msg["type"] == "user":
        print(json.dumps({"type": "reply", "text": "echo " + msg["text"]}), flush=True)
    else:
        print("{}", flush=True)
"""


def test_the_stdin_protocol_states_the_time_and_advances(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STDIN_LOG", str(tmp_path / "stdin.jsonl"))
    r = _run(tmp_path, _program(tmp_path, ECHO), scenario="stale-logistics-zh")
    assert r.error is None
    lines = [json.loads(x) for x in (tmp_path / "stdin.jsonl").read_text().splitlines()]
    kinds = [m["type"] for m in lines]
    sc = load_scenario(bundled_dir() / "stale-logistics-zh.yaml")
    users = [s.user for s in sc.steps if hasattr(s, "user")]
    assert [m["text"] for m in lines if m["type"] == "user"] == users
    assert "advance" in kinds
    adv = lines[kinds.index("advance")]
    after = lines[kinds.index("advance") + 1]
    assert after["type"] == "user" and after["now"] == adv["now"] > lines[0]["now"]
    rec = Record.load(r.record)  # type: ignore[arg-type]
    assert [t["reply"] for t in rec.of_type("turn")] == [f"echo {u}" for u in users]


@pytest.mark.parametrize("answer", ["ok", "unsupported"])
def test_filler_goes_in_as_a_preload_or_as_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 answer: str) -> None:
    monkeypatch.setenv("STDIN_LOG", str(tmp_path / "stdin.jsonl"))
    monkeypatch.setenv("PRELOAD", answer)
    r = _run(tmp_path, _program(tmp_path, ECHO), scenario="followup-after-filler-zh")
    assert r.error is None
    lines = [json.loads(x) for x in (tmp_path / "stdin.jsonl").read_text().splitlines()]
    preload = next(m for m in lines if m["type"] == "preload")
    fillers = [m for m in lines if m.get("filler")]
    rec = Record.load(r.record)  # type: ignore[arg-type]
    pairs = rec.of_type("filler")[0]["exchanges"]
    assert len(preload["exchanges"]) == pairs > 0
    if answer == "ok":
        assert fillers == []
    else:
        assert [m["text"] for m in fillers] == [ex[0]["content"] for ex in preload["exchanges"]]


LOGGING = """import runpy, json, os, sys
from openai.resources.chat.completions import Completions
real = Completions.create
def create(self, **kw):
    with open(os.environ["SENT_LOG"], "a") as f:
        f.write(json.dumps(kw, ensure_ascii=False) + "\\n")
    return real(self, **kw)
Completions.create = create
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_the_plain_sdk_example_black_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its records hold every request it sent, byte for byte; and its last-12-messages window
    loses the order the follow-up refers to once the small talk has pushed it out."""
    pytest.importorskip("openai")
    from harnesslab.adapters.openai_wire import request_from_openai
    from harnesslab.messages import dumps

    monkeypatch.setenv("SENT_LOG", str(tmp_path / "sent.jsonl"))
    wrapper = tmp_path / "logging_agent.py"
    wrapper.write_text(LOGGING, encoding="utf-8")
    example = ROOT / "examples" / "plain_openai_agent.py"
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    spec = f"cmd:python {wrapper} {example}"
    r = run_variant(sc, v, source=path, out_dir=tmp_path / "runs",
                    cli_set={"harness": spec, "turn_timeout": 60})
    assert r.error is None, r.error
    assert r.settings["harness"] == harness_label(spec) == "cmd:plain_openai_agent.py"
    rec = Record.load(r.record)  # type: ignore[arg-type]
    sent = [json.loads(x) for x in (tmp_path / "sent.jsonl").read_text().splitlines()]
    calls = [e for e in rec.events if e["type"] in ("model_call", "overflow", "protocol_error")]
    assert len(sent) == len(calls) > 0
    for body, call in zip(sent, calls, strict=True):
        want = request_from_openai(body, session_id=sc.session.id)
        assert rec.request(call["request"]) == want
        assert call["request"]["sha256"] == hashlib.sha256(dumps(want).encode()).hexdigest()
    failed = {c.id: c.detail for c in r.checks if not c.passed}
    assert failed["s3.resolves"] == "resolved nothing; expected {'order': 'O-1001'}"
    # The first question is in the record but not in the request that answered the follow-up.
    last = rec.request([e for e in calls if e["step"] == 3][-1]["request"])
    assert not any("O-1001" in m.plain_text() for m in last.messages)
    assert len(last.messages) == 12


def test_a_black_box_run_records_the_same_bytes_twice(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    example = ROOT / "examples" / "plain_openai_agent.py"
    a = _run(tmp_path / "a", example, timeout=60)
    b = _run(tmp_path / "b", example, timeout=60)
    assert a.error is None and b.error is None
    assert a.record is not None and b.record is not None
    assert a.record.read_bytes() == b.record.read_bytes()
    assert len(Record.load(a.record).of_type("model_call")) >= 3


def test_a_scenario_needing_the_harness_estimate_is_not_applicable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harnesslab.run.suite import summarize
    from harnesslab.run.table import format_results

    monkeypatch.setenv("STDIN_LOG", str(tmp_path / "stdin.jsonl"))
    echo = _program(tmp_path, ECHO)
    na = _run(tmp_path, echo, scenario="reserve-below-head-zh")  # its filler is fill_to
    ok = _run(tmp_path, echo, scenario="followup-o1001-zh")
    assert na.not_applicable and not ok.not_applicable
    assert na.error == ("NotApplicable: filler fill_to needs the harness's own estimate "
                        "(Harness.context_estimate returned None)")
    rows = {r["scenario"]: r for r in summarize([na, ok])["rows"]}
    assert rows["reserve-below-head-zh"]["expected"] and \
        rows["reserve-below-head-zh"]["not_applicable"] == [na.error]
    assert not rows["followup-o1001-zh"]["expected"]  # an echo answers nothing right
    text = format_results([na, ok])
    assert "  - reserve-below-head-zh/default: NotApplicable: filler fill_to" in text
    assert " n/a " in text.splitlines()[1] + " "
    assert text.rstrip().endswith("1 variant not applicable to cmd:prog.py")


# A program with two strategies of its own: "window" sends the current turn only, anything
# else the whole conversation; it declares strategy and window_messages (which window-2 also
# sets), or nothing with DECLARE empty, in its answer to the hello line, and logs the strategy
# it was given.
STRATEGIC = """import json, os, sys
import httpx
open(os.environ["PIDFILE"], "a").write(f"{os.getpid()}\\n")
from openai import OpenAI
client = OpenAI()
TOOLS_URL = os.environ["HARNESSLAB_TOOLS_URL"]
AUTH = {"Authorization": f"Bearer {client.api_key}"}
TOOLS = httpx.get(TOOLS_URL, headers=AUTH).json()["tools"]
history, keep = [], 12
declare = [d for d in os.environ.get("DECLARE", "").split(",") if d]
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        assert "harness" not in msg["settings"] and "turn_timeout" not in msg["settings"]
        strategy = msg["settings"]["strategy"]
        open(os.environ["GIVEN"], "a").write(strategy + "\\n")
        keep = 2 if strategy == "window" else 12
        print(json.dumps({"type": "hello", "honours": declare}), flush=True)
    elif msg["type"] == "user":
        history.append({"role": "user", "content": msg["text"]})
        turn = len(history) - 1
        for _ in range(8):
            window = history[turn:] if keep == 2 else history
            reply = client.chat.completions.create(model="m", messages=window,
                                                   tools=TOOLS).choices[0].message
            history.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                out = httpx.post(f"{TOOLS_URL}/{call.function.name}", headers=AUTH,
                                 json={"arguments": call.function.arguments}).json()
                history.append({"role": "tool", "tool_call_id": call.id,
                                "content": out["content"]})
        print(json.dumps({"type": "reply", "text": reply.content or ""}), flush=True)
    else:
        print("{}", flush=True)
"""


def test_a_program_that_declares_strategy_is_judged_on_the_variant_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """window-2 (strategy: window) is a control its checks must fail: the program that declares
    strategy (and window_messages) gets "window" in its hello line, forgets the order, and
    fails as designed; under default it gets "structured" and passes. Declaring nothing, the
    control is not applicable, with the reason, and the program is never asked a turn."""
    pytest.importorskip("openai")
    given = tmp_path / "given.txt"
    monkeypatch.setenv("GIVEN", str(given))
    prog = tmp_path / "prog.py"
    prog.write_text(STRATEGIC, encoding="utf-8")
    monkeypatch.setenv("DECLARE", "strategy,window_messages")
    control = _run(tmp_path / "a", prog, variant="window-2", timeout=60)
    default = _run(tmp_path / "b", prog, variant="default", timeout=60)
    assert given.read_text().split() == ["window", "structured"]
    assert control.error is None
    assert control.honours == ["strategy", "window_messages"]
    assert control.verdict is not None and control.verdict.ok, control.verdict
    assert not control.all_passed  # its checks failed, as the control says
    assert default.error is None and default.all_passed
    rec = Record.load(control.record)  # type: ignore[arg-type]
    assert rec.of_type("honours")[0]["settings"] == ["strategy", "window_messages"]

    monkeypatch.setenv("DECLARE", "")
    given.unlink()
    na = _run(tmp_path / "c", prog, variant="window-2", timeout=60)
    assert na.not_applicable and na.honours == []
    assert na.error == ("NotApplicable: sets strategy=window, window_messages=2; "
                        "cmd:prog.py honours none of: strategy, window_messages")
    assert given.read_text().split() == ["window"]  # started, told, then not asked a turn
    assert Record.load(na.record).of_type("model_call") == []  # type: ignore[arg-type]
    # Under tool_identity server the bench's tool backend applies identity for the program.
    served = _run(tmp_path / "d", prog, variant="default", timeout=60, tool_identity="server")
    assert served.honours == ["identity"]


def test_a_program_declaring_an_unknown_setting_fails_the_run_saying_so(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text('import json, os, sys, time\nopen(os.environ["PIDFILE"], "a").write('
                    'f"{os.getpid()}\\n")\nsys.stdin.readline()\n'
                    'print(json.dumps({"type": "hello", "honours": ["stratgy"]}), flush=True)\n'
                    'time.sleep(600)\n', encoding="utf-8")
    r = _run(tmp_path, prog)
    assert r.error is not None and "HarnessGone: cmd:prog.py: answered the first line (hello) " \
        "with cmd:prog.py: honours names unknown setting 'stratgy'" in r.error, r.error
    assert _all_ended(tmp_path)
