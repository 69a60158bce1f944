"""The worked examples on the Responses, Anthropic and Ollama wires pass a scenario black-box,
on the protocol channel, and bind tool calls to the verified user; the Ollama one, leaving its
window to the server, loses the follow-up to Ollama's silent truncation, and the metrics say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario

pytest.importorskip("starlette")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("example", "sdk"), [("responses_agent.py", "openai"),
                                              ("anthropic_agent.py", "anthropic"),
                                              ("ollama_agent.py", "ollama")])
@pytest.mark.parametrize("scenario", ["followup-o1001-zh", "spoofed-identity-zh"])
def test_the_wire_example_passes(tmp_path: Path, example: str, sdk: str, scenario: str) -> None:
    pytest.importorskip(sdk)
    path = bundled_dir() / f"{scenario}.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    r = run_variant(sc, v, source=path, out_dir=tmp_path,
                    cli_set={"harness": f"cmd:python {ROOT / 'examples' / example}",
                             "turn_timeout": 60})
    assert r.error is None, r.error
    assert r.checks and all(c.passed for c in r.checks), [c for c in r.checks if not c.passed]


@pytest.mark.parametrize("option", ["--conversation", "--truncation-auto", "--compact-at 300"])
def test_the_responses_example_keeps_its_context_on_the_server(tmp_path: Path, option: str) -> None:
    """The other ways the Responses API keeps a context (a conversation, truncation, the
    compact endpoint), each an option of the example: the follow-up still passes."""
    pytest.importorskip("openai")
    from harnesslab.adapters.responses_wire import SUMMARY_BRIDGE
    from harnesslab.record.format import Record

    path = bundled_dir() / "followup-o1001-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    r = run_variant(sc, v, source=path, out_dir=tmp_path, cli_set={
        "harness": f"cmd:python {ROOT / 'examples' / 'responses_agent.py'} {option}",
        "turn_timeout": 60})
    assert r.error is None, r.error
    assert r.checks and all(c.passed for c in r.checks), [c for c in r.checks if not c.passed]
    assert r.record is not None
    rec = Record.load(r.record)
    seen = [rec.request(c["request"]) for c in rec.of_type("model_call")]
    bridged = any(SUMMARY_BRIDGE in b.text for q in seen for m in q.messages  # type: ignore[union-attr]
                  for b in m.content if hasattr(b, "text"))
    assert bridged == (option == "--compact-at 300")  # the summary came back from the server


def test_the_ollama_example_loses_the_follow_up_to_the_servers_truncation(tmp_path: Path) -> None:
    """The Ollama example keeps no context of its own: loaded with a 4,000-token context
    (num_ctx), the server drops the oldest messages of the follow-up's request, the first
    question among them, without a word to the harness. No overflow is reported; the follow-up
    fails, and server_truncation_rate shows the cut (the control: the service's own window)."""
    pytest.importorskip("ollama")
    path = bundled_dir() / "followup-after-filler-zh.yaml"
    sc = load_scenario(path)
    v = next(x for x in sc.variants if x.name == "default")
    runs = {}
    for option in ("", "--num-ctx 4000"):
        runs[option] = run_variant(sc, v, source=path, out_dir=tmp_path / (option or "roomy"),
                                   cli_set={"harness": f"cmd:python {ROOT / 'examples' / 'ollama_agent.py'} "
                                            f"{option}", "turn_timeout": 60})
    roomy, cut = runs[""], runs["--num-ctx 4000"]
    assert roomy.error is None and all(c.passed for c in roomy.checks)
    assert "server_truncation_rate" not in roomy.metrics
    assert cut.error is None and not cut.checks_unreadable
    assert {c.id for c in cut.checks if not c.passed} >= {"s3.resolves", "s3.mentions"}
    assert cut.metrics["overflow_rate"]["num"] == 0
    assert cut.metrics["server_truncation_rate"]["num"] >= 1
    assert cut.metrics["server_dropped_messages"] > 100
    # The run's table says it under the row, where an overflow would show (the control: none).
    from harnesslab.run.table import format_results

    said = [x for x in format_results([cut]).splitlines() if x.startswith("  cut ")]
    assert len(said) == 1 and said[0].startswith(
        "  cut followup-after-filler-zh/default: the server truncated 1 of 3 calls, dropping "), said
    assert "  cut " not in format_results([roomy])
