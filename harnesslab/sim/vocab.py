"""What the fake model's reader recognises of a domain (``Vocab``): each entity type's id
pattern, which result field names what a fact is about, how a list result and a generated
history read, which fields a summary's tag keeps, and the model's own answers as patterns, so
that a summary of answers alone keeps the facts they state (``harnesslab.sim.prose``).

Everything here is derived from the domain file (``harnesslab.sim.domain``); the bundled
world's is ``bundled()``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from harnesslab.sim.domain import USER_KEY, ActDecl, Domain, Lang, bundled_domain

__all__ = ["ListShape", "ProseForm", "Vocab", "bundled", "tokens", "vocab_of"]

# A template's placeholders: {name} or {name.label}.
_TOKEN = re.compile(r"\{(\w+)(?:\.(label))?\}")


@dataclass(frozen=True)
class ListShape:
    """How a list tool's result reads: the field holding the entries, the field naming each,
    the entry's list-valued field (kept with the id in a summary's tag), the type listed."""

    key: str
    id_field: str
    list_field: str | None
    etype: str


@dataclass(frozen=True)
class ProseForm:
    """One answer of the model's, as a pattern: the tool whose fact it states, the fields its
    words fix, and for a list answer the entries' field and one entry's pattern."""

    tool: str
    pattern: re.Pattern[str]
    fixed: tuple[tuple[str, str], ...] = ()
    list_key: str | None = None
    entry: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Vocab:
    patterns: Mapping[str, re.Pattern[str]]   # entity type -> id pattern
    keys: Mapping[str, str]                   # tool -> the result field naming its fact
    key_types: Mapping[str, str]              # such a field -> its entity type
    lists: Mapping[str, ListShape]            # list tool -> how its result reads
    histories: frozenset[str]                 # generated history fields (read as a count)
    tag_order: tuple[str, ...]                # the fields a summary's fact tag keeps, in order
    domain: Domain                            # its labels, acts and words
    prose: tuple[ProseForm, ...] = ()


def tokens(template: str) -> Iterator[tuple[str, str | None, str | None]]:
    """A template as (literal text, placeholder name, ``label`` or None) pieces."""
    at = 0
    for m in _TOKEN.finditer(template):
        yield template[at:m.start()], m.group(1), m.group(2)
        at = m.end()
    yield template[at:], None, None


def _tag_order(d: Domain) -> tuple[str, ...]:
    if d.spec.tags is not None:
        return tuple(d.spec.tags)
    out: list[str] = []
    for t in d.spec.tools.values():
        names = (["title", "text"] if t.kb else [t.list_key] if t.lists else list(t.returns))
        out += [n for n in names if n not in out]
    return (*out, "truncated")


def _lists(d: Domain) -> dict[str, ListShape]:
    out = {}
    for name, t in d.spec.tools.items():
        if t.lists is None:
            continue
        fields = d.types[t.lists].fields
        listed = next((f for f in t.returns if f in fields and fields[f].type == "list"), None)
        out[name] = ListShape(t.list_key, d.key(t.lists), listed, t.lists)
    return out


class _Forms:
    """The patterns of one domain's answers (``ProseForm``), built from its acts' words."""

    def __init__(self, d: Domain) -> None:
        self.d = d

    def value(self, etype: str, name: str, lang: Lang, tail: str) -> tuple[str, str]:
        """A field's group, and what is left of the literal after it."""
        d = self.d
        histories = {t.history.field for t in d.spec.tools.values() if t.history}
        spec = d.types[etype].fields.get(name)
        if name in histories or name == "count":
            return rf"(?P<{name}>\d+)", tail
        if spec is not None and spec.type == "enum":
            if all(re.fullmatch(r"[a-z_]+", v) for v in spec.values):
                return rf"(?P<{name}>[a-z_]+)", tail
            return rf"(?P<{name}>{'|'.join(re.escape(v) for v in spec.values)})", tail
        if spec is not None and spec.type == "date":
            return rf"(?P<{name}>\d{{4}}-\d{{2}}-\d{{2}})", tail
        if spec is not None and spec.type == "number":
            return rf"(?P<{name}>-?\d+(?:\.\d+)?)", tail
        if lang == "zh":
            return rf"(?P<{name}>[^。\n]+)", tail
        if tail.startswith("."):  # a free text ends at a full stop that ends the sentence
            return rf"(?P<{name}>[^\n]+?)\.(?=\s|$)", tail[1:]
        return rf"(?P<{name}>[^\n]+?)", tail

    def forms(self) -> list[ProseForm]:
        out: list[ProseForm] = []
        d = self.d
        for act in d.spec.acts.values():
            if not act.read:
                continue
            tool = d.spec.tools[act.tool]
            etype = tool.reads or tool.lists or act.entity
            shape = _lists(d).get(act.tool)
            for rule in act.answers:
                if not rule.read:
                    continue
                fixed = tuple((k, str(v[0])) for k, v in rule.when.items()
                              if isinstance(v, list) and len(v) == 1 and k not in
                              ("missing", "present"))
                if rule.when.get("partial") is True:
                    fixed += (("truncated", "true"),)
                for lang in ("zh", "en"):
                    template = rule.zh if lang == "zh" else rule.en
                    if shape is not None:
                        out.append(self._list_form(act, template, lang, shape))
                    else:
                        out.append(ProseForm(act.tool, re.compile(
                            self._compile(template, etype, lang)), fixed))
            if shape is not None:
                for lang in ("zh", "en"):
                    if lang in act.empty:
                        out.append(ProseForm(act.tool, re.compile(re.escape(act.empty[lang])),
                                             ((shape.key, ""),)))
        return out

    def asks(self) -> list[ProseForm]:
        """The generic ask's answers (``harnesslab.sim.declared.content``), per type, field and
        locale."""
        d = self.d
        out = []
        for etype, spec in d.types.items():
            ident = rf"(?P<id>{d.patterns[etype].pattern})"
            for name in spec.fields:
                tool = d.reader(etype, name)
                if tool is None:
                    continue
                zh, en = d.label(etype, "zh"), d.label(etype, "en")
                fzh, fen = d.field_label(etype, name, "zh"), d.field_label(etype, name, "en")
                head = en[:1].upper() + en[1:]
                out.append(ProseForm(tool, re.compile(
                    rf"{re.escape(zh)} {ident} 的{re.escape(fzh)}：(?P<{name}>[^。\n]+)。")))
                out.append(ProseForm(tool, re.compile(
                    rf"{re.escape(head)} {ident}: {re.escape(fen)} is "
                    rf"(?P<{name}>[^\n]+?)\.(?=\s|$)")))
        return out

    def _compile(self, template: str, etype: str, lang: Lang) -> str:
        out = ""
        pieces = list(tokens(template))
        tail_skip = False
        for n, (text, name, label) in enumerate(pieces):
            if tail_skip:
                text = text[1:]
                tail_skip = False
            out += re.escape(text)
            if name is None:
                continue
            if name == "id":
                out += rf"(?P<id>{self.d.patterns[etype].pattern})"
            elif label:
                words = self.d.types[etype].fields[name].value_labels
                alts = [w[lang] for w in words.values() if lang in w]
                out += "(?:" + "|".join(re.escape(a) for a in alts) + ")"
            else:
                nxt = pieces[n + 1][0] if n + 1 < len(pieces) else ""
                group, rest = self.value(etype, name, lang, nxt)
                out += group
                tail_skip = rest != nxt
        return out

    def _list_form(self, act: ActDecl, template: str, lang: Lang,
                   shape: ListShape) -> ProseForm:
        d = self.d
        entry_t = act.entry.get(lang, "{id}")
        inner = _LIST_INNER[lang]
        # One entry, read again on its own: its id, and its list field's values.
        entry_find = ""
        entry_read = ""
        for text, name, _ in tokens(entry_t):
            entry_find += re.escape(text)
            entry_read += re.escape(text)
            if name == "id":
                entry_find += d.patterns[shape.etype].pattern
                entry_read += rf"(?P<id>{d.patterns[shape.etype].pattern})"
            elif name is not None:
                entry_find += inner
                entry_read += rf"(?P<values>{inner})"
        body = ""
        for text, name, _ in tokens(template):
            body += re.escape(text)
            if name == "count":
                body += r"\d+"
            elif name == "entries":
                body += rf"(?P<{shape.key}>(?:{entry_find}(?:{re.escape(_SEP[lang])})?)+)"
        return ProseForm(act.tool, re.compile(body), (), shape.key, re.compile(entry_read))


# How a list answer joins its entries, and what one entry's list of values may hold.
_SEP: dict[str, str] = {"zh": "，", "en": ", "}
_LIST_INNER: dict[str, str] = {"zh": "[^（）]*", "en": "[^()]*"}


@functools.lru_cache(maxsize=32)
def vocab_of(d: Domain) -> Vocab:
    """What the fake model's reader recognises of ``d``."""
    keys = {}
    for name, t in d.spec.tools.items():
        keys[name] = "topic" if t.kb else USER_KEY if t.lists is not None else d.key(t.reads or "")
    histories = frozenset(t.history.field for t in d.spec.tools.values() if t.history)
    forms = _Forms(d)
    return Vocab(d.patterns, keys, {d.key(t): t for t in d.types}, _lists(d), histories,
                 _tag_order(d), d, (*forms.forms(), *forms.asks()))


def bundled() -> Vocab:
    """The bundled world's (``commerce``)."""
    return vocab_of(bundled_domain("commerce"))
