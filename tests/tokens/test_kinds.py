"""Content kinds by C-level string operations agree with the per-character definition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnesslab.tokens.kinds import script_counts, script_kind


def _is_cjk(c: str) -> bool:
    o = ord(c)
    return (0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF
            or 0xAC00 <= o <= 0xD7AF or 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF
            or 0x20000 <= o <= 0x2FA1F)


def reference_counts(text: str) -> tuple[int, int]:
    """The former implementation, one character at a time: the definition of the kinds."""
    cjk = latin = 0
    for c in text:
        if _is_cjk(c):
            cjk += 1
        elif c.isalpha():
            latin += 1
    return cjk, latin


def reference_kind(text: str) -> str:
    cjk, latin = reference_counts(text)
    if cjk + latin == 0:
        return "en"
    share = cjk / (cjk + latin)
    return "zh" if share >= 0.8 else "en" if share <= 0.2 else "mixed"


@pytest.mark.slow  # 1.1 million characters through the reference loop: about 2 s
def test_every_code_point_is_counted_as_before() -> None:
    # Blocks of 256 code points: a character put in the wrong class changes a block's counts.
    for start in range(0, 0x110000, 256):
        block = "".join(map(chr, range(start, start + 256)))
        assert script_counts(block) == reference_counts(block), hex(start)


# Characters near every boundary that matters: ASCII, Latin-1 and Cyrillic letters, the edges of
# the CJK ranges, full-width forms, astral letters, ideographs and emoji, digits, punctuation.
_EDGES = [0x41, 0x5A, 0x61, 0x7A, 0x30, 0x20, 0x2E, 0xAA, 0xB2, 0xC0, 0xE9, 0x410, 0x44F, 0x2FFF,
          0x3000, 0x303F, 0x3040, 0x30FF, 0x3100, 0x33FF, 0x3400, 0x9FFF, 0xA000, 0xABFF, 0xAC00,
          0xD7AF, 0xD7B0, 0xF8FF, 0xF900, 0xFAFF, 0xFB00, 0xFEFF, 0xFF00, 0xFF21, 0xFFEF, 0xFFF0,
          0x10400, 0x1D400, 0x1F600, 0x1FFFF, 0x20000, 0x2FA1F, 0x2FA20, 0x30000, 0x10FFFF]
_text = st.text(st.one_of(st.characters(), st.sampled_from([chr(o) for o in _EDGES]),
                          st.sampled_from("帮我查订单 O-1001，为什么还没到？Hello world.")))


@settings(max_examples=300, deadline=None)
@given(_text)
def test_script_kind_matches_the_reference(text: str) -> None:
    assert script_counts(text) == reference_counts(text)
    assert script_kind(text) == reference_kind(text)
