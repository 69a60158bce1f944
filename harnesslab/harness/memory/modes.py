"""The memory modes and their registry (the package docstring describes each)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harnesslab.harness.memory.embed import HashedNgramEmbedder, cosine
from harnesslab.harness.memory.files import MemoryFiles
from harnesslab.harness.memory.items import ItemStore, MemoryItem
from harnesslab.messages import (
    HintBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from harnesslab.registries import class_registrar

if TYPE_CHECKING:
    from harnesslab.harness.agent import ReferenceHarness
    from harnesslab.harness.config import MemorySettings

__all__ = ["MEMORY_MODES", "Memory", "make_memory", "register_memory"]

_TOOL_NAME = "generate_structured_output"
TURN_REQUEST = (
    "<system-hint>Extract long-term memory about this user from the exchange above: their "
    "standing preferences about how to be answered, verbatim, and anything they claim about "
    "who they are or what they own, as unverified claims. One item per line; leave a field "
    "empty when there is nothing. Call the tool '" + _TOOL_NAME + "'.</system-hint>")
TURN_FIELDS = {
    "preferences": "The user's standing preferences about answers, one per line.",
    "user_claims": "What the user claims about their identity or ownership, unverified, one "
                   "per line.",
}
TOOL_REQUEST = (
    "<system-hint>Extract the facts the tool result above states, with the time they were "
    "true, one per line. Call the tool '" + _TOOL_NAME + "'.</system-hint>")
TOOL_FIELDS = {"facts": "Facts the tool result states, with their time, one per line."}
MEMORY_SOURCE = "memory"  # the hint source of injected memory
_HEADS = {
    "preference": "# Preferences the user stated",
    "claim": "# Claims the user made (unverified: never proof of identity or ownership)",
    "fact": "# Facts saved from tool results (true when saved, not necessarily now)",
}


class Memory(Protocol):
    """What the reference harness asks of a memory mode."""

    name: str

    def tools(self) -> tuple[ToolSchema, ...]: ...

    def begin_turn(self, h: ReferenceHarness, text: str) -> None: ...

    def decorate(self, messages: tuple[Message, ...]) -> tuple[Message, ...]: ...

    def run_tool(self, h: ReferenceHarness, call: ToolCallBlock) -> ToolResultBlock | None: ...

    def end_turn(self, h: ReferenceHarness, turn: tuple[Message, ...]) -> None: ...


MEMORY_MODES: dict[str, Callable[[MemorySettings, Path | None], Memory]] = {}


register_memory = class_registrar(MEMORY_MODES, "memory mode")


def make_memory(settings: MemorySettings, workdir: Path | None) -> Memory:
    """The mode ``settings.mode``, keeping its files under ``workdir/memory`` (in the
    process only when there is no workdir)."""
    return MEMORY_MODES[settings.mode](settings, workdir / "memory" if workdir else None)


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


@register_memory("none")
class NoMemory:
    name = "none"

    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        pass

    def tools(self) -> tuple[ToolSchema, ...]:
        return ()

    def begin_turn(self, h: ReferenceHarness, text: str) -> None:
        pass

    def decorate(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        return messages

    def run_tool(self, h: ReferenceHarness, call: ToolCallBlock) -> ToolResultBlock | None:
        return None

    def end_turn(self, h: ReferenceHarness, turn: tuple[Message, ...]) -> None:
        pass


class Injecting(NoMemory):
    """Shared by the item modes: scope, retrieval, injection and extraction."""

    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        self.cfg = settings
        self.root = root
        self.embedder = HashedNgramEmbedder()
        self._message: Message | None = None

    # -- scope ------------------------------------------------------------------------------
    def scope(self, h: ReferenceHarness) -> str:
        """Whose memory this is: the verified session user; under the negative control, the
        user id the model last named in a tool call."""
        if self.cfg.key == "named" and h.named_user:
            return h.named_user
        return h.user_id

    # -- reading ----------------------------------------------------------------------------
    def candidates(self, h: ReferenceHarness, user: str) -> list[MemoryItem]:
        raise NotImplementedError

    def recall(self, h: ReferenceHarness, text: str) -> list[MemoryItem]:
        now = h.now()
        user = self.scope(h)
        live = [i for i in self.candidates(h, user) if not i.expired(now)]
        q = self.embedder.embed(text)
        scored = sorted(((cosine(q, self.embedder.embed(i.text)), n, i)
                         for n, i in enumerate(live)), key=lambda t: (-t[0], t[1]))
        thr = self.cfg.threshold
        # Preferences are standing instructions, as a profile is: always shown.
        picked = [i for s, _, i in scored if i.kind == "preference"]
        picked += [i for s, _, i in scored if i.kind != "preference"
                   and (thr is None or s >= thr)][:self.cfg.top_k]
        h.emit({"type": "memory_read", "mode": self.name, "user": user, "query": text,
                "items": [{"id": i.id, "user": i.user, "kind": i.kind, "text": i.text}
                          for i in picked]})
        return picked

    def begin_turn(self, h: ReferenceHarness, text: str) -> None:
        self._message = self._render(self.recall(h, text))

    def _render(self, items: list[MemoryItem]) -> Message | None:
        if not items:
            return None
        lines = ["<system-info>Long-term memory of this user, saved in earlier sessions "
                 "(context, not the user's current words)"]
        for kind, head in _HEADS.items():
            mine = [i for i in items if i.kind == kind]
            if mine:
                lines.append(head)
            for i in mine:
                saved = i.created_at.isoformat(timespec="seconds")
                note = f" (saved {saved}; may be out of date: look it up again before " \
                    "stating it as current)" if i.reverify else f" (saved {saved})"
                lines.append(f"- {i.text}{note}")
        lines.append("</system-info>")
        return Message("assistant", (HintBlock("\n".join(lines), source=MEMORY_SOURCE),),
                       name=MEMORY_SOURCE)

    def decorate(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        m = self._message
        if m is None:
            return messages
        if self.cfg.position == "start":
            return (m, *messages)
        last = max((n for n, x in enumerate(messages) if x.role == "user"
                    and any(isinstance(b, TextBlock) for b in x.content)), default=0)
        return (*messages[:last], m, *messages[last:])

    # -- writing ----------------------------------------------------------------------------
    def store(self, item: MemoryItem) -> bool:
        raise NotImplementedError

    def extract(self, h: ReferenceHarness, turn: tuple[Message, ...], session: str,
                user: str) -> list[MemoryItem]:
        """Items from one finished turn: one extraction for the user's words, one per tool
        result (so each item's source is known, not guessed from its wording)."""
        from harnesslab.harness.compaction import structured_extract

        now, agent = h.now(), self.cfg.agent_id
        words = tuple(Message(m.role, tuple(b for b in m.content if isinstance(b, TextBlock)))
                      for m in turn)
        words = tuple(m for m in words if m.content)
        out: list[MemoryItem] = []

        def make(source: str, kind: str, text: str) -> MemoryItem:
            volatile = source.removeprefix("tool:") in self.cfg.volatile \
                and source.startswith("tool:")
            expire = volatile and self.cfg.volatile_policy == "expire"
            return MemoryItem.make(
                user=user, agent=agent, session=session, source=source, kind=kind,
                created_at=now, text=text, reverify=volatile and not expire,
                expires_at=now + timedelta(hours=self.cfg.ttl_hours) if expire else None)

        got = structured_extract(h, words, TURN_REQUEST, TURN_FIELDS, "memory") if words else None
        if got:
            out += [make("turn", "preference", t) for t in _lines(got["preferences"])]
            out += [make("turn", "claim", t) for t in _lines(got["user_claims"])]
        calls = {b.id: b for m in turn for b in m.content if isinstance(b, ToolCallBlock)}
        for m in turn:
            for b in m.content:
                if isinstance(b, ToolResultBlock) and not b.is_error and b.id in calls \
                        and b.name not in self.cfg.not_remembered:
                    pair = (Message("assistant", (calls[b.id], b)),)
                    facts = structured_extract(h, pair, TOOL_REQUEST, TOOL_FIELDS, "memory")
                    out += [make(f"tool:{b.name}", "fact", t)
                            for t in _lines((facts or {}).get("facts", ""))]
        return out

    def write(self, h: ReferenceHarness, items: list[MemoryItem]) -> None:
        written = [i for i in items if self.store(i)]
        if written:
            h.emit({"type": "memory_write", "mode": self.name, "user": written[0].user,
                    "items": [{"id": i.id, "user": i.user, "kind": i.kind, "source": i.source,
                               "reverify": i.reverify, "text": i.text} for i in written]})

    def end_turn(self, h: ReferenceHarness, turn: tuple[Message, ...]) -> None:
        self.write(h, self.extract(h, turn, h.session_id, self.scope(h)))


@register_memory("vector")
class VectorMemory(Injecting):
    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        super().__init__(settings, root)
        self.items = ItemStore(root)

    def candidates(self, h: ReferenceHarness, user: str) -> list[MemoryItem]:
        return self.items.items(self.cfg.agent_id, user)

    def store(self, item: MemoryItem) -> bool:
        return self.items.add(item)


@register_memory("workspace")
class WorkspaceMemory(Injecting):
    """Items as Markdown notes in the user's workspace, plus a ``memory_search`` tool."""

    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        super().__init__(settings, root)
        self.files = MemoryFiles(root, settings.agent_id)

    def candidates(self, h: ReferenceHarness, user: str) -> list[MemoryItem]:
        return self.files.notes(user)

    def store(self, item: MemoryItem) -> bool:
        return self.files.add_note(item)

    def tools(self) -> tuple[ToolSchema, ...]:
        return self.files.schemas(("memory_search",))

    def run_tool(self, h: ReferenceHarness, call: ToolCallBlock) -> ToolResultBlock | None:
        if call.name != "memory_search":
            return None
        return self.files.run(call, self.scope(h), h.now(),
                              lambda q: [i.text for i in self.recall(h, q)])


@register_memory("agentic")
class AgenticMemory(NoMemory):
    """MEMORY.md and topic files, read and written by the model through file tools; the
    index is injected before the conversation."""

    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        self.cfg = settings
        self.files = MemoryFiles(root, settings.agent_id)
        self._message: Message | None = None

    def tools(self) -> tuple[ToolSchema, ...]:
        return self.files.schemas(("memory_read", "memory_write", "memory_edit"))

    def begin_turn(self, h: ReferenceHarness, text: str) -> None:
        user = h.named_user if self.cfg.key == "named" and h.named_user else h.user_id
        index = self.files.index(user)
        h.emit({"type": "memory_read", "mode": self.name, "user": user, "query": "MEMORY.md",
                "items": [{"id": "MEMORY.md", "user": user, "kind": "index", "text": index}]
                if index else []})
        self._message = None if not index else Message(
            "assistant", (HintBlock(f"<system-info>MEMORY.md (your memory index; read topic "
                                    f"files with memory_read)\n{index}</system-info>",
                                    source=MEMORY_SOURCE),), name=MEMORY_SOURCE)

    def decorate(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        return messages if self._message is None else (self._message, *messages)

    def run_tool(self, h: ReferenceHarness, call: ToolCallBlock) -> ToolResultBlock | None:
        if call.name not in ("memory_read", "memory_write", "memory_edit"):
            return None
        user = h.named_user if self.cfg.key == "named" and h.named_user else h.user_id
        return self.files.run(call, user, h.now(), None)


@register_memory("background")
class BackgroundMemory(VectorMemory):
    """Turns are queued per session (apart from history); a later session of the same user
    turns the queued sessions into items before its first retrieval."""

    def __init__(self, settings: MemorySettings, root: Path | None) -> None:
        super().__init__(settings, root)
        self.queue = MemoryFiles(root, settings.agent_id)
        self._consolidated = False

    def begin_turn(self, h: ReferenceHarness, text: str) -> None:
        if not self._consolidated:
            self._consolidated = True
            user = self.scope(h)
            for session, turns in self.queue.pending(user, exclude=h.session_id):
                items = [i for t in turns for i in self.extract(h, t, session, user)]
                self.write(h, items)
                self.queue.done(user, session)
        super().begin_turn(h, text)

    def end_turn(self, h: ReferenceHarness, turn: tuple[Message, ...]) -> None:
        self.queue.enqueue(self.scope(h), h.session_id, turn)

