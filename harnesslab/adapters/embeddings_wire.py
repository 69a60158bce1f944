"""The OpenAI Embeddings API on the wire (``POST /v1/embeddings``): what a harness's vector
memory asks of the service it was pointed at, answered by the bench's embedder.

A harness whose memory retrieves by similarity (mem0, a LangGraph store with an index,
llama-index's vector memory, CrewAI's memory) embeds through the same base URL and key as its
chat calls; without this route it fails on a 404 that says nothing about its context
management. The vectors are the hashed character n-grams of ``harness.memory.embed`` (the
reference harness's and the AgentScope adapter's own embedder): deterministic, offline, and
similar texts (shared words, shared Chinese characters) are near each other, so retrieval
finds what a real embedder would find on the bench's conversations.

The body as OpenAI reads it: ``input`` a string, a list of strings, a list of token ids or a
list of such lists (LangChain's ``OpenAIEmbeddings`` sends token ids by default, cl100k_base
as for OpenAI's embedding models); ``model``; ``encoding_format`` ``float`` (the API's
default) or ``base64`` (little-endian float32, which the openai SDK asks for unless told);
``dimensions`` (not for ``text-embedding-ada-002``). A vector has 3,072 floats for a model
named ``...-3-large``, else 1,536, unless ``dimensions`` says fewer. Each input is at most
8,192 tokens and a request at most 2,048 inputs, as the API's; ``usage`` counts the inputs'
cl100k_base tokens. An embedding is no model call: nothing of it is recorded, and it does not
advance the session's calls.
"""

from __future__ import annotations

import base64
import struct
from functools import cache
from typing import Any

from harnesslab.errors import InputError
from harnesslab.harness.memory.embed import HashedNgramEmbedder

__all__ = ["embeddings_response"]

MAX_INPUTS = 2048
MAX_TOKENS = 8192
TOKENIZER = "cl100k_base"  # OpenAI's embedding models' (and LangChain's token-id input)
_NO_DIMENSIONS = frozenset({"text-embedding-ada-002"})


def native_dimensions(model: str) -> int:
    return 3072 if model.endswith("-3-large") else 1536


@cache
def _embedder(dim: int) -> HashedNgramEmbedder:
    return HashedNgramEmbedder(dim)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _inputs(raw: Any) -> list[str | list[int]]:
    """The inputs, each a text or a list of token ids; InputError (field ``input``) names what
    the API would refuse."""
    if isinstance(raw, str):
        items: list[Any] = [raw]
    elif isinstance(raw, list) and raw and all(_is_int(x) for x in raw):
        items = [raw]
    elif isinstance(raw, list) and raw:
        items = raw
    else:
        raise InputError("expected a non-empty string, a non-empty list of strings, of token "
                         "ids, or of lists of token ids", field="input")
    if len(items) > MAX_INPUTS:
        raise InputError(f"at most {MAX_INPUTS} inputs in one request, got {len(items)}",
                         field="input")
    kind = type(items[0])
    for i, x in enumerate(items):
        if isinstance(x, str) and x and kind is str:
            continue
        if isinstance(x, list) and x and kind is list and all(_is_int(t) for t in x):
            continue
        raise InputError("each input must be a non-empty string or a non-empty list of token "
                         f"ids (the inputs may not be mixed); got {type(x).__name__} "
                         f"{str(x)[:40]!r}", field=f"input[{i}]")
    return items


def embeddings_response(body: dict[str, Any]) -> dict[str, Any]:
    """The API's answer to ``body`` (module docstring); InputError for a body it refuses."""
    from harnesslab.tokens import get_tokenizer

    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InputError("you must provide a model parameter", field="model")
    fmt = body.get("encoding_format", "float")
    if fmt is None:
        fmt = "float"
    if fmt not in ("float", "base64"):
        raise InputError(f"must be 'float' or 'base64', got {fmt!r}", field="encoding_format")
    dim = native_dimensions(model)
    asked = body.get("dimensions")
    if asked is not None:
        if model in _NO_DIMENSIONS:
            raise InputError("This model does not support specifying dimensions.",
                             field="dimensions")
        if not _is_int(asked) or not 1 <= asked <= dim:
            raise InputError(f"must be an integer from 1 to {dim} for {model}, got {asked!r}",
                             field="dimensions")
        dim = asked
    items = _inputs(body.get("input"))
    tok = get_tokenizer(TOKENIZER)
    texts: list[str] = []
    total = 0
    for i, x in enumerate(items):
        if isinstance(x, str):
            text, n = x, tok.count(x)
        else:
            try:
                text, n = tok.decode(x), len(x)  # type: ignore[attr-defined]
            except ValueError as e:
                raise InputError(str(e), field=f"input[{i}]") from None
        if n > MAX_TOKENS:
            raise InputError(f"This model's maximum context length is {MAX_TOKENS} tokens, "
                             f"however you requested {n} tokens ({n} in your prompt; 0 for the "
                             "completion). Please reduce your prompt; or completion length.",
                             field=f"input[{i}]")
        texts.append(text)
        total += n
    embed = _embedder(dim).embed
    data = []
    for i, text in enumerate(texts):
        v = embed(text)
        vector: Any = list(v) if fmt == "float" else \
            base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii")
        data.append({"object": "embedding", "index": i, "embedding": vector})
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": total, "total_tokens": total}}
