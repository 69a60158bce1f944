"""The report: every plot's embedded data recomputed here, independently, from the sweep table
(and, for per-run plots, from the run's record) and found equal; markup in scenario text
escaped; the ranking order; the command line."""

from __future__ import annotations

import html
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harnesslab.cli import main
from harnesslab.record.format import Record
from harnesslab.report import tables
from harnesslab.stats import wilson
from tests.report.conftest import GRID, MARKUP_TITLE, MARKUP_UTTERANCE, SmallSweep

BLOCK = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def blocks(report: Path) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in BLOCK.findall(report.read_text(encoding="utf-8"))}


def compared(df: pd.DataFrame) -> pd.DataFrame:
    keys = set(GRID)
    keep = []
    for _, r in df.iterrows():
        touched = {k.split(".")[0] for k in str(r["overridden"] or "").split(",") if k}
        keep.append(not r["control"] and pd.isna(r["error"]) and not (touched & keys))
    return df[keep]


def approx(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def pooled(g: pd.DataFrame, *metrics: str) -> tuple[int, int]:
    num = sum(int(g[f"{m}_num"].fillna(0).sum()) for m in metrics)
    den = sum(int(g[f"{m}_den"].fillna(0).sum()) for m in metrics)
    return num, den


def expected_cells(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    out = {}
    comp = compared(df)
    for vals, g in comp.groupby([f"set.{k}" for k in GRID]):
        label = ", ".join(f"{k}={v}" for k, v in zip(GRID, vals, strict=True))
        num, den = pooled(g, "followup_accuracy", "constraint_retention")
        out[label] = {"quality": num / den if den else None, "num": num, "den": den,
                      "cost": float(g["true_input_tokens"].mean()),
                      "run_keys": sorted(g["run_key"])}
    return out


def test_every_plot_block_is_recomputed_from_the_table(small_sweep: SmallSweep) -> None:
    data = blocks(small_sweep.report)
    df = small_sweep.df
    checked = set()

    # ranking and Pareto: per cell, pooled quality and mean true input tokens
    cells = expected_cells(df)
    for name in ("plot-ranking", "plot-pareto"):
        got = data[name]
        assert {r["label"] for r in got} == set(cells)
        for r in got:
            exp = cells[r["label"]]
            q = r["quality"]["value"] if name == "plot-ranking" else r["quality"]
            assert approx(q, exp["quality"]) and approx(r["cost"], exp["cost"])
            assert r["run_keys"] == exp["run_keys"]
        checked.add(name)
    ranked = data["plot-ranking"]
    assert [(-r["quality"]["value"], r["cost"]) for r in ranked] == \
        sorted((-r["quality"]["value"], r["cost"]) for r in ranked)
    for r in ranked:
        exp = cells[r["label"]]
        assert r["quality"]["ci"] == pytest.approx(list(wilson(exp["num"], exp["den"])))
        dominated = any(o["quality"] >= exp["quality"] and o["cost"] <= exp["cost"] and
                        (o["quality"] > exp["quality"] or o["cost"] < exp["cost"])
                        for lab, o in cells.items() if lab != r["label"])
        assert r["pareto"] is not dominated

    # heatmaps: per strategy, context_size, trigger_ratio
    hm = data["plot-heatmaps"]
    comp = compared(df)
    n_cells = 0
    for panel in hm["panels"]:
        metric = panel["metric"]
        for c in panel["cells"]:
            g = comp[(comp["strategy"] == panel["strategy"]) &
                     (comp["context_size"] == c["context_size"]) &
                     (comp["trigger_ratio"] == c["trigger_ratio"])]
            num, den = pooled(g, metric)
            assert (c["num"], c["den"]) == (num, den)
            assert approx(c["value"], num / den if den else None)
            assert c["run_keys"] == sorted(g["run_key"])
            n_cells += 1
    assert n_cells == 2 * len(comp.groupby(["strategy", "context_size", "trigger_ratio"]))
    assert hm["context_sizes"] == sorted(set(comp["context_size"]))
    checked.add("plot-heatmaps")

    # estimate error: per locale x estimator x tokenizer, weighted by admitted calls
    ee = data["plot-estimate-error"]
    made_calls = df[df["error"].isna() & (df["estimate_error_n"] > 0)]
    exp_loc = {}
    for (loc, est, tok), g in made_calls.groupby(["locale", "estimator", "tokenizer"]):
        n = g["estimate_error_n"]
        exp_loc[(loc, est, tok)] = ((g["estimate_error_signed_mean"] * n).sum() / n.sum(),
                                    (g["estimate_error_mape"] * n).sum() / n.sum(), int(n.sum()))
    assert len(ee["by_locale"]) == len(exp_loc)
    for r in ee["by_locale"]:
        s, m, n = exp_loc[(r["locale"], r["estimator"], r["tokenizer"])]
        assert approx(r["signed_mean"], s) and approx(r["mape"], m) and r["n"] == n
    for r in ee["by_kind"]:
        g = made_calls[(made_calls["estimator"] == r["estimator"]) &
                       (made_calls[f"estimate_error_{r['kind']}_n"] > 0)]
        n = g[f"estimate_error_{r['kind']}_n"]
        assert r["n"] == int(n.sum())
        assert approx(r["mape"], (g[f"estimate_error_{r['kind']}_mape"] * n).sum() / n.sum())
    checked.add("plot-estimate-error")

    # fact survival: mean share after the k-th compaction, per strategy
    series: dict[tuple[str, int], list[float]] = defaultdict(list)
    for _, r in comp.iterrows():
        for k, v in enumerate(json.loads(r["fact_survival"]), start=1):
            series[(r["strategy"], k)].append(v)
    got = {(s["strategy"], p["k"]): (p["mean"], p["n"]) for s in data["plot-survival"]
           for p in s["points"]}
    assert set(got) == set(series)
    for key, vs in series.items():
        assert approx(got[key][0], sum(vs) / len(vs)) and got[key][1] == len(vs)
    checked.add("plot-survival")

    # strategies compared where the other swept keys are the same
    wins: dict[str, int] = defaultdict(int)
    for _, g in comp.groupby(["set.context_size", "set.trigger_ratio"]):
        best = []
        for strategy, sub in g.groupby("set.strategy"):
            num, den = pooled(sub, "followup_accuracy", "constraint_retention")
            best.append((-(num / den), float(sub["true_input_tokens"].mean()), strategy))
        wins[min(best)[2]] += 1
    sw = data["plot-strategy-wins"]
    assert sw["groups"] == sum(wins.values()) == 4
    assert {w["strategy"]: w["wins"] for w in sw["wins"]} == dict(wins)
    checked.add("plot-strategy-wins")

    # per-run plots: from the record the table names
    runs = {k: v for k, v in data.items() if k.startswith("plot-run-")}
    assert runs, "the report drew no run"
    for name, block in runs.items():
        row = df[df["run_key"] == block["run_key"]].iloc[0]
        rec = Record.load(small_sweep.dir / row["record"])
        calls = [e for e in rec.events if e["type"] in ("model_call", "overflow")]
        tr = block["trace"]
        assert [c["estimate"] for c in tr["calls"]] == [e["estimate"] for e in calls]
        assert [c["true"] for c in tr["calls"]] == [e["true_input"] for e in calls]
        assert sum(c["true"] for c in tr["calls"] if not c["overflow"]) == \
            row["true_input_tokens"]
        assert len(tr["compactions"]) == row["compactions"]
        assert tr["trigger"] == row["trigger_ratio"] * row["context_size"]
        for c in tr["calls"]:
            # The parts are true-tokenizer counts without template tokens: below the true count.
            parts = c["system"] + c["tools"] + c["summary"] + c["history"]
            assert 0.8 * c["true"] <= parts <= c["true"] or c["overflow"]
        replies = [e for e in calls if e["purpose"] == "reply"]
        fx = block["facts"]
        assert fx["calls"] == [e["call"] for e in replies]
        for e, flags in zip(replies, fx["present"], strict=True):
            names = {*e["present"]["ids"], *(f"constraint:{c}" for c in
                                              e["present"]["constraints"])}
            assert {f for f, on in zip(fx["facts"], flags, strict=True) if on} == names
        checked.add(name)
    assert checked == set(data), f"blocks not recomputed: {set(data) - checked}"


def test_every_cell_runs_the_same_filler_and_the_report_needs_no_caveat(
        small_sweep: SmallSweep) -> None:
    df = small_sweep.df
    d = df[(df["scenario"] == "markup-followup-en") & (df["variant"] == "default") &
           (df["strategy"] == "structured")].set_index(["context_size", "trigger_ratio"])
    # Sized once for the grid (its largest trigger), not per cell.
    assert d["filler_tokens"].nunique() == 1 and d["filler_tokens"].iloc[0] > 0
    assert tables.sizing_keys(df, list(GRID)) == []
    text = small_sweep.report.read_text(encoding="utf-8")
    assert 'id="sizing"' not in text
    # The control: cells whose filler differs are seen, along the key they differ in.
    grown = df.copy()
    grown.loc[grown["context_size"] == 8192, "filler_exchanges"] += 1
    assert tables.sizing_keys(grown, list(GRID)) == ["context_size"]


def test_markup_in_scenario_text_is_escaped(small_sweep: SmallSweep) -> None:
    text = small_sweep.report.read_text(encoding="utf-8")
    assert "<script>document.title" not in text and "<script>window.pwned" not in text
    assert html.escape(MARKUP_TITLE, quote=False) in text.replace("&#34;", '"')
    assert html.escape(MARKUP_UTTERANCE, quote=False) in text
    # The only <script> elements are the JSON data blocks.
    opened = re.findall(r"<script\b[^>]*>", text)
    assert opened and all('type="application/json"' in s for s in opened)


def test_controls_are_kept_apart_and_fail_as_designed(small_sweep: SmallSweep) -> None:
    df = small_sweep.df
    ctl = tables.controls(df)
    assert {c["variant"] for c in ctl} == set(df[df["control"]]["variant"])
    ranked_keys = {k for r in tables.ranking(df, list(GRID)) for k in r["run_keys"]}
    assert not ranked_keys & set(df[df["control"]]["run_key"])
    text = small_sweep.report.read_text(encoding="utf-8")
    assert "failed as designed" in text


def test_truncate_ranks_below_structured(small_sweep: SmallSweep) -> None:
    # On these scenarios truncation drops the referent: a result that could come out either way.
    ranked = tables.ranking(small_sweep.df, list(GRID))
    by_strategy: dict[str, list[float]] = defaultdict(list)
    for r in ranked:
        by_strategy[r["cell"]["strategy"]].append(r["quality"]["value"])
    assert max(by_strategy["truncate"]) < min(by_strategy["structured"])
    headline = re.search(r'id="headline">(.*?)</p>', small_sweep.report.read_text("utf-8"))
    assert headline and "strategy=structured" in headline.group(1).split(" kept ")[0]


def test_pass_hat_k_pools_scenario_variants() -> None:
    df = pd.DataFrame({"scenario": ["a", "a", "a", "b", "b", "b"],
                       "variant": ["v"] * 6, "all_passed": [True, True, False, True, True, True]})
    k, value = tables._pass_k(df)
    # a: C(2,3)/C(3,3) = 0; b: 1 -> mean 0.5
    assert (k, value) == (3, 0.5)


def test_report_of_a_folder_that_is_not_a_sweep_is_one_line(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a sweep folder" in err and str(tmp_path) in err


def test_report_command_writes_a_timestamped_folder(small_sweep: SmallSweep, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(small_sweep.dir), "--reports", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    made = list(tmp_path.glob("*/index.html"))
    assert len(made) == 1 and re.fullmatch(r"\d{8}-\d{6}", made[0].parent.name)
    assert "Best quality at the lowest cost" in out and str(made[0]) in out


def test_drilldown_names_the_compaction_that_dropped_the_referent(small_sweep: SmallSweep
                                                                  ) -> None:
    from harnesslab.report.runs import drilldown

    df = small_sweep.df
    pick = df[(df["scenario"] == "markup-followup-en") & (df["variant"] == "default")]
    truncate = pick[pick["strategy"] == "truncate"].iloc[0]
    items = drilldown(Record.load(small_sweep.dir / truncate["record"]))
    follow = next(i for i in items if i["user"] == MARKUP_UTTERANCE)
    assert "O-1001" in follow["lost"] and "O-1001" not in follow["request"]["present"]
    assert follow["compaction"]["strategy"] == "truncate"
    assert "O-1001" in follow["compaction"]["dropped"]
    assert any("O-1001" in m["text"] for m in follow["compaction"]["removed_messages"])
    assert not follow["question_missing"]
    structured = pick[pick["strategy"] == "structured"]
    assert structured["all_passed"].all()
    assert drilldown(Record.load(small_sweep.dir / structured.iloc[0]["record"])) == []


def test_kill_table_pairs_each_harness_with_the_reference() -> None:
    base = {"variant": "v", "seed": 0, "error": None, "set.strategy": "pinned", "cell": "{}"}
    rows = [
        {**base, "scenario": "a", "set.harness": "reference", "failed_checks": "",
         "run_key": "r1"},
        {**base, "scenario": "a", "set.harness": "bug/x", "failed_checks": "s3.resolves",
         "run_key": "x1"},
        {**base, "scenario": "b", "set.harness": "reference", "failed_checks": "s1.answered",
         "run_key": "r2"},
        {**base, "scenario": "b", "set.harness": "bug/x", "failed_checks": "s1.answered",
         "run_key": "x2"},
        {**base, "scenario": "a", "set.harness": "bug/y", "failed_checks": "", "run_key": "y1"},
    ]
    kt = {k["harness"]: k for k in tables.kill_table(pd.DataFrame(rows), ["harness", "strategy"])}
    assert kt["bug/x"]["pairs"] == 2 and kt["bug/x"]["killed_in"] == 1
    assert kt["bug/x"]["first"]["fails"] == ["s3.resolves"] and kt["bug/x"]["run_keys"] == ["x1"]
    assert kt["bug/y"]["killed_in"] == 0 and kt["bug/y"]["first"] is None
    assert tables.kill_table(pd.DataFrame(rows), ["strategy"]) == []


def test_screenshots_without_chromium_name_what_to_install(
        small_sweep: SmallSweep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESSLAB_CHROMIUM", str(tmp_path / "no-chromium-here"))
    code = main(["report", str(small_sweep.dir), "--report-out", str(tmp_path / "r"),
                 "--screenshots"])
    err = capsys.readouterr().err
    assert code == 2 and "apt-get install chromium" in err.splitlines()[-1]
    assert (tmp_path / "r" / "index.html").is_file()  # the report itself was written


def _cell_row(scenario: str, harness: str, *, ok: int, of: int, error: str | None = None
              ) -> dict[str, object]:
    return {"scenario": scenario, "variant": "default", "seed": 0, "set.harness": harness,
            "control": False, "error": error, "overridden": "", "strategy": "structured",
            "followup_accuracy_num": ok, "followup_accuracy_den": of,
            "constraint_retention_num": 0, "constraint_retention_den": 0,
            "overflow_rate_num": 0, "overflow_rate_den": 1, "all_passed": ok == of,
            "true_input_tokens": 1000, "compactions": 0,
            "run_key": f"{scenario}-{harness}"}


def test_cells_are_ranked_on_the_runs_every_cell_completed() -> None:
    # The adapter cannot run scenario b (not applicable): the reference's run of b, which it
    # fails, must not count against it in a ranking the adapter is spared from.
    rows = [_cell_row("a", "reference", ok=2, of=2), _cell_row("b", "reference", ok=0, of=2),
            _cell_row("a", "agentscope", ok=2, of=2),
            _cell_row("b", "agentscope", ok=0, of=0, error="NotApplicable: strategy")]
    df = pd.DataFrame(rows)
    rank = {r["label"]: r for r in tables.ranking(df, ["harness"])}
    assert rank["harness=reference"]["quality"]["value"] == 1.0
    assert rank["harness=reference"]["run_keys"] == ["a-reference"]
    left = tables.unmatched(df, ["harness"])
    assert [(u["label"], u["units"]) for u in left] == [("harness=reference", ["b/default/0"])]
    # Control: when both cells complete b, it is compared for both.
    rows[3] = _cell_row("b", "agentscope", ok=1, of=2)
    rank = {r["label"]: r for r in tables.ranking(pd.DataFrame(rows), ["harness"])}
    assert rank["harness=reference"]["quality"]["value"] == 0.5
    assert tables.unmatched(pd.DataFrame(rows), ["harness"]) == []


def test_a_black_box_harness_sweep_has_no_heatmap_cells_and_no_traceback() -> None:
    # A program reports no strategy, context size or trigger (its table shows '-'): a sweep
    # of one (the Codex CLI over codex.auto_compact_limit) raised TypeError building the heatmaps.
    rows = [{**_cell_row("a", "cmd:agent.py", ok=1, of=1), "strategy": None,
             "context_size": None, "trigger_ratio": None, "set.codex.auto_compact_limit": n,
             "run_key": f"a-{n}"} for n in (8000, 16000)]
    df = pd.DataFrame(rows)
    grid = ["codex.auto_compact_limit"]
    assert tables.heatmaps(df, grid) == {"context_sizes": [], "trigger_ratios": [], "panels": []}
    assert len(tables.ranking(df, grid)) == 2
    # Control: the reference harness's rows keep their place on the axes.
    ref = [{**r, "strategy": "codex", "context_size": 8192, "trigger_ratio": 0.8} for r in rows]
    maps = tables.heatmaps(pd.DataFrame(ref), grid)
    assert maps["context_sizes"] == [8192] and maps["panels"]


def test_not_applicable_runs_are_neither_errors_nor_controls_not_as_designed() -> None:
    df = pd.DataFrame({
        "scenario": ["a", "a", "a"], "variant": ["c", "c", "d"], "run_key": ["k1", "k2", "k3"],
        "seed": [0, 1, 0], "cell": ["{}", "{}", "{}"], "control": [True, True, False],
        "expected": [True, False, False], "failed_checks": ["s1.x", "", ""],
        "unexpected": ["", "", ""],
        "error": [None, "NotApplicable: sets tools=[]; H honours none of: tools", "Boom: no"]})
    assert tables.not_applicable(df) == [{"scenario": "a", "variant": "c", "runs": 1,
                                          "reason": "sets tools=[]; H honours none of: tools",
                                          "run_keys": ["k2"]}]
    assert [e["run_key"] for e in tables.errors(df)] == ["k3"]
    (ctl,) = tables.controls(df)
    assert (ctl["runs"], ctl["as_designed"], ctl["not_as_designed_count"]) == (1, 1, 0)


def test_the_headline_says_how_many_runs_passed_every_check_beside_pooled_quality() -> None:
    from harnesslab.report.html import headline

    cell = {"label": "strategy=pinned", "quality": {"value": 0.97, "num": 97, "den": 100,
                                                    "ci": None},
            "cost": 1000.0, "all_passed": {"value": 0.8}}
    line = headline([cell])
    assert "kept 97% of follow-ups and constraints" in line
    assert "80% of its runs passing every check" in line
    # The control: a cell whose run share is unknown says nothing about it.
    assert "passing every check" not in headline([{**cell, "all_passed": {"value": None}}])


def test_a_swept_estimator_sizes_its_own_conversation_and_the_headline_ranks_within_it(
        tmp_path: Path) -> None:
    """An estimator sizes the small talk in its own count, so its cells run different
    conversations: the report ranks within each estimator and says so; the control, a strategy
    grid over the same conversation, is ranked as one."""
    from harnesslab.report.html import build

    def sweep(name: str, *grid: str) -> dict[str, Any]:
        out = tmp_path / name
        args = ["sweep", "--scenario", "followup-after-filler-zh", "--variant", "default",
                "--out", str(out), "--no-report", "--executor", "serial"]
        for g in grid:
            args += ["--grid", g]
        assert main(args) == 0
        return build(out)

    view = sweep("est", "estimator=bytes4,o200k_base", "strategy=structured,truncate")
    assert view["sizing_keys"] == ["estimator"]
    head = view["headline"]
    assert head.startswith("The conversation itself changes with estimator")
    assert "estimator=bytes4" in head and "estimator=o200k_base" in head
    assert head.count("best ") == 2  # one ranking per estimator, each of two strategies
    same = sweep("strategy", "strategy=structured,truncate")
    assert same["sizing_keys"] == [] and same["headline"].startswith("Best quality")
    # A swept service counts the same small talk in another tokenizer: the same conversation.
    svc = sweep("service", "service=openai-128k,qwen-131k")
    assert svc["sizing_keys"] == [] and svc["headline"].startswith("Best quality")
