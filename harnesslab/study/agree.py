"""``harnesslab agree``: do the fake model's verdicts transfer to a real model?

Each recorded turn's model requests (the ``reply`` calls from the turn's first to its last) are
sent again, exactly as recorded, to a real model behind an OpenAI-compatible endpoint. The real
model's answer is its text at the turn's last request; the tools it called are those its
replies asked for across the turn's requests. Both answers, the fake model's as recorded and the
real model's, are then judged by the same answer-level checks (``bench.checks``, as for a run
under ``model=openai-compatible``: mentions, not_mentions, lengths, called / not_called, no_leak,
fresh_fact read from the answer, answered, request_contains, max_images, min_images), with no
annotations on either side. A turn **agrees** when both pass, or both fail, every such check; the
agreement rate is agreeing turns / compared turns. A turn the harness itself failed (an
overflow, a crash) has no answer to compare and is counted apart.

The replay is open loop: after a request where the real model would have called a tool the
fake model did not (or the other way round), the next recorded request still carries the fake
model's path. That is what makes the comparison per request and per turn, on the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harnesslab.adapters.real_model import openai_client, reply_blocks
from harnesslab.errors import InputError
from harnesslab.judge.checks import ANNOTATION_CHECKS, evaluate_turn
from harnesslab.messages import Block, TextBlock, block_to_dict
from harnesslab.record.format import Record
from harnesslab.scenario.schema import Expect


@dataclass(frozen=True)
class TurnAgreement:
    record: str
    step: int
    text: str                      # the user's utterance
    fake_failed: list[str] = field(default_factory=list)   # answer-level checks failed
    real_failed: list[str] = field(default_factory=list)
    real_reply: str = ""
    skipped: str = ""              # why the turn was not compared

    @property
    def agrees(self) -> bool:
        return not self.skipped and (not self.fake_failed) == (not self.real_failed)

    def to_dict(self) -> dict[str, Any]:
        return {"record": self.record, "step": self.step, "text": self.text,
                "fake_failed": self.fake_failed, "real_failed": self.real_failed,
                "real_reply": self.real_reply, "skipped": self.skipped,
                "agrees": None if self.skipped else self.agrees}


def record_paths(paths: Sequence[str]) -> list[Path]:
    """Record files, and the run records (``seed*.jsonl``) under folders, in order."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(p.rglob("seed*.jsonl"))
        elif p.is_file():
            out.append(p)
        else:
            raise InputError("no such record file or folder", file=raw, field="RECORD")
    if not out:
        raise InputError("no records found (a folder is searched for seed*.jsonl)",
                         field="RECORD")
    return out


class Replayer:
    """Sends recorded requests to the real endpoint (the official SDK, no retries)."""

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 120.0) -> None:
        self.base_url, self.model = base_url, model
        self.client = openai_client(base_url, api_key_env, timeout)

    def reply(self, rec: Record, call: dict[str, Any]) -> tuple[tuple[Block, ...], str]:
        """The real model's blocks for a recorded call, or () and the endpoint's refusal."""
        import openai

        from harnesslab.adapters.openai_wire import request_to_openai

        body = request_to_openai(rec.request(call["request"]), model=self.model)
        try:
            resp = self.client.chat.completions.create(**body)
        except openai.APIConnectionError as e:
            raise InputError(f"cannot reach the endpoint: {e}", field="--base-url") from None
        except openai.APIStatusError as e:
            return (), f"endpoint answered {e.status_code}: {e.message}"
        return reply_blocks(resp.choices[0].message), ""


def _answer_level(rec: Record) -> Record:
    """The record seen without annotations and judged as a real model's run: the fake model's
    answers as they were, under the same checks the real model's get."""
    header = {**rec.header, "model": {"kind": "replay"}}
    events = [{**e, "annotations": {}} if e["type"] == "model_call" else e for e in rec.events]
    return _with_events(rec, header, events)


