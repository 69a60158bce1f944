"""The simulated world's only randomness: a uniform draw from a hash of the seed and what is
drawn, so that an outcome depends on what it is about, never on call order; and the fake
model's tool-call ids, a hash of the request's text and the call."""

from __future__ import annotations

import hashlib
import re

# What call_id makes: a harness that quotes a call as text (smolagents' "Calling tools:
# [{'id': ...") still shows which call it took up.
CALL_ID_RE = re.compile(r"call_[0-9a-f]{12}")


def draw(seed: int, *key: str) -> float:
    """A uniform number in [0, 1) from sha256 of the seed and the key parts."""
    raw = "\x1f".join([str(seed), *key]).encode("utf-8")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big") / 2.0**64


def call_id(serialized: str, name: str, args: str) -> str:
    """The id of a tool call the fake model makes: ``serialized`` (the request's text as it
    reads it), the tool's name and the arguments, hashed."""
    return "call_" + hashlib.sha256((serialized + name + args).encode("utf-8")).hexdigest()[:12]
