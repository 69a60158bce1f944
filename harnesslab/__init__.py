"""harnesslab: measure how agent harnesses manage context, offline and deterministically.

The public API is ``__all__``. Each name is imported from its module on first use (PEP 562), so
``import harnesslab`` and ``harnesslab --version`` load no scenario model, tokenizer or plot
library until a name that needs one is touched.
"""

from __future__ import annotations

import importlib

# Not typing's: importing typing costs a program that only launches (adapters.zygote) a tenth
# of its start. Type checkers read any TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# name -> the module that defines it
_WHERE: dict[str, str] = {
    "ContextOverflowError": "harnesslab.errors",
    "HarnessLabError": "harnesslab.errors",
    "InputError": "harnesslab.errors",
    "OverflowDetail": "harnesslab.errors",
    "ProtocolError": "harnesslab.errors",
    "ServiceRejected": "harnesslab.errors",
    "TokenizerUnavailable": "harnesslab.errors",
    "ReferenceHarness": "harnesslab.harness.agent",
    "Harness": "harnesslab.harness.base",
    "HarnessBase": "harnesslab.harness.base",
    "HarnessContext": "harnesslab.harness.base",
    "Session": "harnesslab.harness.base",
    "TurnResult": "harnesslab.harness.base",
    "STRATEGIES": "harnesslab.harness.compaction",
    "HarnessConfig": "harnesslab.harness.config",
    "HARNESSES": "harnesslab.harnesses.registry",
    "load_harness": "harnesslab.harnesses.registry",
    "register_harness": "harnesslab.harnesses.registry",
    "CheckOutcome": "harnesslab.judge.checks",
    "Verdict": "harnesslab.judge.checks",
    "run_metrics": "harnesslab.judge.metrics",
    "DataBlock": "harnesslab.messages",
    "HintBlock": "harnesslab.messages",
    "Message": "harnesslab.messages",
    "Request": "harnesslab.messages",
    "TextBlock": "harnesslab.messages",
    "ThinkingBlock": "harnesslab.messages",
    "ToolCallBlock": "harnesslab.messages",
    "ToolResultBlock": "harnesslab.messages",
    "ToolSchema": "harnesslab.messages",
    "Record": "harnesslab.record.format",
    "RecordWriter": "harnesslab.record.writer",
    "RunResult": "harnesslab.run.runner",
    "run_scenario_file": "harnesslab.run.runner",
    "run_variant": "harnesslab.run.runner",
    "load_scenario": "harnesslab.scenario.loader",
    "Scenario": "harnesslab.scenario.schema",
    "Variant": "harnesslab.scenario.schema",
    "Endpoint": "harnesslab.sim.endpoint",
    "Act": "harnesslab.sim.intents",
    "Constraint": "harnesslab.sim.intents",
    "Intent": "harnesslab.sim.intents",
    "FakeModel": "harnesslab.sim.model",
    "ModelReply": "harnesslab.sim.model",
    "SummarizerProfile": "harnesslab.sim.model",
    "PROFILES": "harnesslab.sim.service",
    "ServiceProfile": "harnesslab.sim.service",
    "SimulatedService": "harnesslab.sim.service",
    "Usage": "harnesslab.sim.service",
    "ToolBox": "harnesslab.sim.tools",
    "SimClock": "harnesslab.sim.world",
    "World": "harnesslab.sim.world",
    "WorldSpec": "harnesslab.sim.world",
    "pass_hat_k": "harnesslab.stats",
    "wilson": "harnesslab.stats",
    "ESTIMATOR_NAMES": "harnesslab.tokens",
    "RequestCounter": "harnesslab.tokens",
    "TOKENIZER_NAMES": "harnesslab.tokens",
    "TokenCache": "harnesslab.tokens",
    "bytes4": "harnesslab.tokens",
    "chars4": "harnesslab.tokens",
    "get_tokenizer": "harnesslab.tokens",
    "make_rule": "harnesslab.tokens",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports lazily
    from harnesslab.errors import (
        ContextOverflowError,
        HarnessLabError,
        InputError,
        OverflowDetail,
        ProtocolError,
        ServiceRejected,
        TokenizerUnavailable,
    )
    from harnesslab.harness.agent import ReferenceHarness
    from harnesslab.harness.base import Harness, HarnessBase, HarnessContext, Session, TurnResult
    from harnesslab.harness.compaction import STRATEGIES
    from harnesslab.harness.config import HarnessConfig
    from harnesslab.harnesses.registry import HARNESSES, load_harness, register_harness
    from harnesslab.judge.checks import CheckOutcome, Verdict
    from harnesslab.judge.metrics import run_metrics
    from harnesslab.messages import (
        DataBlock,
        HintBlock,
        Message,
        Request,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
        ToolResultBlock,
        ToolSchema,
    )
    from harnesslab.record.format import Record
    from harnesslab.record.writer import RecordWriter
    from harnesslab.run.runner import RunResult, run_scenario_file, run_variant
    from harnesslab.scenario.loader import load_scenario
    from harnesslab.scenario.schema import Scenario, Variant
    from harnesslab.sim.endpoint import Endpoint
    from harnesslab.sim.intents import Act, Constraint, Intent
    from harnesslab.sim.model import FakeModel, ModelReply, SummarizerProfile
    from harnesslab.sim.service import PROFILES, ServiceProfile, SimulatedService, Usage
    from harnesslab.sim.tools import ToolBox
    from harnesslab.sim.world import SimClock, World, WorldSpec
    from harnesslab.stats import pass_hat_k, wilson
    from harnesslab.tokens import (
        ESTIMATOR_NAMES,
        TOKENIZER_NAMES,
        RequestCounter,
        TokenCache,
        bytes4,
        chars4,
        get_tokenizer,
        make_rule,
    )


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harnesslab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "ESTIMATOR_NAMES",
    "HARNESSES",
    "PROFILES",
    "STRATEGIES",
    "TOKENIZER_NAMES",
    "Act",
    "CheckOutcome",
    "Constraint",
    "ContextOverflowError",
    "DataBlock",
    "Endpoint",
    "FakeModel",
    "Harness",
    "HarnessBase",
    "HarnessConfig",
    "HarnessContext",
    "HarnessLabError",
    "HintBlock",
    "InputError",
    "Intent",
    "Message",
    "ModelReply",
    "OverflowDetail",
    "ProtocolError",
    "Record",
    "RecordWriter",
    "ReferenceHarness",
    "Request",
    "RequestCounter",
    "RunResult",
    "Scenario",
    "ServiceProfile",
    "ServiceRejected",
    "Session",
    "SimClock",
    "SimulatedService",
    "SummarizerProfile",
    "TextBlock",
    "ThinkingBlock",
    "TokenCache",
    "TokenizerUnavailable",
    "ToolBox",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolSchema",
    "TurnResult",
    "Usage",
    "Variant",
    "Verdict",
    "World",
    "WorldSpec",
    "__version__",
    "bytes4",
    "chars4",
    "get_tokenizer",
    "load_harness",
    "load_scenario",
    "make_rule",
    "pass_hat_k",
    "register_harness",
    "run_metrics",
    "run_scenario_file",
    "run_variant",
    "wilson",
]
