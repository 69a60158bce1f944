"""The default embedder: hashed character n-grams, deterministic and offline, for Chinese and
English alike.

Text is NFKC-normalised and lower-cased; every run of CJK characters contributes its
character unigrams and bigrams (Chinese has no spaces, and two characters are roughly a word),
every other run of letters and digits its character trigrams with word boundaries marked, so
"deliver" and "delivery" share most of their grams. Each gram is hashed (blake2b, keyed by
nothing that varies) into one of ``dim`` signed buckets; the vector is L2-normalised, so the
dot product of two vectors is their cosine similarity.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence

__all__ = ["HashedNgramEmbedder", "cosine"]

_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_WORD_RUN = re.compile(r"[^\W_]+")


def _grams(text: str) -> Iterator[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    for run in _CJK_RUN.findall(text):
        yield from run
        yield from (run[i:i + 2] for i in range(len(run) - 1))
    for word in _WORD_RUN.findall(_CJK_RUN.sub(" ", text)):
        padded = f"<{word}>"
        yield from (padded[i:i + 3] for i in range(max(1, len(padded) - 2)))


class HashedNgramEmbedder:
    """``embed(text)`` -> a unit vector of ``dim`` floats (all zeros for text with no grams)."""

    name = "hashed-ngrams"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def embed(self, text: str) -> tuple[float, ...]:
        v = [0.0] * self.dim
        for g in _grams(text):
            h = int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "big")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in v))
        return tuple(x / norm for x in v) if norm else tuple(v)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))
