"""Reading a YAML input file (a scenario, a domain): line numbers kept, duplicate keys and
binary or non-UTF-8 files refused, and a validation error named by file, line and field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from harnesslab.errors import InputError

__all__ = ["loc_text", "node_line", "read_yaml", "validation_message"]


def node_line(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (the deepest one that exists)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for key in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    nxt, line = v, k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and \
                key < len(node.value):
            nxt = node.value[key]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def loc_text(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def validation_message(err: Any) -> str:
    msg = str(err["msg"])
    msg = re.sub(r"^Value error, ", "", msg)
    if err["type"] == "missing":
        return "missing required field"
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "enum":
        return f"{msg} (got {err.get('input')!r})"
    return msg


def read_yaml(p: Path, raw: bytes | None, what: str) -> tuple[yaml.Node | None, Any]:
    """The file's YAML node tree (for line numbers) and its data; ``raw``: its bytes, when
    given. ``what`` names the kind of file expected ("a YAML scenario")."""
    if raw is None:
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise InputError(f"not a UTF-8 text file (byte {e.start}); expected {what}",
                         file=str(p), line=line) from None
    if "\x00" in text:
        raise InputError(f"a binary file (it holds NUL bytes); expected {what}",
                         file=str(p), line=text[:text.index("\x00")].count("\n") + 1)
    try:
        node = yaml.compose(text)
        no_duplicate_keys(node, str(p))
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"bad YAML: {problem}", file=str(p),
                         line=mark.line + 1 if mark else None) from None
    return node, data


def no_duplicate_keys(node: yaml.Node | None, file: str, where: str = "") -> None:
    """YAML lets a later key silently replace an earlier one; in a scenario that hides a
    mistake (two lexicon entries for one utterance, two ``set`` keys), so it is an error."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            k = str(key.value)
            if k in seen:
                what = "duplicate lexicon entry" if where == "lexicon" else "duplicate key"
                raise InputError(f"{what} {k!r} (first at line {seen[k]})", file=file,
                                 line=key.start_mark.line + 1,
                                 field=f"{where}.{k}" if where else k)
            seen[k] = key.start_mark.line + 1
            no_duplicate_keys(value, file, f"{where}.{k}" if where else k)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            no_duplicate_keys(item, file, f"{where}[{i}]")
