"""Tools offered in the prompt: the text protocols of ReAct loops and code agents, as the fake
model speaks them.

A harness may offer no tools to the API but list them in its instructions (the system prompt,
a leading system message or the last user message) and ask for a text protocol:

- **ReAct** (``Action:`` and ``Action Input:`` lines; LlamaIndex's ReActAgent, CrewAI's and
  LangChain's classic ReAct prompts, many in-house loops): the tools the instructions name
  (as whole words); a call is written ``Thought: ...`` / ``Action: <tool>`` / ``Action Input:
  <JSON>``, an answer after the prompt's final-answer marker (``Final Answer:``, else
  ``Answer:``, else the plain text);
- **code actions** (the tools as Python functions, ``def <tool>(``, and code blocks in
  ``<code>`` tags or a ```` ```py ```` fence; smolagents' CodeAgent): a call is a code block
  ``result = <tool>(key="value")`` / ``print(result)``, an answer ``final_answer("...")``
  where the prompt names ``final_answer`` (else a ``print``);
- **tagged calls** (the Hermes / Nous form: the tools' JSON signatures inside ``<tools>`` tags
  and each call asked as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
  Qwen-Agent's default over an OpenAI-compatible endpoint, Qwen's and Hermes models' chat
  templates, in-house loops over raw completions): a call is that block, an answer the plain
  text; results come back in ``<tool_response>`` tags;
- **output fields** (DSPy's adapters: the reply as ``[[ ## <field> ## ]]`` sections ending on
  ``[[ ## completed ## ]]``, or as a JSON object of the same fields, their order stated in the
  last user message): a field whose values are a ``Literal[...]`` naming tools is the tool to
  call, the field after it its arguments (a JSON object), and a value that names no tool
  (``finish``) ends the loop; without such a field the reply is an answer, written in the
  field named like one (``answer``, ``response``, ...; else the last field that is no
  reasoning). Reasoning fields (``next_thought``, ``reasoning``) get one fixed sentence.

The model decides as if the tools so offered were offered natively, one action a step. The
harness hands results back as text (``Observation: ...``), which the reading already takes
as the turn's own facts (``sim.reading``: a tool call written as text, then a user message
quoting its result). A reply written so says so in its annotations (``tool_protocol``:
``react``, ``code``, ``tagged`` or ``fields``; its calls as ``text_calls``, by which the
judge reads what was called), and :func:`answer_of` gives the answer a harness takes from it.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock, ToolSchema
from harnesslab.sim.schemas import instructions

__all__ = ["Field", "Protocol", "answer_of", "field_values", "in_protocol", "text_protocol",
           "with_listed"]

_ACTION = re.compile(r"^[ \t>*`-]*Action[ \t]*:", re.M)
_INPUT = re.compile(r"^[ \t>*`-]*Action[ \t]+Input[ \t]*:", re.M)
_FINAL = re.compile(r"^[ \t>*`-]*Final[ \t]+Answer[ \t]*:", re.M)
_ANSWER = re.compile(r"^[ \t>*`-]*Answer[ \t]*:", re.M)
THOUGHT_CALL = "Thought: I need to use a tool to help me answer the question."
THOUGHT_ANSWER = "Thought: I can answer without using any more tools."


def _named(text: str, world: Iterable[str], pattern: str) -> tuple[str, ...]:
    return tuple(n for n in sorted(world) if re.search(pattern.format(re.escape(n)), text))


@dataclass(frozen=True)
class Field:
    """An output field a fields protocol asks for: its name and, for a ``Literal[...]``, the
    values it allows."""

    name: str
    choices: tuple[str, ...] | None = None
    kind: str = "str"  # the type the prompt states (``str``, ``dict[str, Any]``, ``bool``, ...)


@dataclass(frozen=True)
class Protocol:
    """A text protocol a request asks for, and the tools it offers that way."""

    kind: Literal["react", "code", "tagged", "fields"]
    tools: tuple[str, ...]
    final: str | None          # react: the final-answer marker; code: the answer function;
    #                            fields: the tool field's value that ends the loop
    tags: tuple[str, str] = ("", "")  # code: the code block's opening and closing tags
    fields: tuple[Field, ...] = ()    # fields: in the order asked
    json: bool = False                # fields: one JSON object rather than marked sections
    # fields: the tool field, the arguments field after it and the answer field (_roles)
    roles: tuple[Field | None, Field | None, Field | None] = (None, None, None)


# DSPy's ChatAdapter and JSONAdapter state the fields in the last user message, each name in
# backquotes with its type after it: "starting with the field `[[ ## a ## ]]`, then
# `[[ ## b ## ]]` (must be formatted as a valid Python Literal['x', 'y']), ..., and then ending
# with the marker for `[[ ## completed ## ]]`" / "Respond with a JSON object in the following
# order of fields: `a`, then `b` (must be ...)."
_SECTIONS_ASKED = re.compile(r"Respond with the corresponding output fields, starting with the "
                             r"field (.*?)and then ending with the marker for", re.S)
_JSON_ASKED = re.compile(r"Respond with a JSON object in the following order of fields: (.*)",
                         re.S)
_FIELD = re.compile(r"`(?:\[\[ ## )?(\w+)(?: ## \]\])?`(?:\s*\(must be formatted as a valid "
                    r"Python ((?:[^()]|\([^()]*\))*)\))?")
_LITERAL = re.compile(r"^Literal\[(.*)\]$", re.S)
_REASONING = ("thought", "reason", "rationale", "plan")
_ANSWERING = ("answer", "response", "reply", "output", "result")
_SECTION = re.compile(r"^\[\[ ## (\w+) ## \]\]", re.M)


def _fields(text: str) -> tuple[tuple[Field, ...], bool] | None:
    """The output fields the last user message asks for, and whether as one JSON object."""
    m = _SECTIONS_ASKED.search(text)
    json_form = m is None
    if m is None:
        m = _JSON_ASKED.search(text)
        if m is None:
            return None
    out = []
    for f in _FIELD.finditer(m.group(1)):
        name, kind = f.group(1), (f.group(2) or "str").strip()
        lit = _LITERAL.match(kind)
        choices = None
        if lit:
            try:
                got = ast.literal_eval(f"[{lit.group(1)}]")
            except (ValueError, SyntaxError):
                got = []
            choices = tuple(str(c) for c in got)
        if name != "completed":
            out.append(Field(name, choices, kind))
    return (tuple(out), json_form) if out else None


def _fields_protocol(request: Request, world: Iterable[str]) -> Protocol | None:
    last = next((m.plain_text() for m in reversed(request.messages) if m.role == "user"), "")
    if "Respond with" not in last:
        return None
    found = _fields(last)
    if found is None:
        return None
    fields, json_form = found
    own = set(world)
    roles = _roles(fields, own)
    tool = roles[0]
    tools = tuple(c for c in tool.choices or () if c in own) if tool else ()
    final = next((c for c in tool.choices or () if c not in own), None) if tool else None
    return Protocol("fields", tools, final, fields=fields, json=json_form, roles=roles)


def text_protocol(request: Request, world: Iterable[str]) -> Protocol | None:
    """The text protocol the request asks for (module docstring) with the world's tools it
    names, or None: it offers tools to the API, asks for no protocol, or names no tool."""
    if request.tools:
        return None
    if request.messages and "[[ ## " in request.messages[-1].plain_text():
        return _fields_protocol(request, world)
    text = instructions(request)
    if "<tool_call>" in text and "</tool_call>" in text:
        # Tagged calls: the tools named in the signatures' JSON (or as whole words).
        tools = _named(text, world, r'"name"\s*:\s*"{}"') or \
            _named(text, world, r"(?<![\w-]){}(?![\w-])")
        return Protocol("tagged", tools, None) if tools else None
    if "Input" in text and _INPUT.search(text) and _ACTION.search(text):
        tools = _named(text, world, r"(?<![\w-]){}(?![\w-])")
        final = "Final Answer" if _FINAL.search(text) else "Answer" if _ANSWER.search(text) \
            else None
        return Protocol("react", tools, final) if tools else None
    if "def " in text and ("<code>" in text or "```py" in text):
        # Code actions (smolagents' CodeAgent): the tools as Python functions.
        tools = _named(text, world, r"(?<![\w.])def {}\(")
        tags = ("<code>", "</code>") if "<code>" in text else ("```py", "```")
        final = "final_answer" if "final_answer(" in text or "`final_answer`" in text else None
        return Protocol("code", tools, final, tags) if tools else None
    return None


def with_listed(request: Request, names: tuple[str, ...]) -> Request:
    """The request as the model decides on it: the listed tools offered."""
    return replace(request, tools=tuple(ToolSchema.from_dict({"type": "function", "function": {
        "name": n, "parameters": {"type": "object", "properties": {}}}}) for n in names))


def _py(v: Any) -> str:
    """A JSON value as a Python literal (a JSON string is one; true/false/null are not)."""
    return json.dumps(v, ensure_ascii=False) if isinstance(v, str | int | float) \
        and not isinstance(v, bool) else repr(v)


def _arguments(c: ToolCallBlock) -> Any:
    """A call's arguments as JSON (``{}`` when they are none)."""
    try:
        return json.loads(c.input or "{}")
    except ValueError:
        return {}


