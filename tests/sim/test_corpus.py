"""The dialect corpus (tests/sim/corpus/*.json: requests real frameworks sent through the
black-box route, each labelled with what it shows): for every captured request the fake model
finds the question, the time, the summary request and the presented summary it contains, and
a copy without them is read as missing (the control)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harnesslab.messages import HintBlock, Request, TextBlock, request_from_dict
from harnesslab.scenario.loader import bundled_dir, load_scenario
from harnesslab.sim.facts import tag_fact
from harnesslab.sim.intents import ID_PATTERNS, Constraint
from harnesslab.sim.model import FakeModel
from harnesslab.sim.prose import prose_facts
from harnesslab.sim.reading import View
from harnesslab.sim.summarizer import restates, summary_request

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.json"))
ENTRIES = [(p.stem, n, e) for p in CORPUS
           for n, e in enumerate(json.loads(p.read_text(encoding="utf-8"))["entries"])]


def test_the_corpus_covers_several_frameworks() -> None:
    files = [json.loads(p.read_text(encoding="utf-8")) for p in CORPUS]
    assert len({f["framework"] for f in files}) >= 6
    assert all(f["version"] and (Path(__file__).parents[2] / f["example"]).exists() for f in files)
    whats = [e["what"] for _, _, e in ENTRIES]
    assert whats.count("summary_request") >= 3
    assert sum(bool(e.get("summary_text")) for _, _, e in ENTRIES) >= 3
    assert sum(bool(e.get("time_text")) for _, _, e in ENTRIES) >= 4


def _scenario(name: str) -> Any:
    file = json.loads((Path(__file__).parent / "corpus" / f"{name}.json").read_text("utf-8"))
    return load_scenario(bundled_dir() / f"{file['scenario']}.yaml")


def _view(name: str, r: Request) -> tuple[View, FakeModel]:
    sc = _scenario(name)
    model = FakeModel(sc.intents(), zone=sc.world.now.tzinfo)
    # The model's own reader: a time stated without a zone is in the scenario's.
    return View(r, model._lexicon, model._phrases, model._reader), model


def without(r: Request, old: str, new: str = "") -> Request:
    """``r`` with every occurrence of ``old`` in its texts replaced."""
    def block(b: Any) -> Any:
        if isinstance(b, TextBlock):
            return TextBlock(b.text.replace(old, new))
        if isinstance(b, HintBlock) and isinstance(b.hint, str):
            return replace(b, hint=b.hint.replace(old, new))
        return b

    return replace(r, system=r.system.replace(old, new), summary=r.summary.replace(old, new),
                   messages=tuple(replace(m, content=tuple(block(b) for b in m.content))
                                  for m in r.messages))


@pytest.mark.parametrize(("name", "n", "entry"), [e for e in ENTRIES if e[2]["what"] == "turn"],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_framework_turn_is_read(name: str, n: int, entry: dict[str, Any]) -> None:
    r = request_from_dict(entry["request"])
    view, _ = _view(name, r)
    assert view.current()[1] is not None and view.current()[1][0] == entry["question"]
    # The control: without the user's words there is no question to read.
    gone, _ = _view(name, without(r, entry["question"], "……"))
    assert gone.current()[1] is None or gone.current()[1][0] != entry["question"]
    if entry["time_text"]:
        now = datetime.fromisoformat(entry["now"])
        if re.search(r"\d{4}-\d{2}-\d{2}</", entry["time_text"]):
            # A date only (Codex's <current_date>): that day's first moment.
            now = now.replace(hour=0, minute=0, second=0, microsecond=0)
        assert view.now == now
        assert _view(name, without(r, entry["time_text"]))[0].now is None
    if entry["summary_text"]:
        text = entry["summary_text"]
        wanted = {Constraint(c) for c in re.findall(r"\[constraint:(\w+)\]", text)}
        ids = {m.group(0) for p in ID_PATTERNS.values() for m in p.finditer(text)}
        assert wanted and ids
        assert wanted <= view.constraints and ids <= set(view.entities())
        bare, _ = _view(name, without(r, text))
        assert not (wanted & bare.constraints) and not (ids & set(bare.entities()))


@pytest.mark.parametrize(("name", "n", "entry"),
                         [e for e in ENTRIES if e[2]["what"] == "summary_request"],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_framework_summary_request_is_read(name: str, n: int, entry: dict[str, Any]) -> None:
    r = request_from_dict(entry["request"])
    view, model = _view(name, r)
    assert summary_request(view) is not None
    reply = model.reply(r)
    assert reply.annotations["kind"] == "summary"
    assert any(i["kind"] == "goal" for i in reply.annotations["items"]["kept"])
    # The control: without the framework's instruction it is no summary request.
    bare = r
    for ask in entry["asks"]:
        bare = without(bare, ask)
    view, model = _view(name, bare)
    assert summary_request(view) is None
    assert model.reply(bare).annotations["kind"] != "summary"


@pytest.mark.parametrize(("name", "n", "entry"),
                         [e for e in ENTRIES if e[2]["what"] == "summary_request"],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_framework_summary_keeps_the_facts_its_transcript_states(
        name: str, n: int, entry: dict[str, Any]) -> None:
    """Whoever stated a fact (a tool result, or only the assistant's answer, as agno's summary
    prompt quotes it) the summary keeps it; without the answers' words only a tool result's
    fact is left (agno's request has none: nothing is)."""
    r = request_from_dict(entry["request"])
    view, model = _view(name, r)

    def kept(reply: Any) -> list[Any]:
        return [tag_fact(i["text"][len("[fact:"):-1], 0)
                for i in reply.annotations["items"]["kept"] if i["kind"] == "fact"]

    stated = prose_facts(view.text)
    facts = kept(model.reply(r))
    assert all(any(k.key == p.key and restates(p, k) for k in facts) for p in stated)
    bare = r
    for p in stated:
        bare = without(bare, view.text[p.position:view.text.index("。", p.position) + 1], "……")
    results = [f for f in _view(name, bare)[0].facts if f.source == "tool_result"]
    assert len(kept(_view(name, bare)[1].reply(bare))) == len({(f.tool, f.key) for f in results})
    if name == "agno":
        assert stated and facts and not results  # the case this reading exists for
