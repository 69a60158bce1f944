"""The service enforces the chat protocol as a real API does with a 400: each violation is a
typed error, recorded like an overflow, and the reference harness fails the turn and goes on."""

from __future__ import annotations

import re

import pytest

from harnesslab.errors import ContextOverflowError, ProtocolError, ServiceRejected
from harnesslab.events import ListSink
from harnesslab.messages import (
    HintBlock,
    Message,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.protocol import protocol_problem
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.tools import TOOLS
from tests.harness.support import WHERE, rig

TRACK = TOOLS["track_order"].schema
CALL = ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}')
RESULT = ToolResultBlock("c1", "track_order", '{"status": "in_transit"}')
Q = Message.text("user", "Where is O-1001?")


def _req(*messages: Message, tools: tuple[ToolSchema, ...] = (TRACK,), summary: str = "") -> Request:
    return Request(system="sys", messages=messages, tools=tools, summary=summary)


@pytest.mark.parametrize("messages", [
    # AgentScope's layout: call and result in one assistant message
    (Q, Message("assistant", (HintBlock("t"), CALL, RESULT, TextBlock("ok"))), Q),
    # OpenAI's: a tool message after the call
    (Q, Message("assistant", (CALL,)), Message("tool", (RESULT,)), Q),
    # Anthropic's: the result at the head of the next user message
    (Q, Message("assistant", (CALL,)), Message("user", (RESULT, TextBlock("and now?")))),
    # a call at the very end waiting for its result is not checked
    (Q, Message("assistant", (CALL,))),
])
def test_valid_layouts_are_admitted(messages: tuple[Message, ...]) -> None:
    assert protocol_problem(_req(*messages)) is None
    SimulatedService("openai-128k").admit(_req(*messages))


@pytest.mark.parametrize(("request_", "problem"), [
    (_req(), "no message and no summary"),
    (_req(Message("assistant", (RESULT, TextBlock("ok"))), Q),
     "message 0: tool result c1 (track_order) has no call with its id earlier"),
    (_req(Q, Message("tool", (RESULT,)), Message("assistant", (CALL,))),
     "message 1: tool result c1"),
    (_req(Q, Message("assistant", (CALL,)), Q),
     "message 2: a user message arrives while call c1 (track_order) of message 1 has no result"),
    (_req(Q, Message("assistant", (CALL,)), Message("user", (TextBlock("?"), RESULT))),
     "message 2: a user message arrives while call c1"),
])
def test_each_violation_is_a_typed_error_naming_it(request_: Request, problem: str) -> None:
    with pytest.raises(ProtocolError, match=re.escape(problem)) as e:
        SimulatedService("openai-128k").admit(request_)
    assert isinstance(e.value, ServiceRejected) and e.value.reason == "protocol_error"
    assert e.value.problem == protocol_problem(request_)


def test_calls_to_tools_not_offered_are_accepted() -> None:
    """The APIs do not check the history's calls against the tools offered, and harnesses rely
    on it: a summary request offers only its output tool (or none) and carries earlier turns'
    calls; LangGraph's ``response_format`` is asked over the whole history with only the
    schema; dynamic tool selection offers each step its own subset."""
    summarize = Message.text("user", "Summarize the conversation.")
    history = (Q, Message("assistant", (CALL, RESULT, TextBlock("on its way"))))
    assert protocol_problem(_req(*history, summarize, tools=())) is None
    assert protocol_problem(_req(summary="earlier: O-1001")) is None  # a summary alone
    this_round = (Q, Message("assistant", (CALL,)), Message("tool", (RESULT,)))
    assert protocol_problem(_req(*this_round, tools=())) is None
    assert protocol_problem(_req(*this_round, Message.text("assistant", "on its way"),
                                 tools=())) is None
    other = ToolSchema("search_kb", '{"type": "function", "function": {"name": "search_kb"}}')
    assert protocol_problem(_req(*this_round, tools=(other,))) is None
    # The control: the same round with its result cut off and the user speaking again.
    assert "has no result" in str(protocol_problem(_req(*this_round[:2], Q, tools=())))