def _code_call(c: ToolCallBlock) -> str:
    args = _arguments(c)
    kw = ", ".join(f"{k}={_py(v)}" for k, v in args.items()) if isinstance(args, dict) else ""
    return f"result = {c.name}({kw})\nprint(result)"


def in_protocol(p: Protocol, blocks: tuple[Block, ...], annotations: Mapping[str, Any]
                ) -> tuple[tuple[Block, ...], Mapping[str, Any]]:
    """A reply in the protocol (module docstring): its first tool call as an action (one
    action a step, as the protocols ask), else its text as the final answer. A summary stays
    as written."""
    if annotations.get("kind") in ("summary", "summary_refused"):
        return blocks, annotations
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    said = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    notes: dict[str, Any] = {**annotations, "tool_protocol": p.kind}
    if calls:
        c = calls[0]
        notes["text_calls"] = [{"name": c.name, "input": c.input or "{}"}]
    if p.kind == "fields":
        return (TextBlock(_in_fields(p, calls[0] if calls else None, said)),), notes
    if p.kind == "tagged":
        if not calls:
            return (TextBlock(said),), notes
        body = json.dumps({"name": calls[0].name, "arguments": _arguments(calls[0])},
                          ensure_ascii=False)
        return (TextBlock(f"<tool_call>\n{body}\n</tool_call>"),), notes
    if p.kind == "react":
        text = (f"{THOUGHT_CALL}\nAction: {calls[0].name}\nAction Input: {calls[0].input or '{}'}"
                if calls else f"{THOUGHT_ANSWER}\n{p.final}: {said}" if p.final else said)
    else:
        code = _code_call(calls[0]) if calls else \
            f"{p.final}({_py(said)})" if p.final else f"print({_py(said)})"
        text = f"{THOUGHT_CALL if calls else THOUGHT_ANSWER}\n{p.tags[0]}\n{code}\n{p.tags[1]}"
    return (TextBlock(text),), notes


