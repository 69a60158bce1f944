"""What the fake model writes when a request asks for a JSON schema: the answer's text in the
schema's place for an answer (a string field named like one: ``answer``, ``response``,
``content``, ``summary``, ...; else the first place for a string), every other place empty of
its type.

A real API with structured outputs (Chat Completions' ``response_format``, the Responses API's
``text.format``, Anthropic's ``output_config.format``; the wires keep each as the request's
``("response_format", ...)`` meta in Chat Completions' form) returns JSON the schema accepts,
whatever the model would rather say; so does a forced tool's arguments (``sim.choice``). The
schema is read as the APIs' strict mode writes it (pydantic's and zod's output): ``$ref`` into
``$defs``/``definitions``; ``anyOf``/``oneOf`` (an optional field is ``null`` unless the
answer goes into it; else the first branch that can hold it, or is no ``null``); a list of
types; ``enum`` and ``const`` (their first value: no text goes there); nested objects
(searched in the schema's order, the shallowest place first) and arrays (empty).

A schema may also be asked for in words (``prompted_schema``): LangChain's output parsers'
format instructions ("The output should be formatted as a JSON instance that conforms to the
JSON schema below. ... Here is the output schema: ```{...}```"), CrewAI's ``output_json``, many
in-house prompts. A sentence of the instructions that asks the output, answer or response in
a schema, and the last JSON schema written after it (an object whose ``properties`` are
schemas: LangChain's worked example before it, ``{"foo": [...]}``, is none), is read as the
same ask, and the answer written as the JSON.

JSON mode (``response_format`` ``{"type": "json_object"}``: valid JSON, no schema; LangChain's
``json_mode``, DSPy's fallback, in-house calls) is an API's promise too: the reply is a JSON
object, its keys whatever the instructions say (``json_object_schema``). Read after the
instructions' first mention of JSON: a JSON schema or a JSON example written there (an
example's values give the types), else the names quoted or in backticks in that paragraph
("respond in JSON with `setup` and `punchline` keys"); with none, one ``answer`` key. A
sentence that asks the reply in JSON with no API mode ("always reply in JSON", "your answer
must be valid JSON": ``prompted_json``) is followed as a model follows it, read the same way
after the ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from harnesslab.messages import Request

__all__ = ["asked_schema", "fill", "instructions", "json_object_schema", "prompted_json",
           "prompted_schema"]

_EMPTY: dict[str, Any] = {"string": "", "array": [], "integer": 0, "number": 0,
                          "boolean": False, "null": None}
_MAX_DEPTH = 8  # a recursive $ref (a tree of nodes) is filled this deep, then left empty
_MAX_VISITS = 10_000


def asked_schema(request: Request) -> dict[str, Any] | None:
    """The JSON schema the request's ``response_format`` meta asks the answer in, if any
    (``json_object``, which names no schema, is none)."""
    fmt = request.stated_json("response_format")
    spec = fmt.get("json_schema") if fmt is not None else None
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


def _instruction_parts(request: Request) -> list[str]:
    msgs = request.messages
    first = [msgs[0].plain_text()] if msgs and msgs[0].role == "system" else []
    last = next((m.plain_text() for m in reversed(msgs) if m.role == "user"), "")
    return [request.system, *first, last]


def instructions(request: Request) -> str:
    """Where a harness states how to answer: the system prompt, a leading system message, and
    the last user message (a classic ReAct prompt, a chain's prompt template, is one user
    message). Not every message: this is read on every call, and must not cost the whole
    context."""
    return "\n".join(_instruction_parts(request))


# A sentence asking the answer in a schema: "The output should be formatted as a JSON instance
# that conforms to the JSON schema below", "respond with a JSON object compatible with this
# schema", "return ... matching the following schema".
_ASKS_SCHEMA = re.compile(r"\b(?:output|respon(?:d|se)|answer|reply|return)\b[^.\n]{0,100}?"
                          r"\bschema\b", re.I)
_DECODER = json.JSONDecoder()


def _is_schema(data: Any) -> bool:
    props = data.get("properties") if isinstance(data, dict) else None
    return isinstance(props, dict) and bool(props) \
        and all(isinstance(v, dict) for v in props.values()) \
        and data.get("type", "object") == "object"


def prompted_schema(request: Request) -> dict[str, Any] | None:
    """The JSON schema the request's instructions ask the answer in, in words (module
    docstring), if any."""
    parts = _instruction_parts(request)
    if not any("chema" in p for p in parts):
        return None
    text = "\n".join(parts)
    asked = _ASKS_SCHEMA.search(text)
    if asked is None:
        return None
    found = None
    for data, _ in _json_values(text, asked.end()):
        if _is_schema(data):
            found = data
    return found


def _json_values(text: str, at: int, until: int | None = None) -> Iterator[tuple[Any, int]]:
    """The JSON objects written in ``text`` from ``at`` on (starting before ``until``), in
    order, with where each starts (a ``{`` that opens none is passed over)."""
    at = text.find("{", at, until)
    while at >= 0:
        try:
            data, end = _DECODER.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1, until)
            continue
        yield data, at
        at = text.find("{", end, until)


_JSON_WORD = re.compile(r"\bJSON\b", re.I)
# A key named in words: quoted or in backticks, an identifier (``setup``, "final_answer").
_QUOTED_NAME = re.compile(r"""[`'"“‘]([A-Za-z_][A-Za-z0-9_-]{0,40})[`'"”’]""")
_PARAGRAPH = 400  # how far after a mention of JSON its keys are looked for


def _example_schema(value: Any) -> dict[str, Any]:
    """The schema of a JSON example's value: its keys, and its values' types."""
    if isinstance(value, dict):
        return {"type": "object", "properties": {str(k): _example_schema(v)
                                                 for k, v in value.items()}}
    kind = {str: "string", bool: "boolean", int: "integer", float: "number",
            list: "array"}.get(type(value))
    return {"type": kind} if kind else {"type": "null"}


def _described(text: str, at: int) -> dict[str, Any] | None:
    """The object described after ``text[at]`` (a mention of JSON), as a schema: a schema or
    an example written within ``_PARAGRAPH`` characters, else the names quoted in the
    paragraph; None when it describes none."""
    window = text[at:at + _PARAGRAPH]
    start = text.rfind("\n\n", 0, at) + 1
    para = text[start:at] + window.split("\n\n", 1)[0]
    # An object that starts in the window, read whole (a schema written out runs longer).
    for data, _ in _json_values(text, at, at + _PARAGRAPH):
        if isinstance(data, dict) and data:
            return data if _is_schema(data) else _example_schema(data)
    names = list(dict.fromkeys(_QUOTED_NAME.findall(para)))
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}} \
        if names else None


