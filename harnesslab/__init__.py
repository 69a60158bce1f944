"""harnesslab: measure how agent harnesses manage context, offline and deterministically."""

from harnesslab.errors import (
    ContextOverflowError,
    HarnessLabError,
    InputError,
    OverflowDetail,
    TokenizerUnavailable,
)
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
from harnesslab.sim.service import PROFILES, ServiceProfile, SimulatedService, Usage
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
    "PROFILES",
    "TOKENIZER_NAMES",
    "ContextOverflowError",
    "DataBlock",
    "HarnessLabError",
    "HintBlock",
    "InputError",
    "Message",
    "OverflowDetail",
    "Request",
    "RequestCounter",
    "ServiceProfile",
    "SimulatedService",
    "TextBlock",
    "ThinkingBlock",
    "TokenCache",
    "TokenizerUnavailable",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolSchema",
    "Usage",
    "__version__",
    "bytes4",
    "chars4",
    "get_tokenizer",
    "make_rule",
]
