"""Tools offered in the answer's JSON schema: a tool call asked for as structured output.

A harness whose endpoint it believes cannot force a tool call may offer no tools to the API
and ask instead for an answer in a schema that is a choice of tool calls (BeeAI's default
against an endpoint of one's own: ``{"item": anyOf[{"name": const <tool>, "parameters":
{...}}, ...]}``, its own ``final_answer`` among them). Such a schema's branches are objects
with a tool's name (a single ``const`` or ``enum`` string under ``name``, ``tool``,
``tool_name``, ``function`` or ``action``) and its arguments (an object under
``parameters``, ``arguments``, ``args``, ``input`` or ``action_input``); the union may be
the schema itself, an array of it (parallel calls), or the one property of a wrapping object.

The fake model decides as if those tools were offered with a tool call required (a text
answer goes into the first that is no world tool, as under ``tool_choice: required``), and
writes the call it makes as the JSON the schema asks for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnesslab.messages import Request, ToolSchema
from harnesslab.sim.schemas import asked_schema

__all__ = ["SchemaTools", "schema_tools"]

NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
ARG_KEYS = ("parameters", "arguments", "args", "input", "action_input")


@dataclass(frozen=True)
class SchemaTools:
    """The tool calls a schema offers, and where a call goes in the JSON it asks for."""

    tools: tuple[ToolSchema, ...]
    name_key: str
    arg_key: str
    path: tuple[str, ...]   # the wrapping properties from the root; "[]" an array of calls

    def write(self, name: str, arguments: str) -> str:
        """The JSON text of a call of ``name`` with ``arguments`` (JSON text) in the schema."""
        try:
            args = json.loads(arguments or "{}")
        except ValueError:
            args = {}
        value: Any = {self.name_key: name, self.arg_key: args if isinstance(args, dict) else {}}
        for step in reversed(self.path):
            value = [value] if step == "[]" else {step: value}
        return json.dumps(value, ensure_ascii=False)


def _resolve(root: Mapping[str, Any], node: Any) -> Mapping[str, Any]:
    for _ in range(8):
        if not isinstance(node, Mapping):
            return {}
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        node = target
    return {}


def _branch(root: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[str, str, str,
                                                                     Mapping[str, Any]] | None:
    """(tool name, name key, argument key, parameters schema) of one tool-call branch."""
    props = node.get("properties")
    if not isinstance(props, Mapping):
        return None
    name_key = next((k for k in NAME_KEYS if k in props), None)
    arg_key = next((k for k in ARG_KEYS if k in props), None)
    if name_key is None or arg_key is None:
        return None
    spec = _resolve(root, props[name_key])
    enum = spec.get("enum")
    name = spec.get("const", enum[0] if isinstance(enum, list) and len(enum) == 1 else None)
    params = _resolve(root, props[arg_key])
    if not isinstance(name, str) or not name or params.get("type", "object") != "object":
        return None
    return name, name_key, arg_key, params


def _union(root: Mapping[str, Any], node: Mapping[str, Any]) -> list[tuple[str, str, str,
                                                                          Mapping[str, Any]]]:
    options = next((node[k] for k in ("anyOf", "oneOf") if isinstance(node.get(k), list)), None)
    nodes = [_resolve(root, o) for o in options] if options is not None else [node]
    found = [_branch(root, n) for n in nodes]
    return [b for b in found if b is not None] if all(found) else []


def schema_tools(request: Request) -> SchemaTools | None:
    """The tool calls the request's answer schema offers (module docstring), if it is one."""
    schema = asked_schema(request)
    if schema is None:
        return None
    path: list[str] = []
    node = _resolve(schema, schema)
    for _ in range(3):
        branches = _union(schema, node)
        if branches:
            keys = {(b[1], b[2]) for b in branches}
            if len(keys) != 1:
                return None
            ((name_key, arg_key),) = keys
            tools = tuple(ToolSchema.from_dict({"type": "function", "function": {
                "name": n, "parameters": dict(p)}}) for n, _, _, p in branches)
            return SchemaTools(tools, name_key, arg_key, tuple(path))
        if node.get("type") == "array" and isinstance(node.get("items"), Mapping):
            path.append("[]")
            node = _resolve(schema, node["items"])
            continue
        props = node.get("properties")
        if isinstance(props, Mapping) and len(props) == 1:
            (key, sub), = props.items()
            path.append(str(key))
            node = _resolve(schema, sub)
            continue
        return None
    return None
