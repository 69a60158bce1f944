"""The chat protocol the simulated service enforces before it bills a request, as real chat
APIs do with a 400 (``invalid_request_error``).

A request is rejected, with the first problem found, when:

- it has nothing to answer: no message and no summary (AgentScope's formatter sends the
  summary as a user message, so a summary alone is a conversation);
- a tool result has no call with its id earlier in the request (a result split from its call,
  the classic compaction bug: "messages with role 'tool' must be a response to a preceding
  message with 'tool_calls'");
- a user message arrives while a call earlier in the request still has no result ("tool_use
  ids were found without tool_result blocks immediately after"). A result may sit in the
  assistant message that holds its call (AgentScope's layout), in a ``tool`` message, or at
  the head of a user message (Anthropic's layout): only the user's own content (text, data,
  hints) counts as the next user message;
- a call in flight, one after the last user message (the current turn's tool round), names a
  tool the request does not offer: the harness withdrew a tool while the model was using it.
  Calls in earlier turns are history: a summary request offers only its output tool, or none,
  and still carries them, which real APIs accept.

A call at the very end of a request with no result yet is not checked here: no harness sends
one on purpose, and the model then simply answers.
"""

from __future__ import annotations

from harnesslab.messages import Request, ToolCallBlock, ToolResultBlock


def protocol_problem(request: Request) -> str | None:
    """The first protocol violation in ``request``, in one line, or None when it is valid."""
    if not request.messages and not request.summary:
        return "the request has no message and no summary: nothing to answer"
    calls: dict[str, tuple[int, str]] = {}   # call id -> (message index, tool name)
    pending: dict[str, tuple[int, str]] = {}
    last_user = -1
    for i, m in enumerate(request.messages):
        for b in m.content:
            if isinstance(b, ToolCallBlock):
                calls[b.id] = pending[b.id] = (i, b.name)
            elif isinstance(b, ToolResultBlock):
                if b.id not in calls:
                    return (f"message {i}: tool result {b.id} ({b.name}) has no call with its "
                            "id earlier in the request")
                pending.pop(b.id, None)
            elif m.role == "user":
                if pending:
                    cid, (j, name) = next(iter(pending.items()))
                    return (f"message {i}: a user message arrives while call {cid} ({name}) "
                            f"of message {j} has no result")
                last_user = i
    offered = {t.name for t in request.tools}
    for cid, (j, name) in calls.items():
        if j > last_user and name not in offered:
            return (f"message {j}: call {cid} in flight to {name}, a tool this request does "
                    f"not offer (offered: {', '.join(sorted(offered)) or 'none'})")
    return None
