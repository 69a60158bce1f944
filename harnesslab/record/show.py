"""``harnesslab show``: what the model saw at a call, rebuilt from the record alone."""

from __future__ import annotations

from typing import Any

from harnesslab.harness.honours import describe
from harnesslab.messages import (
    DataBlock,
    HintBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from harnesslab.record.format import CALL_EVENTS, Record


def declared_line(rec: Record) -> str:
    """The harness and the settings it declared it honours (the ``honours`` event; a record
    without one is the reference harness's or a bug zoo's, which honour every setting)."""
    name = rec.header.get("harness_name", "?")
    said = rec.of_type("honours")
    if said:
        return f"harness {name} honours {describe(frozenset(said[0]['settings']))}"
    if name == "reference" or str(name).startswith("bug/"):
        return f"harness {name} honours every setting"
    return f"harness {name} (its honoured settings are not recorded)"


def _block(b: Any) -> str:
    if isinstance(b, TextBlock):
        return b.text
    if isinstance(b, ThinkingBlock):
        return f"(thinking) {b.thinking}"
    if isinstance(b, HintBlock):
        return f"(hint) {b.hint if isinstance(b.hint, str) else ' '.join(_block(p) for p in b.hint)}"
    if isinstance(b, ToolCallBlock):
        return f"(tool call {b.id}) {b.name}({b.input})"
    if isinstance(b, ToolResultBlock):
        out = b.output if isinstance(b.output, str) else " ".join(_block(p) for p in b.output)
        return f"(tool result {b.id}{' ERROR' if b.is_error else ''}) {out}"
    if isinstance(b, DataBlock):
        return f"(data {b.media_type} {b.name})"
    return repr(b)


def _message(i: int, m: Message) -> str:
    who = m.role + (f" [{m.name}]" if m.name else "")
    body = "\n    ".join(_block(b) for b in m.content)
    return f"  [{i}] {who}: {body}"


def show_call(rec: Record, n: int) -> str:
    e = rec.call(n)
    req = rec.request(e["request"])
    lines = [declared_line(rec)]
    if e["type"] == "protocol_error":
        lines += [f"call {n} ({e['purpose']}, step {e['step']}): estimate {e['estimate']}",
                 f"REJECTED by the service (protocol): {e['problem']}"]
    else:
        lines += [f"call {n} ({e['purpose']}, step {e['step']}): estimate {e['estimate']}, "
                 f"true input {e['true_input']}, planned output {e['planned_output']}"]
    if e["type"] == "overflow":
        lines.append(f"REJECTED by the service: {e['limit_name']} limit {e['limit']}")
    lines.append(f"request sha256 {e['request']['sha256']}")
    lines.append(f"present: {e.get('present')}")
    lines.append("system:\n  " + req.system)
    if req.summary:
        lines.append("summary:\n  " + req.summary.replace("\n", "\n  "))
    if e.get("truncated"):
        how = "Ollama's truncate: system messages kept" \
            if req.stated("truncation") == "keep_system" else "truncation auto"
        lines.append(f"the server truncated the request ({how}): {e['truncated']} "
                     "of the messages sent were dropped, from the beginning")
    lines.append(f"messages ({len(req.messages)}):")
    lines += [_message(i, m) for i, m in enumerate(req.messages)]
    lines.append("tools: " + ", ".join(t.name for t in req.tools))
    if e["type"] == "model_call":
        from harnesslab.messages import block_from_dict

        lines.append("reply: " + " | ".join(_block(block_from_dict(b)) for b in e["reply"]))
        lines.append(f"annotations: {e['annotations']}")
    last = [c for c in rec.of_type("compaction") if c.get("applied") and
            _before(rec, c, n)]
    if last:
        c = last[-1]
        lines.append(f"last compaction before this call ({c['strategy']}, step {c['step']}): "
                     f"removed {c['removed']} messages, kept {c['kept']}, "
                     f"summary {'ok' if c['summary_ok'] else 'FAILED'}")
        before = rec.request(c["request"])
        kept_ids = {m.id for m in req.messages}
        removed = [m for m in before.messages if m.id not in kept_ids]
        lines += ["  removed: " + _message(i, m).strip() for i, m in enumerate(removed)]
    return "\n".join(lines) + "\n"


def _before(rec: Record, compaction: dict[str, Any], call: int) -> bool:
    idx_c = rec.events.index(compaction)
    for i, e in enumerate(rec.events):
        if e["type"] in CALL_EVENTS and e.get("call") == call:
            return idx_c < i
    return False


def show_overview(rec: Record) -> str:
    h = rec.header
    lines = [f"{h['scenario']} / {h['variant']} (seed {h['seed']}): {h['title']}",
             declared_line(rec)]
    for e in rec.events:
        if e["type"] == "turn":
            status = f"FAILED ({e['reason']})" if e["failed"] else "ok"
            lines.append(f"step {e['step']}: user {e['text']!r} -> {status}: {e['reply']!r} "
                         f"(calls {e['first_call']}-{e['last_call']})")
        elif e["type"] == "protocol_error":
            lines.append(f"  call {e['call']} PROTOCOL ERROR: {e['problem']}")
        elif e["type"] in ("model_call", "overflow"):
            tag = "OVERFLOW" if e["type"] == "overflow" else e["purpose"]
            lines.append(f"  call {e['call']} {tag}: estimate {e['estimate']}, true "
                         f"{e['true_input']}")
        elif e["type"] == "compaction":
            lines.append(f"  compaction ({e['strategy']}): removed {e['removed']}, kept "
                         f"{e['kept']}, summary {'ok' if e['summary_ok'] else 'failed'}")
        elif e["type"] in ("advance", "filler"):
            lines.append(f"step {e['step']}: {e['type']} {e.get('by', '')}"
                         f"{e.get('exchanges', '')}")
        elif e["type"] in ("resume", "session", "instances"):
            lines.append(_session_line(e))
        elif e["type"] == "check" and not e["passed"]:
            lines.append(f"  check {e['id']} failed: {e['detail']}")
        elif e["type"] == "run_error":
            lines.append(f"run error: {e['error']}")
    return "\n".join(lines) + "\n"


def _session_line(e: dict[str, Any]) -> str:
    """A session step's event: a resume with its fidelity, a session opened or switched to, a
    number of instances."""
    if e["type"] == "session":
        return f"step {e['step']}: {'new session' if e['opened'] else 'switch to'} " \
               f"{e['session']} (user {e['user']})"
    if e["type"] == "instances":
        return f"step {e['step']}: {e['session']} served by {e['count']} instances"
    how = "ok" if e.get("fidelity") else e.get("reason") or e.get("error") or \
        f"differs in {', '.join(e.get('differs', []))}"
    return f"  {e['cause']} (step {e['origin']}): {e['session']} resumed on a fresh instance, " \
           f"fidelity {how}"
