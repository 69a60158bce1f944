"""The default embedder (hashed character n-grams) and the per-user item store."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harnesslab.harness.memory.embed import HashedNgramEmbedder, cosine
from harnesslab.harness.memory.items import ItemStore, MemoryItem, safe_name

E = HashedNgramEmbedder()
NOW = datetime(2026, 11, 30, 10, tzinfo=UTC)


def test_deterministic_unit_vectors() -> None:
    a, b = E.embed("订单 O-1001 到哪了"), HashedNgramEmbedder().embed("订单 O-1001 到哪了")
    assert a == b and len(a) == 512
    assert math.isclose(cosine(a, a), 1.0)
    assert E.embed("") == (0.0,) * 512


def test_chinese_and_english_rank_related_text_first() -> None:
    q = E.embed("我的订单什么时候送达")
    assert cosine(q, E.embed("订单预计送达时间")) > cosine(q, E.embed("今天天气很好"))
    q = E.embed("when will my delivery arrive")
    assert cosine(q, E.embed("the delivery should arrive tomorrow")) > \
        cosine(q, E.embed("I prefer short answers"))
    # Ids are shared grams: an order id finds the item that names it.
    q = E.embed("O-2002 到哪了？")
    assert cosine(q, E.embed("[claim:ownership=O-2002 unverified]")) > \
        cosine(q, E.embed("[claim:ownership=O-1001 unverified]"))


def _item(user: str, text: str, **kw: object) -> MemoryItem:
    args: dict[str, object] = dict(user=user, agent="a", session="s", source="turn",
                                   kind="preference", created_at=NOW, expires_at=None,
                                   reverify=False, text=text)
    args.update(kw)
    return MemoryItem.make(**args)  # type: ignore[arg-type]


def test_store_keeps_users_apart_and_round_trips(tmp_path: Path) -> None:
    for store in (ItemStore(tmp_path), ItemStore(None)):
        exp = NOW + timedelta(hours=12)
        one = _item("U-1", "x", source="tool:track_order", kind="fact", expires_at=exp)
        assert store.add(one) and not store.add(one)
        assert store.add(_item("U-2", "y"))
        assert store.items("a", "U-1") == [one]
        assert [i.text for i in store.items("a", "U-2")] == ["y"]
        assert one.expired(exp) and not one.expired(NOW)
    # Another instance over the same folder sees them.
    assert [i.text for i in ItemStore(tmp_path).items("a", "U-1")] == ["x"]


def test_ids_never_name_a_path() -> None:
    assert safe_name("../U-2") == "%2e%2e%2fU-2"
    assert safe_name("U-1") == "U-1" and safe_name("") == "%"
    assert safe_name("李四") != safe_name("张三")


def test_two_ids_never_share_a_folder() -> None:
    # The old variable-width escape gave both "a%401bc%2ecom": one user read the other's memory.
    assert safe_name("a@1bc.com") != safe_name("aЁbc.com")
    assert safe_name("aЁbc.com") == "a%u0401bc%2ecom"
    assert safe_name("\t") == "%09" and safe_name("😀") == "%U01f600"


@given(st.text(max_size=8), st.text(max_size=8))
def test_the_escape_is_injective_and_a_plain_file_name(a: str, b: str) -> None:
    name = safe_name(a)
    assert "/" not in name and name not in (".", "..") and name.isascii()
    if a != b:
        assert safe_name(b) != name
