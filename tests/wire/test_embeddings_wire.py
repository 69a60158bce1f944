"""``POST /v1/embeddings`` of ``harnesslab serve`` (adapters.embeddings_wire), driven by the
official openai SDK (which asks for base64 unless told) and by LangChain's ``OpenAIEmbeddings``
(token ids by default): vectors that retrieve what they should, the API's refusals, and
nothing recorded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnesslab.adapters.embeddings_wire import embeddings_response
from harnesslab.errors import InputError
from harnesslab.record.format import Record
from harnesslab.tokens import get_tokenizer
from tests.markers import needs_tokenizers_extra
from tests.wire.support import Q1, serving

openai = pytest.importorskip("openai")
pytestmark = needs_tokenizers_extra

MEMORIES = ["用户的订单 O-1001 在上海转运中心，预计 11 月 30 日送达。",
            "用户要求回答简单一点，不要长篇解释。",
            "退货政策：签收后 7 天内可无理由退货。",
            "The user prefers English replies about the return window."]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _nearest(query: list[float], docs: list[list[float]]) -> int:
    return max(range(len(docs)), key=lambda i: _cos(query, docs[i]))


def test_the_sdk_gets_unit_vectors_that_retrieve_the_right_memory(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        docs = client.embeddings.create(model="text-embedding-3-small", input=MEMORIES)
        floats = client.embeddings.create(model="text-embedding-3-small", input=MEMORIES,
                                          encoding_format="float")
        q = [client.embeddings.create(model="text-embedding-3-small", input=t).data[0].embedding
             for t in ("O-1001 这个订单什么时候到？", "能退货吗，几天之内？", "简单回答就行")]
        large = client.embeddings.create(model="text-embedding-3-large", input="x y")
        short = client.embeddings.create(model="text-embedding-3-small", input="x y",
                                         dimensions=256)
    vecs = [d.embedding for d in docs.data]
    assert [d.index for d in docs.data] == [0, 1, 2, 3]
    assert all(len(v) == 1536 and math.isclose(_cos(v, v), 1.0, rel_tol=1e-5) for v in vecs)
    # base64 (the SDK's default, decoded by it) is the float answer in float32
    assert all(math.isclose(a, b, abs_tol=1e-7) for v, f in zip(vecs, floats.data, strict=True)
               for a, b in zip(v, f.embedding, strict=True))
    assert [_nearest(x, vecs) for x in q] == [0, 2, 1]
    assert len(large.data[0].embedding) == 3072 and len(short.data[0].embedding) == 256
    tok = get_tokenizer("cl100k_base")
    assert docs.usage.prompt_tokens == sum(tok.count(t) for t in MEMORIES)


def test_token_ids_embed_as_their_text() -> None:
    tok = get_tokenizer("cl100k_base")
    text = "订单 O-1001 预计明天送达"
    ids: list[int] = tok.encode(text)  # type: ignore[attr-defined]

    def vec(x: Any) -> list[float]:
        out = embeddings_response({"model": "text-embedding-3-small", "input": x})
        v: list[float] = out["data"][0]["embedding"]
        return v

    assert vec(ids) == vec([ids]) == vec(text)
    assert vec(ids[:-1]) != vec(text)  # the control: other tokens, another vector
    batch = embeddings_response({"model": "m", "input": [ids, ids[:2]]})
    assert batch["usage"]["prompt_tokens"] == len(ids) + 2


@pytest.mark.parametrize("body, field, words", [
    ({"model": "m", "input": ""}, "input[0]", "non-empty"),
    ({"model": "m", "input": []}, "input", "non-empty"),
    ({"model": "m", "input": ["a", [1, 2]]}, "input[1]", "mixed"),
    ({"model": "m", "input": [[1, True]]}, "input[0]", "token"),
    ({"model": "m", "input": [100256]}, "input[0]", "not a token"),
    ({"model": "m", "input": [[-1]]}, "input[0]", "not a token"),
    ({"model": "m", "input": "好" * 9000}, "input[0]", "maximum context length is 8192"),
    ({"model": "m", "input": ["a"] * 2049}, "input", "at most 2048"),
    ({"input": "a"}, "model", "model"),
    ({"model": "m", "input": "a", "encoding_format": "int8"}, "encoding_format", "base64"),
    ({"model": "m", "input": "a", "dimensions": 0}, "dimensions", "1 to 1536"),
    ({"model": "m", "input": "a", "dimensions": 2000}, "dimensions", "1 to 1536"),
    ({"model": "text-embedding-ada-002", "input": "a", "dimensions": 8}, "dimensions",
     "does not support"),
])
def test_what_the_api_refuses_is_refused(body: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        embeddings_response(body)
    assert e.value.field == field and words in e.value.problem


def test_the_limits_are_the_apis_not_lower() -> None:
    # The controls of the refusals above: at the limits, answered.
    assert embeddings_response({"model": "m", "input": "好" * 8192})["usage"]["prompt_tokens"] \
        <= 8192
    assert len(embeddings_response({"model": "m", "input": ["a"] * 2048})["data"]) == 2048
    assert len(embeddings_response({"model": "m", "input": "a", "dimensions": 1536,
                                    "encoding_format": None})["data"][0]["embedding"]) == 1536


def test_refusals_are_400s_nothing_is_recorded_and_the_key_is_needed(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        h = {"Authorization": "Bearer k"}
        no_key = httpx.post(f"{url}/embeddings", json={"model": "m", "input": "a"})
        bad = httpx.post(f"{url}/embeddings", headers=h, json={"model": "m", "input": [[-1]]})
        not_json = httpx.post(f"{url}/embeddings", headers=h, content=b"{")
        ok = httpx.post(f"{url}/embeddings", headers=h, json={"model": "m", "input": Q1})
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        chat = client.chat.completions.create(model="harnesslab",
                                              messages=[{"role": "user", "content": Q1}])
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "invalid_api_key"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "input[0]"
    assert not_json.status_code == 400 and ok.status_code == 200
    # The embedding was no model call: the chat is the session's first, and the only one
    # recorded.
    assert chat.id.endswith("-1")
    assert len(Record.load(tmp_path / "session1.jsonl").of_type("model_call")) == 1


@pytest.mark.slow
def test_langchain_openai_embeddings_with_its_defaults(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """LangChain's ``OpenAIEmbeddings`` as its docs show it: token ids of its own tiktoken
    (pointed at the cache harnesslab seeds, offline), base64 through the SDK."""
    lc = pytest.importorskip("langchain_openai")
    from harnesslab.tokens.tokenizers import seed_tiktoken_cache

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache("cl100k_base").parent))
    with serving(tmp_path) as (url, _):
        emb = lc.OpenAIEmbeddings(model="text-embedding-3-small", base_url=url, api_key="k",
                                  max_retries=0)
        docs = emb.embed_documents(MEMORIES)
        query = emb.embed_query("O-1001 这个订单什么时候到？")
    direct = embeddings_response({"model": "m", "input": MEMORIES, "encoding_format": "float"})
    assert all(math.isclose(a, b, abs_tol=1e-6) for v, d in zip(docs, direct["data"], strict=True)
               for a, b in zip(v, d["embedding"], strict=True))
    assert _nearest(query, docs) == 0
