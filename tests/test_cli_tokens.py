from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnesslab.cli import main
from tests.markers import needs_tokenizers_extra

REF = "帮我查订单 O-1001 为什么还没到，回答简单一点。"


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harnesslab.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stdin", [REF, REF + "\n", REF + "\r\n"])
def test_stdin_reference_sentence(stdin: str) -> None:
    p = run_cli("tokens", "-", "--json", stdin=stdin)
    assert p.returncode == 0, p.stderr
    total = json.loads(p.stdout)["files"][0]["total"]
    assert (total["bytes4"], total["o200k_base"], total["cl100k_base"]) == (16, 17, 26)
    assert total["bytes"] == 65


def test_only_one_trailing_newline_is_stripped() -> None:
    p = run_cli("tokens", "-", "--json", stdin=REF + "\n\n")
    assert json.loads(p.stdout)["files"][0]["total"]["bytes"] == 66


def test_file_with_trailing_newline_counts_the_same(tmp_path: Path) -> None:
    f = tmp_path / "ref.txt"
    f.write_text(REF + "\n", encoding="utf-8")
    total = json.loads(run_cli("tokens", str(f), "--json").stdout)["files"][0]["total"]
    assert (total["bytes"], total["bytes4"], total["o200k_base"], total["cl100k_base"]) == \
        (65, 16, 17, 26)
    f.write_text(REF + "\n\n", encoding="utf-8")
    assert json.loads(run_cli("tokens", str(f), "--json").stdout)["files"][0]["total"][
        "bytes"] == 66


def test_transcript_kinds_and_request_rules(tmp_path: Path) -> None:
    conv = {"messages": [
        {"role": "system", "content": "You are a helpful customer-service agent."},
        {"role": "user", "content": REF},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "track_order", "arguments": '{"order_id": "O-1001"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "in_transit"}'},
        {"role": "assistant", "content": "It is in transit, 明天到。"},
    ], "tools": [{"type": "function", "function": {"name": "track_order", "parameters": {}}}]}
    f = tmp_path / "conv.json"
    f.write_text(json.dumps(conv, ensure_ascii=False), encoding="utf-8")
    out = json.loads(run_cli("tokens", str(f), "--json").stdout)["files"][0]
    assert set(out["kinds"]) == {"zh", "en", "mixed", "json"}
    assert out["kinds"]["zh"]["pieces"] == 1 and out["kinds"]["json"]["pieces"] == 3
    assert out["messages"] == 5
    texts = ["You are a helpful customer-service agent.", REF, '{"order_id": "O-1001"}',
             '{"status": "in_transit"}', "It is in transit, 明天到。",
             json.dumps(conv["tools"], ensure_ascii=False)]
    assert out["total"]["bytes4"] == int(len("".join(texts).encode()) / 4 + 0.5)


def test_jsonl_messages(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text('{"role": "user", "content": "hello there"}\n\n'
                 '{"role": "assistant", "content": "hi"}\n', encoding="utf-8")
    out = json.loads(run_cli("tokens", str(f), "--json").stdout)["files"][0]
    assert out["messages"] == 2 and out["format"] == "jsonl"


@needs_tokenizers_extra
def test_table_output_names_every_tokenizer() -> None:
    p = run_cli("tokens", "-", "--tokenizer", "qwen2.5", "--tokenizer", "deepseek-v4", stdin=REF)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert "qwen2.5" in lines[1] and "deepseek-v4" in lines[1]
    assert lines[-1].split()[:6] == ["total", "1", "65", "16", "7", "18"]


@pytest.mark.parametrize(("args", "stdin", "message"), [
    (["tokens", "/no/such/file.txt"], None,
     r"^harnesslab tokens: error: /no/such/file\.txt: cannot read: No such file or directory$"),
    (["tokens", "-", "--tokenizer", "gpt5"], "x",
     r"^harnesslab tokens: error: --tokenizer: unknown tokenizer 'gpt5'; expected one of: "),
    (["tokens", "-", "--format", "json"], '{"a": 1,,}',
     r"^harnesslab tokens: error: <stdin>:1: invalid JSON: Expecting property name"),
    (["tokens", "-", "--format", "json"], '[{"role": "robot", "content": "x"}]',
     r"^harnesslab tokens: error: <stdin>: messages\[0\]\.role: unknown role 'robot'"),
    (["tokens", "-", "--format", "bogus"], "x", r"invalid choice: 'bogus'"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], stdin: str | None, message: str) -> None:
    p = run_cli(*args, stdin=stdin)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    import re

    assert re.search(message, p.stderr.strip()), p.stderr


def test_bad_jsonl_line_is_named_and_good_files_are_kept(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{oops}\n', encoding="utf-8")
    good = tmp_path / "good.txt"
    good.write_text("hello", encoding="utf-8")
    p = run_cli("tokens", str(bad), str(good), "--json")
    assert p.returncode == 2
    assert p.stderr.strip().endswith("invalid JSON: Expecting property name enclosed in double "
                                     "quotes (column 2)")
    assert f"{bad}:2:" in p.stderr
    assert [f["path"] for f in json.loads(p.stdout)["files"]] == [str(good)]


def test_main_in_process_returns_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", "/nonexistent"]) == 2
    assert "cannot read" in capsys.readouterr().err