def _roles(fields: tuple[Field, ...], own: set[str]
           ) -> tuple[Field | None, Field | None, Field | None]:
    """Of the fields asked, the tool field (a ``Literal`` naming a world tool), the arguments
    field after it, and the answer field (module docstring)."""
    tool = next((f for f in fields if f.choices and own.intersection(f.choices)), None)
    args = None
    if tool is not None:
        after = fields[fields.index(tool) + 1:]
        args = next((f for f in after if f.kind.startswith("dict") or any(
            w in f.name for w in ("arg", "input", "param"))), None)
    plain = [f for f in fields if f not in (tool, args) and f.choices is None
             and f.kind == "str" and not any(w in f.name for w in _REASONING)]
    answer = next((f for f in plain if any(w in f.name for w in _ANSWERING)),
                  plain[-1] if plain and tool is None else None)
    return tool, args, answer


def _in_fields(p: Protocol, call: ToolCallBlock | None, said: str) -> str:
    """A reply as the fields protocol's sections (or JSON object): the call in the tool and
    arguments fields, else the answer."""
    tool, args, answer = p.roles
    values: dict[str, Any] = {}
    for f in p.fields:
        if f is tool:
            v: Any = call.name if call is not None else p.final or ""
        elif f is args:
            v = _arguments(call) if call is not None else {}
        elif f is answer:
            v = said if call is None else ""
        elif any(w in f.name for w in _REASONING):
            v = (THOUGHT_CALL if call is not None else THOUGHT_ANSWER).removeprefix("Thought: ")
        elif f.choices:
            v = f.choices[0]
        elif f.kind == "bool":
            v = False
        elif f.kind in ("int", "float"):
            v = 0
        elif f.kind.startswith(("list", "tuple")):
            v = []
        elif f.kind.startswith("dict"):
            v = {}
        else:
            v = ""
        values[f.name] = v
    if p.json:
        return json.dumps(values, ensure_ascii=False)
    parts = [f"[[ ## {k} ## ]]\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
             for k, v in values.items()]
    return "\n\n".join([*parts, "[[ ## completed ## ]]"])


def field_values(text: str) -> list[str]:
    """The values of a reply written as ``[[ ## <field> ## ]]`` sections (a fields protocol),
    each stripped; the closing ``completed`` marker is none. A reply written as the JSON
    object of its fields: its non-empty string values."""
    marks = list(_SECTION.finditer(text))
    if not marks and text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return []
        return [v.strip() for v in data.values() if isinstance(v, str) and v.strip()] \
            if isinstance(data, dict) else []
    return [text[m.end():n.start() if n else len(text)].strip()
            for m, n in zip(marks, [*marks[1:], None], strict=True)
            if m.group(1) != "completed"]


# final_answer("...") or final_answer(answer='...'): one string literal, escapes kept.
_FINAL_CALL = re.compile(r"final_answer\(\s*(?:answer\s*=\s*)?"
                         r"(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')\s*\)")


def answer_of(text: str) -> str | None:
    """The final answer in a reply written in a protocol (the text after its last
    final-answer marker, or the string a ``final_answer(...)`` call in code is given), if it
    has one."""
    if "final_answer(" in text:
        calls = _FINAL_CALL.findall(text)
        if calls:
            try:
                got = ast.literal_eval(calls[-1])
            except (ValueError, SyntaxError):
                return None
            return got if isinstance(got, str) else None
    found = [m for m in (_FINAL.search(text), *_ANSWER.finditer(text)) if m is not None]
    if not found:
        return None
    return text[max(m.end() for m in found):].strip()