def test_overflow_and_protocol_error_share_a_base() -> None:
    assert issubclass(ContextOverflowError, ServiceRejected)
    assert issubclass(ProtocolError, ServiceRejected)
    assert ContextOverflowError.reason == "overflow"


class _NeverCalled:
    def reply(self, request: Request) -> object:
        raise AssertionError("a rejected request never reaches the model")


def test_endpoint_records_a_protocol_error_like_an_overflow_and_bills_nothing() -> None:
    sink = ListSink()
    endpoint = Endpoint(SimulatedService("openai-128k"), _NeverCalled(), sink)  # type: ignore[arg-type]
    bad = _req(Q, Message("assistant", (CALL,)), Q)
    with pytest.raises(ProtocolError):
        endpoint.call(bad, purpose="reply", estimate=42)
    (e,) = sink.events
    assert e == {"type": "protocol_error", "call": 1, "purpose": "reply", "request": bad,
                 "estimate": 42, "problem": protocol_problem(bad)}


def test_the_reference_harness_fails_the_turn_and_goes_on() -> None:
    r = rig()
    # A context that breaks the protocol: a result whose call is gone (what a wrong split does).
    r.harness.inject([Message("assistant", (RESULT, TextBlock("on its way")))])
    t = r.turn(WHERE)
    assert (t.failed, t.reason) == (True, "protocol_error")
    assert [e["type"] for e in r.sink.events if e["type"] != "hint"] == ["protocol_error"]
    r.harness.context = r.harness.context.truncated(1)  # repaired: the run goes on
    assert not r.turn(WHERE).failed


_POOL = [Q, Message.text("user", "and O-1002?"), Message("assistant", (CALL,)),
         Message("tool", (RESULT,)), Message("assistant", (HintBlock("t"), CALL, RESULT)),
         Message("user", (RESULT, TextBlock("now?"))), Message.text("assistant", "ok"),
         Message("assistant", (ToolCallBlock("c2", "cancel_order", "{}"),))]


def test_the_incremental_checker_finds_what_a_fresh_scan_finds() -> None:
    """A run's checker resumes from the last request's prefix (extended, its last message
    grown, cut, or edited anywhere): the same verdict as a fresh scan, every time."""

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harnesslab.sim.protocol import ProtocolChecker

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["append", "append", "grow", "cut", "edit",
                                               "same"]),
                              st.integers(0, 40), st.integers(0, len(_POOL) - 1)),
                    max_size=25), st.booleans())
    def check(script: list[tuple[str, int, int]], offer: bool) -> None:
        checker = ProtocolChecker()
        msgs: tuple[Message, ...] = ()
        tools = (TRACK,) if offer else ()
        for op, pos, k in script:
            m = _POOL[k]
            if op == "append" or not msgs:
                msgs = (*msgs, m)
            elif op == "grow":
                last = msgs[-1]
                msgs = (*msgs[:-1], Message(last.role, last.content + m.content))
            elif op == "cut":
                msgs = msgs[:pos % len(msgs)]
            elif op == "edit":
                i = pos % len(msgs)
                msgs = (*msgs[:i], m, *msgs[i + 1:])
            r = Request(system="s", messages=msgs, tools=tools)
            assert checker.problem(r) == protocol_problem(r), msgs

    check()


def test_the_checker_after_the_sequence_got_shorter() -> None:
    """Found by the property above: cut twice, then a call, then the user again."""
    from harnesslab.sim.protocol import ProtocolChecker

    checker = ProtocolChecker()
    call = Message("assistant", (CALL,))
    for msgs in [(Q,), (), (Q, Q, Q, Q), (Q, Q, Q, Q, call), (Q, Q, Q), (Q, Q), (Q, Q, call),
                 (Q, call), (Q,), (Q, call, Message("tool", (RESULT,))), (Q, call, Q)]:
        r = Request(system="s", messages=msgs, tools=())
        assert checker.problem(r) == protocol_problem(r), msgs
