"""The fake model's reply depends on the request only: the same request under any harness
configuration, strategy or expectations gets the same reply."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesslab.run.runner import run_variant
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.scenario.schema import Variant

SCENARIO = load_scenario(bundled_dir() / "followup-after-filler-zh.yaml")

configs = st.fixed_dictionaries({
    "strategy": st.sampled_from(["none", "truncate", "structured", "freeform", "offload"]),
    "context_size": st.sampled_from([8192, 12000, 16384]),
    "trigger_ratio": st.sampled_from([0.7, 0.8, 0.9]),
    "reserve_ratio": st.sampled_from([0.05, 0.1, 0.3]),
    "summary_template": st.sampled_from(["agentscope", "seed"]),
    "identity": st.sampled_from(["bind", "refuse", "trust"]),
})
expectations = st.lists(st.sampled_from(["s3.resolves", "s3.max_chars", "answered"]),
                        max_size=2, unique=True)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs, configs, expectations, expectations)
def test_same_request_same_reply_whatever_the_harness(a: dict[str, Any], b: dict[str, Any],
                                                      fa: list[str], fb: list[str]) -> None:
    from harnesslab.record.format import Record

    def calls(cfg: dict[str, Any], ef: list[str], tmp: str) -> dict[str, Any]:
        from pathlib import Path

        r = run_variant(SCENARIO, Variant(name="p", set=cfg, expect_fail=ef), out_dir=Path(tmp))
        assert r.error is None and r.record is not None
        rec = Record.load(r.record)
        return {e["request"]["sha256"]: e["reply"] for e in rec.of_type("model_call")}

    import tempfile

    with tempfile.TemporaryDirectory() as ta, tempfile.TemporaryDirectory() as tb:
        ra, rb = calls(a, fa, ta), calls(b, fb, tb)
    shared = ra.keys() & rb.keys()
    # Before any compaction the strategies build the same first request: never vacuous.
    assert shared
    for sha in shared:
        assert ra[sha] == rb[sha]
