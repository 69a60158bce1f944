"""What the simulated service does not do of an API's server-side context management, refused
with a 400 naming the parameter instead of ignored: ignored, the harness would believe the
server edits its context while the model saw it unedited, and an overflow or a forgotten fact
would be blamed on the harness for what the bench left undone.

What is simulated is read by the wires themselves: ``truncation: "auto"`` and
``conversation`` (Responses), ``previous_response_id``, the token counts, and of Anthropic's
``context_management`` the ``clear_thinking_20251015`` edit (:func:`thinking_kept`; Claude
Code sends it with every request); its other edits are refused here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnesslab.errors import InputError

__all__ = ["ANTHROPIC", "RESPONSES", "refuse_unsimulated", "thinking_kept"]

ANTHROPIC = {
    "mcp_servers": "tools the server runs itself (the MCP connector)",
}
RESPONSES = {
    # POST /v1/responses/compact is simulated; compaction triggered inside a request by a
    # threshold is not (when, and what the answer then holds, are not documented enough).
    "context_management": "server-side compaction triggered by a threshold (call "
                          "/v1/responses/compact instead)",
    "prompt": "prompts stored on the server (a reusable prompt's instructions)",
}


def _unsimulated(what: str, field: str) -> InputError:
    return InputError(f"harnesslab does not simulate {what}: the model would see a context the "
                      "API had changed; leave it out and manage the context in the harness, or "
                      "test against the real API", field=field)


def refuse_unsimulated(body: Mapping[str, Any], params: Mapping[str, str]) -> None:
    """InputError naming the first of ``params`` the body sets (not null, not empty)."""
    for key, what in params.items():
        if body.get(key) not in (None, [], {}):
            raise _unsimulated(what, key)


_CLEAR_THINKING = "clear_thinking_20251015"


def thinking_kept(body: Mapping[str, Any]) -> int | None:
    """How many of the latest assistant turns keep their thinking blocks (None: all): with
    ``thinking`` enabled or adaptive the API keeps the last turn's unless
    ``context_management`` has ``clear_thinking_20251015`` with ``keep`` ``"all"`` or
    ``{"type": "thinking_turns", "value": N}`` (1 when left out), an edit it accepts only
    with thinking on. Any other edit is refused (:func:`refuse_unsimulated`'s reason), as is
    a shape the API refuses."""
    cm = body.get("context_management")
    thinking = body.get("thinking")
    on = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
    if cm is None:
        # The API's default with thinking on: only the last assistant turn's thinking is kept
        # (and counted); with it off, nothing is cleared.
        return 1 if on else None
    f = "context_management"
    if not isinstance(cm, Mapping):
        raise InputError("expected an object", field=f)
    for key in cm:
        if key != "edits":
            raise InputError("Extra inputs are not permitted", field=f"{f}.{key}")
    edits = cm.get("edits") or []
    if not isinstance(edits, list):
        raise InputError("expected a list", field=f"{f}.edits")
    kept: int | None = None
    for i, e in enumerate(edits):
        at = f"{f}.edits[{i}]"
        kind = e.get("type") if isinstance(e, Mapping) else None
        if kind != _CLEAR_THINKING:
            raise _unsimulated(f"the context edit {kind!r} (only {_CLEAR_THINKING})",
                               f"{at}.type")
        if not on:
            raise InputError(f"`{_CLEAR_THINKING}` strategy requires `thinking` to be enabled "
                             "or adaptive", field=at)
        keep = e.get("keep", {"type": "thinking_turns", "value": 1})
        if keep == "all":
            continue
        if not (isinstance(keep, Mapping) and keep.get("type") == "thinking_turns"
                and isinstance(keep.get("value"), int) and not isinstance(keep["value"], bool)
                and keep["value"] >= 1):
            raise InputError("expected \"all\" or {\"type\": \"thinking_turns\", \"value\": N}",
                             field=f"{at}.keep")
        kept = keep["value"] if kept is None else min(kept, keep["value"])
    return kept
