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
A call to a tool the request no longer offers is no problem, in this turn's tool round or an
earlier one: the OpenAI-compatible APIs the profiles stand for do not check the history's
calls against the tools offered, and harnesses rely on it: LangGraph's ``create_react_agent``
asks for its ``response_format`` over the whole history with only the schema, a summary
request offers only its output tool or none, dynamic tool selection offers each step its own
subset, a final forced answer offers nothing. (An earlier rule rejected such a call in the
current round as a withdrawn tool, and so blamed those harnesses for what the API accepts.)

A call at the very end of a request with no result yet is not checked here: no harness sends
one on purpose, and the model then simply answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harnesslab.messages import Message, Request, ToolCallBlock, ToolResultBlock
from harnesslab.tokens import common_prefix


@dataclass
class _State:
    """The scan's state after a prefix of the messages, which passed."""

    calls: set[str] = field(default_factory=set)  # the ids of the calls so far
    pending: dict[str, tuple[int, str]] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(set(self.calls), dict(self.pending))


def _scan(state: _State, i: int, m: Message) -> str | None:
    """Advance ``state`` over message ``i``; the problem it shows, if any."""
    calls, pending = state.calls, state.pending
    for b in m.content:
        if isinstance(b, ToolCallBlock):
            calls.add(b.id)
            pending[b.id] = (i, b.name)
        elif isinstance(b, ToolResultBlock):
            if b.id not in calls:
                return (f"message {i}: tool result {b.id} ({b.name}) has no call with its "
                        "id earlier in the request")
            pending.pop(b.id, None)
        elif m.role == "user" and pending:
            cid, (j, name) = next(iter(pending.items()))
            return (f"message {i}: a user message arrives while call {cid} ({name}) "
                    f"of message {j} has no result")
    return None


def protocol_problem(request: Request) -> str | None:
    """The first protocol violation in ``request``, in one line, or None when it is valid."""
    return ProtocolChecker().problem(request)


class ProtocolChecker:
    """``protocol_problem`` for a run's requests, each scanning only what is new: the state
    after the last request's messages, and before its last one (a reply message that grew by
    a tool round), is kept; a request sharing that prefix (compared by identity first, as
    the token counter does) resumes from it. Anything else is scanned from the start."""

    def __init__(self) -> None:
        self._seq: tuple[Message, ...] = ()
        self._end = _State()
        self._before_last: _State | None = None  # None: not known (the sequence got shorter)

    def problem(self, request: Request) -> str | None:
        msgs = request.messages
        if not msgs and not request.summary:
            return "the request has no message and no summary: nothing to answer"
        n = len(self._seq)
        k = common_prefix(self._seq, msgs) if n else 0
        before_last = self._before_last
        if k == n and n:
            state, start = self._end.copy(), n
        elif k == n - 1 and n and before_last is not None:
            state, start = before_last.copy(), n - 1
        else:
            state, start = _State(), 0
        self._seq = ()  # kept again only if every message passes
        last = len(msgs) - 1
        if start > last:  # nothing new (a retry, or the last message dropped)
            before_last = before_last if start == n == len(msgs) else None
        for i in range(start, len(msgs)):
            if i == last:
                before_last = state.copy()
            found = _scan(state, i, msgs[i])
            if found is not None:
                return found
        if msgs:
            self._seq, self._end, self._before_last = msgs, state, before_last
        return None
