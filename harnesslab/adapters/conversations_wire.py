"""OpenAI's Conversations API on the wire (``/v1/conversations``): a conversation's items kept
by the server, which a harness lists, adds to and deletes from, and which ``conversation`` on
a Responses request continues (its items before the request's input; the input and the
output appended once answered).

A harness that keeps its history on the server (a session backed by the Conversations API, or
``conversation=`` on every request) is measured on what it sends and what the server holds,
as against the real API; without these routes it failed on a 404 that says nothing about its
context management. A session's conversations are its own (the key), in memory for the
session's life, never recorded: the model calls they feed are.

Items are kept in the API's form, each with an ``id`` and ``status: completed``: a message's
string content becomes one ``input_text`` part (``output_text`` for the assistant, with
``annotations``), as the API returns it. Ids are numbered per session (no wall clock, no
randomness): ``conv_<session>_i<n>``, ``msg_``/``fc_``/``fco_``/``item_`` for items (a
response's output items keep the ids the response gave them). Lists
are the API's: ``order`` ``desc`` unless ``asc``, ``limit`` 1-100 (20), ``after`` an item id,
``first_id``/``last_id``/``has_more``. At most 20 items per create or add, as the API.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harnesslab.adapters import responses_wire
from harnesslab.errors import InputError

__all__ = ["ConversationNotFound", "Conversations"]

MAX_ADD = 20
_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco"}


class ConversationNotFound(KeyError):
    """A conversation or item id this session does not hold (the API's 404)."""

    def __init__(self, what: str, id: str) -> None:
        super().__init__(id)
        self.message = f"{what} with id '{id}' not found."


@dataclass
class _Conversation:
    id: str
    created_at: int
    metadata: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "object": "conversation", "created_at": self.created_at,
                "metadata": self.metadata}


def _metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping) or len(meta) > 16 or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise InputError("expected at most 16 string keys with string values",
                         field="metadata")
    return dict(meta)


def _page(items: list[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InputError(f"must be 'asc' or 'desc', got {order!r}", field="order")
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise InputError(f"expected an integer, got {query.get('limit')!r}",
                         field="limit") from None
    if not 1 <= limit <= 100:
        raise InputError(f"must be from 1 to 100, got {limit}", field="limit")
    seq = items if order == "asc" else items[::-1]
    after = query.get("after")
    if after:
        at = next((i for i, x in enumerate(seq) if x["id"] == after), None)
        if at is None:
            raise InputError(f"no item with id {after!r} in this conversation", field="after")
        seq = seq[at + 1:]
    data = seq[:limit]
    return {"object": "list", "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": len(seq) > limit}


class Conversations:
    """One session's conversations (module docstring). Items are checked as a Responses
    input, so a conversation holds only what a request can carry."""

    def __init__(self, session: str) -> None:
        self._session = session
        self._by_id: dict[str, _Conversation] = {}
        self._numbers = itertools.count(1)

    def _id(self, prefix: str) -> str:
        # "i": apart from the ids of a response's output items (``msg_<session>_<call>``).
        return f"{prefix}_{self._session}_i{next(self._numbers)}"

    def _get(self, cid: str) -> _Conversation:
        c = self._by_id.get(cid)
        if c is None:
            raise ConversationNotFound("Conversation", cid)
        return c

    def _kept(self, raw: Any, field_name: str) -> list[dict[str, Any]]:
        """``raw`` items in the API's stored form, each given an id; InputError for bad ones."""
        if not isinstance(raw, list):
            raise InputError("expected a list of items", field=field_name)
        if len(raw) > MAX_ADD:
            raise InputError(f"at most {MAX_ADD} items at once, got {len(raw)}",
                             field=field_name)
        try:
            responses_wire.request_from_responses({"input": raw})
        except InputError as e:
            where = (e.field or "").replace("input", field_name, 1)
            raise InputError(e.problem, field=where or field_name) from None
        return [self._stored(x) for x in raw]

    def _stored(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return responses_wire.as_returned(item, lambda kind: self._id(_PREFIX.get(kind, "item")))

    # --- the routes ---------------------------------------------------------------------------
    def create(self, body: Mapping[str, Any], *, created: int) -> dict[str, Any]:
        meta = _metadata(body)
        items = self._kept(body.get("items") or [], "items")
        c = _Conversation(self._id("conv"), created, meta, items)
        self._by_id[c.id] = c
        return c.public()

    def get(self, cid: str) -> dict[str, Any]:
        return self._get(cid).public()

    def update(self, cid: str, body: Mapping[str, Any]) -> dict[str, Any]:
        c = self._get(cid)
        c.metadata = _metadata(body)
        return c.public()

    def delete(self, cid: str) -> dict[str, Any]:
        self._get(cid)
        del self._by_id[cid]
        return {"id": cid, "object": "conversation.deleted", "deleted": True}

    def add(self, cid: str, body: Mapping[str, Any]) -> dict[str, Any]:
        c = self._get(cid)
        items = self._kept(body.get("items"), "items")
        c.items.extend(items)
        return {"object": "list", "data": items,
                "first_id": items[0]["id"] if items else None,
                "last_id": items[-1]["id"] if items else None, "has_more": False}

    def list_items(self, cid: str, query: Mapping[str, str]) -> dict[str, Any]:
        return _page(self._get(cid).items, query)

    def item(self, cid: str, item_id: str) -> dict[str, Any]:
        found = next((x for x in self._get(cid).items if x["id"] == item_id), None)
        if found is None:
            raise ConversationNotFound("Item", item_id)
        return found

    def delete_item(self, cid: str, item_id: str) -> dict[str, Any]:
        c = self._get(cid)
        kept = [x for x in c.items if x["id"] != item_id]
        if len(kept) == len(c.items):
            raise ConversationNotFound("Item", item_id)
        c.items = kept
        return c.public()

    # --- a Responses request's ``conversation`` ------------------------------------------------
    def items_of(self, cid: str) -> list[dict[str, Any]]:
        """The items a request continuing ``cid`` is preceded by."""
        return list(self._get(cid).items)

    def answered(self, cid: str, new: list[Any], output: list[dict[str, Any]]) -> None:
        """A request on ``cid`` was answered: its input items (checked already, as the
        request's), then its output, are added (a conversation deleted meanwhile is let be)."""
        c = self._by_id.get(cid)
        if c is not None:
            c.items.extend(self._stored(x) for x in [*new, *output])