_ANSWER_ONLY = {"type": "object", "properties": {"answer": {"type": "string"}}}


def json_object_schema(request: Request) -> dict[str, Any] | None:
    """For a request in JSON mode (``response_format`` ``json_object``), the object its
    instructions describe, as a schema (module docstring); None for any other request."""
    fmt = request.stated_json("response_format") if request.meta else None
    if fmt is None or fmt.get("type") != "json_object":
        return None
    text = instructions(request)
    for mention in _JSON_WORD.finditer(text):
        described = _described(text, mention.end())
        if described is not None:
            return described
    return dict(_ANSWER_ONLY)


# A sentence asking the reply in JSON: "reply in JSON", "always respond with a JSON object",
# "format your answer as JSON", "... and provide the parsed objects in json" (instructor),
# "your response must be valid JSON". The verb an imperative (at a sentence's or clause's
# start, or after "you", "please", "always", "must", "to", "and", ...) or "your ...": "the
# API responds with JSON" and "tools return results in JSON" are no ask.
_ASKS_JSON = re.compile(
    r"(?:^|(?<=[.!?:;,\n])\s*|\b(?:you|please|always|only|must|should|shall|will|to|and|then)"
    r"\s+)(?:respond|reply|answer|output|return|format|write|provide|give|produce|generate)\b"
    r"[^.]{0,40}?\b(?:in|as|with|using)\s+(?:(?:a|an|one|valid|only|strict|the|raw|proper)\s+)*"
    r"JSON\b"
    r"|\byour\s+(?:(?:whole|entire|final)\s+)?(?:response|reply|answer|output)\b[^.\n]{0,30}?"
    r"\bJSON\b", re.I | re.M)


def prompted_json(request: Request) -> dict[str, Any] | None:
    """The object the request's instructions ask the reply in, in words, with no schema
    (``_ASKS_JSON``), as a schema: what they describe after the ask, else one ``answer``
    key; None when they ask for no JSON."""
    parts = _instruction_parts(request)
    if not any("JSON" in p or "json" in p or "Json" in p for p in parts):
        return None  # read on every reply: three scans, no copy of a long prompt
    text = "\n".join(parts)
    asked = _ASKS_JSON.search(text)
    if asked is None:
        return None
    return _described(text, asked.end()) or dict(_ANSWER_ONLY)


