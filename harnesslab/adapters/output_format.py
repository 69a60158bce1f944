"""A request's structured-output format between the three wires and the request's meta.

The meta holds ``("response_format", JSON)`` in Chat Completions' spelling: ``{"type":
"json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": ...}}`` or ``{"type":
"json_object"}``; the fake model answers in such a schema (``sim.schemas``) as a real API's
structured output does. Each API asks for it its own way: Chat Completions' ``response_format``,
the Responses API's ``text.format`` (``{"type": "json_schema", "name", "schema", "strict"}``),
Anthropic's ``output_config.format`` (``{"type": "json_schema", "schema"}``; the beta's
``output_format`` alike). A plain text format is no meta. Bad input, as the APIs reject it: a
format that is no object, a ``json_schema`` whose schema is no object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harnesslab.errors import InputError
from harnesslab.messages import Request

__all__ = ["format_from_anthropic", "format_from_openai", "format_from_responses", "format_of"]

Meta = tuple[tuple[str, str], ...]


def _meta(fmt: Mapping[str, Any]) -> Meta:
    # In the order sent: a model writes a schema's fields in its order.
    return (("response_format", json.dumps(fmt, ensure_ascii=False)),)


def format_from_openai(body: Mapping[str, Any]) -> Meta:
    """Chat Completions' ``response_format`` as the request's meta (kept as sent)."""
    fmt = body.get("response_format")
    if fmt is None:
        return ()
    if not isinstance(fmt, Mapping):
        raise InputError("expected an object", field="response_format")
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("schema", {}), Mapping):
            raise InputError("expected an object", field="response_format.json_schema.schema")
    return _meta(fmt) if fmt.get("type") in ("json_schema", "json_object") else ()


def _flat(fmt: Any, field: str) -> Meta:
    """A format written flat (``{"type": "json_schema", "schema": ..., "name": ...}``, the
    Responses API's and Anthropic's) in Chat Completions' spelling."""
    if fmt is None:
        return ()
    if not isinstance(fmt, Mapping):
        raise InputError("expected an object", field=field)
    if fmt.get("type") == "json_object":
        return _meta({"type": "json_object"})
    if fmt.get("type") != "json_schema":
        return ()
    schema = fmt.get("schema")
    if not isinstance(schema, Mapping):
        raise InputError("expected an object", field=f"{field}.schema")
    spec = {k: fmt[k] for k in ("name", "description", "strict") if k in fmt}
    return _meta({"type": "json_schema", "json_schema": {**spec, "schema": schema}})


def format_from_responses(body: Mapping[str, Any]) -> Meta:
    """The Responses API's ``text.format`` as the request's meta."""
    text = body.get("text")
    if text is None:
        return ()
    if not isinstance(text, Mapping):
        raise InputError("expected an object", field="text")
    return _flat(text.get("format"), "text.format")


def format_from_anthropic(body: Mapping[str, Any]) -> Meta:
    """Anthropic's ``output_config.format`` (or the beta's ``output_format``) as the
    request's meta."""
    config = body.get("output_config")
    if config is not None and not isinstance(config, Mapping):
        raise InputError("expected an object", field="output_config")
    if config is not None and config.get("format") is not None:
        return _flat(config.get("format"), "output_config.format")
    return _flat(body.get("output_format"), "output_format")


def format_of(r: Request) -> dict[str, Any] | None:
    """The format ``r``'s meta states, in Chat Completions' spelling, to write into a body."""
    return r.stated_json("response_format")