def _with_events(rec: Record, header: dict[str, Any], events: list[dict[str, Any]]) -> Record:
    """``rec`` with another header and events: the same stored requests and messages (the
    request references stay valid), a fresh per-step index."""
    return replace(rec, header=header, events=events, _by_step={}, _indexed=0)


def _judge(rec: Record, step: int, expect: Expect, turn: dict[str, Any]) -> list[str]:
    # A turn fails here only when the harness failed it: a clarification is an answer too,
    # judged by what it says (the real model has no annotations to say it clarified).
    t = {**turn, "failed": turn.get("harness_failed", turn["failed"])}
    return [c.id for c in evaluate_turn(rec, step, expect, t)
            if c.kind not in ANNOTATION_CHECKS and not c.passed]


def agree_record(path: Path, replayer: Replayer) -> list[TurnAgreement]:
    rec = Record.load(path)
    fake = _answer_level(rec)
    expects: dict[str, Any] = rec.header.get("expects") or {}
    out: list[TurnAgreement] = []
    for turn in rec.of_type("turn"):
        step = turn["step"]
        expect = Expect.model_validate(expects.get(str(step), {}))
        calls = [e for e in rec.in_step(step, "model_call") if e["purpose"] == "reply"
                 and turn["first_call"] <= e["call"] <= turn["last_call"]]
        if turn.get("harness_failed", turn["failed"]) or not calls:
            out.append(TurnAgreement(str(path), step, turn["text"],
                                     skipped=f"the harness failed the turn ({turn['reason']})"))
            continue
        replaced: dict[int, list[dict[str, Any]]] = {}
        refusal, text = "", ""
        for e in calls:
            blocks, refusal = replayer.reply(rec, e)
            replaced[e["call"]] = [block_to_dict(b) for b in blocks]
            text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        real_turn = {**turn, "reply": text}
        real_events = [{**e, "reply": replaced[e["call"]]} if e["type"] == "model_call"
                       and e.get("call") in replaced else
                       real_turn if e is turn else e for e in fake.events]
        real = _with_events(rec, fake.header, real_events)
        out.append(TurnAgreement(str(path), step, turn["text"],
                                 _judge(fake, step, expect, turn),
                                 _judge(real, step, expect, real_turn),
                                 text or refusal))
    return out


def agree(paths: Iterable[Path], replayer: Replayer) -> list[TurnAgreement]:
    return [t for p in paths for t in agree_record(p, replayer)]


def summary(turns: Sequence[TurnAgreement]) -> dict[str, Any]:
    compared = [t for t in turns if not t.skipped]
    n = sum(t.agrees for t in compared)
    return {"turns": len(turns), "compared": len(compared), "agree": n,
            "agreement_rate": n / len(compared) if compared else None,
            "fake_passed": sum(not t.fake_failed for t in compared),
            "real_passed": sum(not t.real_failed for t in compared),
            "skipped": len(turns) - len(compared)}


def format_agreement(turns: Sequence[TurnAgreement]) -> str:
    """The per-turn table and the agreement line."""
    rows = [["record", "step", "fake", "real", "agree"]]
    for t in turns:
        fake = "-" if t.skipped else ("pass" if not t.fake_failed else
                                      "fail " + ",".join(t.fake_failed))
        real = t.skipped if t.skipped else ("pass" if not t.real_failed else
                                            "fail " + ",".join(t.real_failed))
        rows.append([t.record, f"s{t.step}", fake, real,
                     "-" if t.skipped else ("yes" if t.agrees else "NO")])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    s = summary(turns)
    rate = "-" if s["agreement_rate"] is None else f"{100 * s['agreement_rate']:.1f}%"
    lines.append(f"agreement: {s['agree']}/{s['compared']} turns = {rate} (fake passed "
                 f"{s['fake_passed']}, real passed {s['real_passed']}; {s['skipped']} turns the "
                 "harness failed, not compared)")
    return "\n".join(lines) + "\n"
