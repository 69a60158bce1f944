"""Against the real AgentScope 2.0.11 package (the ``agentscope`` extra): our bytes4 equals its
``ChatModelBase.count_tokens`` on every request of bundled records, and the ``agentscope``
prompts profile reads its texts from the package. Marked slow: .ci/run installs the extra.

    pip install -e '.[agentscope]' && pytest -m agentscope
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnesslab.messages import (
    Request,
)
from harnesslab.record.format import Record
from harnesslab.run.runner import run_scenario_file
from harnesslab.scenario.loader import bundled_dir
from harnesslab.tokens import Bytes4Rule, count_request

pytestmark = [pytest.mark.slow, pytest.mark.agentscope]
agentscope = pytest.importorskip("agentscope", reason="pip install -e '.[agentscope]'")

from agentscope import message as am  # noqa: E402

from tests.agentscope_support import offline_model, to_agentscope  # noqa: E402


def agentscope_count(r: Request) -> int:
    """What AgentScope's _prepare_model_input + count_tokens give for this request."""
    model = offline_model()
    msgs = [am.Msg(name="system", role="system", content=[am.TextBlock(text=r.system)])]
    if r.summary:
        msgs.append(am.Msg(name="user", role="user", content=[am.TextBlock(text=r.summary)]))
    msgs += [to_agentscope(m) for m in r.messages]
    tools = [t.to_dict() for t in r.tools] or None
    n: int = asyncio.run(model.count_tokens(msgs, tools))
    return n


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("as")
    for name in ("followup-after-filler-zh", "image-limit-zh", "tool-output-flood-zh",
                 "spoofed-identity-zh", "offload-path-hint-zh", "brevity-30-turns-zh"):
        run_scenario_file(bundled_dir() / f"{name}.yaml", out_dir=out)
    return sorted(out.glob("*/*/seed0.jsonl"))


def test_bytes4_equals_agentscope_count_tokens_on_recorded_requests(records: list[Path]) -> None:
    checked = 0
    for path in records:
        rec = Record.load(path)
        for e in rec.of_type("model_call", "overflow"):
            req = rec.request(e["request"])
            ours = count_request(Bytes4Rule(), req)
            assert ours == agentscope_count(req), (path, e["call"])
            if rec.header["harness"]["estimator"] == "bytes4" and \
                    not dict(req.meta).get("tool_choice"):
                assert e["estimate"] == ours
            checked += 1
    assert checked > 100


def test_agentscope_prompts_profile_reads_the_package() -> None:
    from agentscope.agent import ContextConfig, InjectionConfig

    from harnesslab.harness.prompts import load_prompts

    p = load_prompts("agentscope")
    assert p.compression == ContextConfig().compression_prompt
    assert p.summary_templates["agentscope"] == ContextConfig().summary_template
    assert p.runtime_template == InjectionConfig().template


def test_suite_holds_with_agentscope_prompts(tmp_path: Path) -> None:
    results = run_scenario_file(bundled_dir() / "followup-after-filler-zh.yaml", out_dir=tmp_path,
                                cli_set={"prompts": "agentscope"})
    assert all(r.expected for r in results), [r.verdict for r in results]
