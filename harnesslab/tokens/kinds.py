"""Content kinds of a text by its script: ``zh`` when CJK characters are at least 80 % of its
letters, ``en`` at most 20 % (or no letters at all), else ``mixed`` (``json`` is decided by
the caller, from where a text comes). CJK = ideographs, kana, hangul and CJK/full-width
punctuation; the other letters are ``str.isalpha`` characters outside them. Counted by C-level
string operations: a Python loop over every character was a tenth of a suite's time.
"""

from __future__ import annotations

import array
import re
import string
import sys
from functools import cache
from typing import Literal

Kind = Literal["zh", "en", "mixed", "json"]
KINDS: tuple[Kind, ...] = ("zh", "en", "mixed", "json")

# CJK and full-width punctuation (3000-303F), kana (3040-30FF), ideographs (3400-9FFF, F900-FAFF,
# 20000-2FA1F), hangul syllables (AC00-D7AF) and half/full-width forms (FF00-FFEF).
_CJK_RUN = re.compile("[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
                      "\U00020000-\U0002fa1f]+")
_ASTRAL_RUN = re.compile("[\U00010000-\U0010ffff]+")
_ASCII_LETTERS = string.ascii_letters.encode("ascii")


def _char_class(chars: str) -> str:
    """A regex character class of ``chars`` (sorted, distinct), with runs as ranges."""
    out: list[str] = []
    i = 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and ord(chars[j + 1]) == ord(chars[j]) + 1:
            j += 1
        out.append(re.escape(chars[i]) if i == j else f"{re.escape(chars[i])}-{re.escape(chars[j])}")
        i = j + 1
    return f"[{''.join(out)}]+"


@cache
def _other_letters() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Runs of the letters (``str.isalpha``) outside ASCII and the CJK ranges: one pattern for
    the Basic Multilingual Plane, one above it. Built once from the running Python's Unicode
    database, so that they agree with ``str.isalpha`` exactly. Two patterns, because ``re``
    tests the part of a class above U+FFFF one range at a time on every character it rejects."""
    every = array.array("I", range(0x80, 0x110000)).tobytes().decode(
        f"utf-32-{sys.byteorder[0]}e", "surrogatepass")
    # \w without digits and "_" holds every letter and a few other numerics: a C-level pass
    # narrows 1.1 million code points to those candidates.
    letters = _CJK_RUN.sub("", "".join(c for run in re.findall(r"[^\W\d_]+", every)
                                       for c in run if c.isalpha()))
    high = next((i for i, c in enumerate(letters) if c > "\uffff"), len(letters))
    return re.compile(_char_class(letters[:high])), re.compile(_char_class(letters[high:]))


def _ascii_letters(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    return len(data) - len(data.translate(None, _ASCII_LETTERS))


def script_counts(text: str) -> tuple[int, int]:
    """(CJK characters, other letters) of ``text``; additive over the pieces of a text."""
    if text.isascii():
        return 0, _ascii_letters(text)
    rest = _CJK_RUN.sub("", text)
    cjk = len(text) - len(rest)
    latin = _ascii_letters(rest)
    if not rest.isascii():
        bmp, astral = _other_letters()
        latin += sum(map(len, bmp.findall(rest)))
        high = "".join(_ASTRAL_RUN.findall(rest))
        if high:
            latin += sum(map(len, astral.findall(high)))
    return cjk, latin


def kind_of(cjk: int, latin: int) -> Kind:
    """The kind of a text with these ``script_counts``."""
    if cjk + latin == 0:
        return "en"
    share = cjk / (cjk + latin)
    return "zh" if share >= 0.8 else "en" if share <= 0.2 else "mixed"


def script_kind(text: str) -> Kind:
    """zh / en / mixed by the share of CJK among letters (module docstring)."""
    if text.isascii():
        return "en"  # no CJK: the share is 0 or undefined, en either way
    return kind_of(*script_counts(text))
