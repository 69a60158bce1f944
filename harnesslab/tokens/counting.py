"""Counting requests: a per-run cache of encoded texts, the counting rules (bytes4, chars4,
a real tokenizer) and the incremental request counter that encodes each message once.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from harnesslab.errors import TokenizerUnavailable
from harnesslab.messages import (
    History,
    Message,
    Request,
    ToolCallBlock,
    ToolSchema,
    block_data_count,
    block_texts,
    tools_json,
)
from harnesslab.tokens.tokenizers import (
    CHARS4_PER_IMAGE,
    CHARS4_PER_MESSAGE,
    DATA_BLOCK_TOKENS,
    TOKENIZER_LOADERS,
    TOKENIZER_NAMES,
    Tokenizer,
    check_tokenizer,
    get_tokenizer,
)

_TEXTS_KEPT = 1 << 12


class CountingTokenizer:
    """A tokenizer with a per-run cache: each distinct text is encoded once.

    Given a loader instead of a tokenizer, it loads on the first non-empty text it counts:
    a vocabulary costs a few tenths of a second per process, spent only where a count is
    needed. ``encoded`` counts the texts actually sent to the tokenizer, which is what the
    once-per-message tests and benchmarks observe.
    """

    def __init__(self, tokenizer: Tokenizer | None = None, *, name: str = "",
                 load: Callable[[], Tokenizer] | None = None) -> None:
        if tokenizer is None and load is None:
            raise TypeError("CountingTokenizer needs a tokenizer or a loader")
        self.name = tokenizer.name if tokenizer is not None else name
        self._tok = tokenizer
        self._load = load
        self._cache: OrderedDict[str, int] = OrderedDict()
        self.encoded = 0

    @property
    def loaded(self) -> bool:
        return self._tok is not None

    def _tokenizer(self) -> Tokenizer:
        if self._tok is None:
            assert self._load is not None
            self._tok = self._load()
        return self._tok

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            n = self._tokenizer().count(text) if text else 0
            if len(self._cache) >= _TEXTS_KEPT:
                # Counters keep each live message's count themselves; this cache only spares
                # re-encoding texts seen moments ago, and must not grow with the run: the
                # oldest goes (full, it stays as full, rather than refilling from empty).
                self._cache.popitem(last=False)
            self._cache[text] = n
            self.encoded += 1
        return n


class TokenCache:
    """One CountingTokenizer per tokenizer name, shared by every counter of a run (the
    harness's estimator and the service's true count use the same cache)."""

    def __init__(self, loader: Callable[[str], Tokenizer] = get_tokenizer) -> None:
        self._loader = loader
        self._by_name: dict[str, CountingTokenizer] = {}

    def tokenizer(self, name: str) -> CountingTokenizer:
        """The counting tokenizer of ``name``, loaded when it first counts. An unknown name or
        a missing package fails here, at once (``check_tokenizer``), not inside a call."""
        t = self._by_name.get(name)
        if t is None:
            if self._loader is get_tokenizer:
                check_tokenizer(name)
            load = self._loader
            t = self._by_name[name] = CountingTokenizer(name=name, load=lambda: load(name))
        return t


# --- counting rules and the incremental counter ----------------------------------------------

class CountRule(Protocol):
    """How a request turns into a number: additive units per message and for the fixed head
    (system prompt, summary, tool schemas), then one final rounding over the sum."""

    name: str

    def message_units(self, m: Message) -> int: ...

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int: ...

    def finalize(self, units: int) -> int: ...


class Bytes4Rule:
    """AgentScope 2.0.x ``count_tokens``: UTF-8 bytes of the concatenated counted texts
    (system prompt, summary, text/thinking/hint/tool-call input/tool-result text, and
    ``json.dumps(tools, ensure_ascii=False)`` when there are tools), rounded half up once over
    the whole; plus 2000 per data block. Roles, names and ids are not counted.

    Units are bytes, with 8000 bytes per data block, so that ``int(units / 4 + 0.5)`` adds
    exactly 2000 per block after the single rounding.
    """

    name = "bytes4"

    def message_units(self, m: Message) -> int:
        u = 0
        for b in m.content:
            for t in block_texts(b):
                u += len(t.encode("utf-8"))
            u += block_data_count(b) * DATA_BLOCK_TOKENS * 4
        return u

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int:
        u = len(system.encode("utf-8")) + len(summary.encode("utf-8"))
        if tools:
            u += len(tools_json(tools).encode("utf-8"))
        return u

    def finalize(self, units: int) -> int:
        return int(units / 4 + 0.5)


class Chars4Rule:
    """LangChain ``count_tokens_approximately`` applied to harnesslab messages: per message,
    ``ceil(chars / 4) + 3`` where chars are the counted texts, tool-call names, the role and the
    name; 85 per data block; the system prompt counts as a system message and the summary as a
    user message; the tool schemas add ``ceil(chars / 4)`` once over their ``json.dumps`` (ASCII
    escapes, as LangChain does). Checked against langchain-core 1.8.3."""

    name = "chars4"

    def message_units(self, m: Message) -> int:
        chars = len(m.role) + len(m.name)
        images = 0
        for b in m.content:
            for t in block_texts(b):
                chars += len(t)
            if isinstance(b, ToolCallBlock):
                chars += len(b.name)
            images += block_data_count(b)
        return math.ceil(chars / 4) + CHARS4_PER_MESSAGE + CHARS4_PER_IMAGE * images

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int:
        u = 0
        if system:
            u += math.ceil((len(system) + len("system")) / 4) + CHARS4_PER_MESSAGE
        if summary:
            u += math.ceil((len(summary) + len("user")) / 4) + CHARS4_PER_MESSAGE
        if tools:
            # LangChain dumps each tool dict with json.dumps defaults (ASCII escapes) and rounds
            # the summed characters up once.
            u += math.ceil(sum(len(json.dumps(t.to_dict())) for t in tools) / 4)
        return u

    def finalize(self, units: int) -> int:
        return units


class TokenizerRule:
    """A real tokenizer used as the harness's estimator: the sum of its counts over the same
    texts bytes4 counts (each text encoded on its own), with no chat-template overhead; a data
    block costs ``image_tokens``."""

    def __init__(self, tokenizer: CountingTokenizer, image_tokens: int = 765) -> None:
        self.name = tokenizer.name
        self.tok = tokenizer
        self.image_tokens = image_tokens

    def message_units(self, m: Message) -> int:
        count = self.tok.count
        u = 0
        for b in m.content:
            for t in block_texts(b):
                u += count(t)
            u += block_data_count(b) * self.image_tokens
        return u

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int:
        count = self.tok.count
        u = count(system) + count(summary)
        if tools:
            u += count(tools_json(tools))
        return u

    def finalize(self, units: int) -> int:
        return units


ESTIMATOR_NAMES: tuple[str, ...] = ("bytes4", "chars4", *TOKENIZER_NAMES)


def make_rule(name: str, cache: TokenCache | None = None) -> CountRule:
    """The counting rule of an estimator name: bytes4, chars4 or a real tokenizer name."""
    if name == "bytes4":
        return Bytes4Rule()
    if name == "chars4":
        return Chars4Rule()
    if name in TOKENIZER_LOADERS:
        return TokenizerRule((cache or TokenCache()).tokenizer(name))
    raise TokenizerUnavailable(
        f"unknown estimator {name!r}; expected one of: {', '.join(ESTIMATOR_NAMES)}")


def common_prefix(a: tuple[Message, ...], b: tuple[Message, ...]) -> int:
    """Length of the longest common prefix, by C-level tuple comparison (identity first)."""
    k = min(len(a), len(b))
    if a[:k] == b[:k]:
        return k
    lo, hi = 0, k - 1  # a[:lo] == b[:lo] holds; a[:hi+1] != b[:hi+1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class RequestCounter:
    """Counts whole requests with a rule, incrementally.

    Per-message units are cached (a message is measured once however many calls include it;
    once the cache holds twice the live context, messages no longer in it are let go) and
    the prefix sums of the last request's messages are kept, so a request that extends
    or edits the previous one costs only its new messages.
    """

    def __init__(self, rule: CountRule) -> None:
        self.rule = rule
        self._msg_units: dict[int, tuple[Message, int]] = {}
        self._head: dict[tuple[str, str, tuple[ToolSchema, ...]], int] = {}
        self._seq: tuple[Message, ...] = ()
        self._cum: list[int] = [0]
        self.measured = 0  # messages measured (cache misses)

    @property
    def name(self) -> str:
        return self.rule.name

    def message_units(self, m: Message) -> int:
        hit = self._msg_units.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        u = self.rule.message_units(m)
        # Keeping the message alive keeps its id from being reused by another object.
        self._msg_units[id(m)] = (m, u)
        self.measured += 1
        return u

    def messages_units(self, messages: tuple[Message, ...]) -> int:
        if isinstance(messages, History) and messages.base is self._seq:
            n = messages.shared  # derived from the last sequence counted: no comparison needed
        else:
            n = common_prefix(self._seq, messages)
        del self._cum[n + 1:]
        cum = self._cum
        for m in messages[n:]:
            cum.append(cum[-1] + self.message_units(m))
        self._seq = messages
        if len(self._msg_units) > 2 * len(messages) + 1024:
            # Messages compacted away do not come back: keep the live ones only, so that
            # memory follows the context, not the run (amortised: the cache doubled first).
            self._msg_units = {id(m): (m, cum[i + 1] - cum[i]) for i, m in enumerate(messages)}
        return cum[-1]

    def head_units(self, system: str, summary: str, tools: tuple[ToolSchema, ...]) -> int:
        key = (system, summary, tools)
        u = self._head.get(key)
        if u is None:
            if len(self._head) > 64:
                self._head.clear()
            u = self._head[key] = self.rule.head_units(system, summary, tools)
        return u

    def count_parts(self, system: str, summary: str, messages: tuple[Message, ...],
                    tools: tuple[ToolSchema, ...] = ()) -> int:
        units = self.head_units(system, summary, tools) + self.messages_units(messages)
        return self.rule.finalize(units)

    def count(self, request: Request) -> int:
        return self.count_parts(request.system, request.summary, request.messages, request.tools)

    def count_aside(self, request: Request) -> int:
        """``count`` of a request outside the run's sequence (a filler's messages, counted
        before the harness sends them): it uses and fills the per-message cache but leaves
        the last request's prefix sums, so the next call in sequence still costs only its
        new messages."""
        units = self.head_units(request.system, request.summary, request.tools)
        units += sum(self.message_units(m) for m in request.messages)
        return self.rule.finalize(units)


def count_request(rule: CountRule, request: Request) -> int:
    """A full, non-incremental count (the reference the incremental counter must equal)."""
    units = rule.head_units(request.system, request.summary, request.tools)
    units += sum(rule.message_units(m) for m in request.messages)
    return rule.finalize(units)