# Where a model asked for a schema writes its answer: a string place of one of these names
# (case and separators aside), else the first string place. Compared as written lower-case
# with "_" and "-" dropped.
ANSWER_NAMES = frozenset({"answer", "finalanswer", "response", "reply", "content", "text",
                          "message", "output", "result", "summary"})


class _Filler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.visits = _MAX_VISITS  # a recursive schema is searched and filled this far

    def _ref(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = self.root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) \
                if isinstance(target, Mapping) else None
        return target if isinstance(target, Mapping) else {}

    def node(self, node: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
        """``node`` with its ``$ref`` followed and of ``anyOf``/``oneOf`` the branch a model
        takes: the first that can hold text, else the first that is no ``null``."""
        for _ in range(_MAX_DEPTH):
            node = self._ref(node)
            options = next((node[k] for k in ("anyOf", "oneOf", "allOf")
                            if isinstance(node.get(k), list) and node[k]), None)
            if options is None:
                return node
            branches = [self._ref(o) for o in options if isinstance(o, Mapping)]
            real = [b for b in branches if b.get("type") != "null"] or branches
            node = next((b for b in real if self._holds_text(b, depth + 1)),
                        real[0] if real else {})
        return {}

    def _holds_text(self, node: Mapping[str, Any], depth: int) -> bool:
        return depth <= _MAX_DEPTH and next(self.places(node, (), depth), None) is not None

    def places(self, node: Mapping[str, Any], path: tuple[str, ...],
               depth: int = 0) -> Iterator[tuple[str, ...]]:
        """The paths of the places a free text may go, in the schema's order."""
        self.visits -= 1
        if depth > _MAX_DEPTH or self.visits < 0:
            return
        n = self.node(node, depth)
        if "enum" in n or "const" in n:
            return
        if "string" in _kinds(n):
            yield path
            return
        props = n.get("properties")
        if isinstance(props, Mapping):
            for name, p in props.items():
                if isinstance(p, Mapping):
                    yield from self.places(p, (*path, str(name)), depth + 1)

    def value(self, node: Mapping[str, Any], path: tuple[str, ...], target: tuple[str, ...] | None,
              text: str, depth: int = 0) -> Any:
        self.visits -= 1
        if depth > _MAX_DEPTH or self.visits < 0:
            return None  # a recursive schema left empty where a model would stop
        if _nullable(self._ref(node)) and (target is None or target[:len(path)] != path):
            return None  # an optional field the answer does not go into: null
        n = self.node(node, depth)
        if "const" in n:
            return n["const"]
        if isinstance(n.get("enum"), list) and n["enum"]:
            return n["enum"][0]
        kinds = _kinds(n)
        if "string" in kinds:
            return text if path == target else ""
        props = n.get("properties")
        if "object" in kinds or isinstance(props, Mapping):
            return {name: self.value(p if isinstance(p, Mapping) else {}, (*path, str(name)),
                                     target, text, depth + 1)
                    for name, p in (props.items() if isinstance(props, Mapping) else ())}
        real = [k for k in kinds if k != "null"]
        return _EMPTY.get(real[0]) if real else None


def _nullable(node: Mapping[str, Any]) -> bool:
    return any(isinstance(node.get(k), list) and any(
        isinstance(o, Mapping) and o.get("type") == "null" for o in node[k])
        for k in ("anyOf", "oneOf"))


def _kinds(node: Mapping[str, Any]) -> list[str]:
    kind = node.get("type")
    return [k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)]


def _answer_name(name: str) -> bool:
    return name.lower().replace("_", "").replace("-", "") in ANSWER_NAMES


def fill(schema: Mapping[str, Any], text: str) -> Any:
    """The JSON value ``schema`` accepts with ``text`` in its answer's place (module
    docstring). An object with no place for a string gets the text in its first property, as
    a model would rather break the schema than drop its answer."""
    f = _Filler(schema)
    places = list(f.places(schema, ()))
    # A place named for the answer, else the shallowest (a recursive schema's first places
    # lie at its depth limit), in the schema's order.
    target = min(places, key=lambda p: (not (p and _answer_name(p[-1])), len(p)),
                 default=None)
    f.visits = _MAX_VISITS
    out = f.value(schema, (), target, text)
    if target is None and isinstance(out, dict) and out:
        out[next(iter(out))] = text
    return out
