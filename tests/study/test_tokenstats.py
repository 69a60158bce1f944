"""``harnesslab tokens``: reading incrementally gives the figures of reading whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.errors import InputError
from harnesslab.study.tokenstats import _FileStats, file_stats
from harnesslab.study.transcripts import lines, openai_message, segments, strip_newline
from harnesslab.tokens import Chars4Rule, get_tokenizer
from tests.markers import HAS_TOKENIZERS_EXTRA

NAMES = ["o200k_base", "cl100k_base"]
REF = "帮我查订单 O-1001 为什么还没到，回答简单一点。"


def _conversation_lines() -> list[str]:
    out = []
    for i in range(5):
        msgs: list[dict[str, Any]] = [
            {"role": "system", "content": f"You are agent #{i}. 你是客服。"},
            {"role": "user", "content": f"{REF} 第{i}次", "name": "alice" if i % 3 == 0 else ""},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
             "function": {"name": "track_order", "arguments": {"order_id": f"O-{1000 + i}"}}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": '{"status": "in_transit"}'},
            {"role": "assistant", "content": [{"type": "text", "text": "It is in transit, 明天到。"},
                                              {"type": "image_url", "image_url": {"url": "x.png"}}]},
        ]
        out.append(json.dumps({"messages": msgs, "tools": [
            {"type": "function", "function": {"name": "track_order", "parameters": {}}}]},
            ensure_ascii=False))
        out.append(json.dumps({"role": "user", "content": f"loose {i} 松散的消息"}, ensure_ascii=False))
        out.append(json.dumps({"role": "tool", "content": f"plain result {i}"}))
        out.append(json.dumps([i, "a JSON value", {"k": "值"}], ensure_ascii=False))
        out.append("")
    return out


_PLAIN = "\n".join(f"{REF}\nline {i}: the parcel is in transit / 包裹在途中\n\n  indented {i}\r\n"
                   f"/path\n{i}23 numbers\n" for i in range(15)) + "\n"
_INPUTS = {
    "conv.jsonl": "\r\n".join(_conversation_lines()) + "\n",
    "conv-no-suffix": "\n".join(_conversation_lines()),
    "plain.txt": _PLAIN,
    "plain-no-suffix": _PLAIN,
    "whole.json": json.dumps(json.loads(_conversation_lines()[0]), ensure_ascii=False, indent=2),
    "pretty-no-suffix": json.dumps({"a": [1, 2], "b": REF}, ensure_ascii=False, indent=2) + "\n",
}


@pytest.mark.parametrize("name", sorted(_INPUTS))
def test_streaming_equals_reading_whole(tmp_path: Path, name: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / name
    path.write_text(_INPUTS[name], encoding="utf-8")
    data = path.read_bytes()
    whole = file_stats(str(path), NAMES, chunk_bytes=len(data) + 1)
    assert whole["kinds"], whole
    # Reads of 1, 2, 3, 5 and 64 bytes split characters, "\r\n" and every line; pieces are
    # encoded in many batches.
    monkeypatch.setattr(_FileStats, "BATCH_CHARS", 50)
    for size in (1, 2, 3, 5, 64):
        assert file_stats(str(path), NAMES, chunk_bytes=size) == whole, size


def test_utf8_error_offset_is_the_same_whatever_the_reads(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    # A character cut short (its first byte is byte 23), then one cut at the very end.
    path.write_bytes("订单 O-1001 还没到".encode() + b"\xe8\xae\n")
    end = tmp_path / "end.txt"
    end.write_bytes("订单 O-1001".encode() + b"\xe8\xae")
    for size in (1, 2, 4, 100):
        with pytest.raises(InputError, match=r"bad\.txt: not UTF-8 text \(byte 23\)$"):
            file_stats(str(path), NAMES, chunk_bytes=size)
        with pytest.raises(InputError, match=r"end\.txt: not UTF-8 text \(byte 13\)$"):
            file_stats(str(end), NAMES, chunk_bytes=size)


def test_lines_cut_as_splitlines_does() -> None:
    text = "a\r\nb\rc\n\nd\u2028e\x85f\r"
    for size in range(1, len(text) + 1):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        assert list(lines(chunks)) == text.splitlines()


def _tokenizers() -> list[str]:
    return [*NAMES, *(["qwen2.5", "deepseek-v4"] if HAS_TOKENIZERS_EXTRA else [])]


# Line feeds, whitespace, "/", letters of several scripts, digits, marks, contractions, CJK.
_cut_text = st.lists(st.sampled_from(["\n", "\r\n", "\n\n", " ", "  ", "\t", "/", "'s", "a", "Z", "é",
                                     "e\u0301", "\u0301", "ß", "я", "1", "23", "٣", "中", "文", "，",
                                     "。", "か", "한", "😀", "!", "-", "_", "<think>", "\u3000"])
                     ).map("".join)


@settings(max_examples=100, deadline=None)
@given(_cut_text, st.integers(1, 12))
def test_segments_add_up_to_the_whole_under_every_tokenizer(pieces: str, size: int) -> None:
    text = pieces * 3
    chunks = [text[i:i + size] for i in range(0, len(text), size)]
    segs = list(segments(chunks))
    assert "".join(segs) == strip_newline(text)
    for name in _tokenizers():
        tok = get_tokenizer(name)
        assert sum(tok.count(s) for s in segs) == tok.count(strip_newline(text)), name


class _Len:
    def count(self, text: str) -> int:
        return len(text.encode("utf-8"))


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool", "function"])},
    optional={"content": st.one_of(st.none(), st.text(max_size=20), st.just('{"a": 1}'),
                                   st.just("[1, 2]"), st.just(REF)),
              "name": st.sampled_from(["", "bob"]),
              "tool_calls": st.just([{"id": "c", "function": {"name": "f", "arguments": "{}"}}])})


@settings(max_examples=150, deadline=None)
@given(_message)
def test_plain_messages_count_as_the_general_path(d: dict[str, Any]) -> None:
    fast, general = _FileStats([_Len()]), _FileStats([_Len()])
    got = fast._plain_message(d)
    m = openai_message(d, "message")
    want = general._message(m), Chars4Rule().message_units(m)
    if got is not None:
        assert got == want
        fast._flush()
        general._flush()
        assert (fast.kinds, fast.messages) == (general.kinds, general.messages)
