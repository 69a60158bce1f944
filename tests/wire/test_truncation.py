"""The Responses API's ``truncation: "auto"``: the server drops input items from the beginning
of the conversation until the request fits (``sim.service.SimulatedService.fit``), where
``disabled`` (the default) is a 400. A harness that leaves its context to the server is
measured on what the model then sees, never refused for what the real API would have
truncated."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.cli import main
from harnesslab.errors import ContextOverflowError
from harnesslab.judge.metrics import run_metrics
from harnesslab.messages import Message, Request, ToolCallBlock, ToolResultBlock
from harnesslab.record.format import Record
from harnesslab.sim.service import SimulatedService, get_profile
from tests.markers import needs_tokenizers_extra
from tests.wire.support import Q1, serving

pytestmark = needs_tokenizers_extra

TIGHT = {"service.window": 400, "service.max_output": 100, "service.default_output": 100}
LONG = "这是一段很长的历史记录，用来填满上下文窗口。" * 6


def _service(window: int) -> SimulatedService:
    return SimulatedService(get_profile("openai-128k").with_overrides(
        window=window, max_output=50, default_output=50))


def _conversation() -> tuple[Message, ...]:
    call = ToolCallBlock("c1", "track_order", '{"order_id": "O-1001"}')
    return (Message.text("user", LONG),
            Message("assistant", (call,)),
            Message("tool", (ToolResultBlock("c1", "track_order", LONG),)),
            Message.text("assistant", LONG),
            Message.text("user", Q1))


def test_fit_drops_from_the_beginning_and_never_leaves_a_result_without_its_call() -> None:
    roomy, tight = _service(100_000), _service(200)
    r = Request(system="你是客服。", messages=_conversation())
    same, none = roomy.fit(r)
    cut, k = tight.fit(r)
    assert same is r and none == 0  # the control: it fits, nothing is dropped
    assert k == 3 and [m.role for m in cut.messages] == ["assistant", "user"]
    assert tight.count_input(cut) + 50 <= 200 < tight.count_input(r) + 50
    # Two messages would not fit; the tool result that would then lead goes with its call.
    middle = _service(tight.count_input(Request(system="你是客服。",
                                                messages=r.messages[2:])) + 50)
    cut2, k2 = middle.fit(r)
    assert k2 == 3 and cut2.messages[0].role != "tool"


def test_the_last_message_stays_and_too_long_is_still_refused() -> None:
    s = _service(120)
    r = Request(system="", messages=(Message.text("user", "x"), Message.text("user", LONG * 3)))
    cut, k = s.fit(r)
    assert k == 1 and cut.messages == r.messages[1:]
    with pytest.raises(ContextOverflowError):
        s.admit(cut)


def test_auto_is_answered_where_disabled_is_refused_and_the_record_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openai = pytest.importorskip("openai")
    with serving(tmp_path, cli_set=TIGHT) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        history = [{"role": "user", "content": LONG * 2},
                   {"role": "assistant", "content": LONG * 2}, {"role": "user", "content": Q1}]
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model="m", input=history)
        kept = client.responses.create(model="m", input=history, truncation="auto")
        with pytest.raises(openai.BadRequestError) as bad:
            client.responses.create(model="m", input=Q1, truncation="middle")
    assert e.value.code == "context_length_exceeded"
    assert "O-1001" in kept.output_text and kept.truncation == "auto"
    rec = Record.load(tmp_path / "session1.jsonl")
    overflow, = rec.of_type("overflow")
    call, = rec.of_type("model_call")
    assert "truncated" not in overflow and call["truncated"] == 1
    seen = rec.request(call["request"])  # the oldest item went, no more than needed
    assert [m.role for m in seen.messages] == ["assistant", "user"]
    assert seen.stated("truncation") == "auto"
    assert call["true_input"] + call["planned_output"] <= 400
    assert bad.value.param == "truncation" and "'middle'" in str(bad.value)
    assert run_metrics(rec, [])["server_dropped_messages"] == 1
    assert main(["show", str(tmp_path / "session1.jsonl"), "--call", "2"]) == 0
    assert "auto): 1 of the messages sent were dropped" in capsys.readouterr().out
    assert main(["show", str(tmp_path / "session1.jsonl"), "--call", "1"]) == 0
    assert "dropped" not in capsys.readouterr().out  # the control: the refused one was whole


def test_ollamas_truncation_keeps_the_system_messages_it_passes() -> None:
    note = Message.text("system", "回答简单一点。")
    r = Request(system="你是客服。", messages=(note, *_conversation()))
    s = _service(200)
    kept, k = s.fit(r, keep_system=True)
    dropped, k2 = s.fit(r)
    assert kept.messages[0] == note and k == k2 - 1  # the note stays, counted as kept
    assert note not in dropped.messages  # the control: Responses' truncation drops it too
    assert s.count_input(kept) + 50 <= 200


def test_a_smaller_window_asked_for_is_the_requests_window() -> None:
    # Ollama's num_ctx: the model loaded with less context than the service could give.
    s = _service(100_000)
    r = Request(system="", messages=(Message.text("user", LONG), Message.text("user", Q1)))
    s.admit(r)  # the control: it fits the service's window
    small = r.with_meta(("window", str(s.count_input(r) + 49)))
    with pytest.raises(ContextOverflowError) as e:
        s.admit(small)
    assert (e.value.detail.limit_name, e.value.detail.limit) == ("window", s.count_input(r) + 49)
    assert s.window(r.with_meta(("window", "10000000"))) == 100_000  # never more than its own
    cut, k = s.fit(small)
    assert k == 1 and cut.messages == r.messages[1:]


def test_writing_into_what_is_left_reserves_no_output_ahead() -> None:
    # Ollama without num_predict: the output takes what the prompt leaves of the window, so a
    # prompt that leaves less than the default output is still answered (the control: a
    # request that plans the default output is refused, or truncated, for the same window).
    s = _service(100_000)
    r = Request(system="", messages=(Message.text("user", LONG), Message.text("user", Q1)))
    n = s.count_input(r)
    rest = r.with_meta(("window", str(n + 20)), ("output", "rest"))
    assert s.admit(rest).planned_output == 20  # what is left, under the default (50)
    assert s.fit(rest) == (rest, 0)
    planned = r.with_meta(("window", str(n + 20)))
    with pytest.raises(ContextOverflowError):
        s.admit(planned)
    assert s.fit(planned)[1] == 1
    roomy = r.with_meta(("output", "rest"))
    assert s.admit(roomy).planned_output == 50  # at most the default
    full = r.with_meta(("window", str(n)), ("output", "rest"))
    cut, k = s.fit(full)  # no room left at all: the oldest message goes, one token stays
    assert k == 1 and s.admit(cut).planned_output >= 1
