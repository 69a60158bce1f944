"""harnesslab: measure how agent harnesses manage context, offline and deterministically."""

from harnesslab.bench.checks import CheckOutcome, Verdict
from harnesslab.bench.metrics import pass_hat_k, run_metrics, wilson
from harnesslab.bench.record import Record
from harnesslab.bench.runner import RunResult, run_scenario_file, run_variant
from harnesslab.bench.scenario import Scenario, Variant, load_scenario
from harnesslab.bench.writer import RecordWriter
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
from harnesslab.harness.registry import HARNESSES, load_harness, register_harness
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
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.intents import Act, Constraint, Intent
from harnesslab.sim.model import FakeModel, ModelReply, SummarizerProfile
from harnesslab.sim.service import PROFILES, ServiceProfile, SimulatedService, Usage
from harnesslab.sim.tools import ToolBox
from harnesslab.sim.world import SimClock, World, WorldSpec
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

__version__ = "0.1.0"

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
