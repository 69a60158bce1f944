"""The intent vocabulary shared by scenarios, the fake model and adapters: the generic acts,
constraints and claims, and the published text forms (tags, markers, the bundled world's id
patterns) by which the fake model recognises them in a request.

What a domain adds (its entity types, ids, tools, named acts and their words) is its domain
file's (``harnesslab.sim.domain``); nothing else is understood.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from harnesslab.sim.domain import bundled_domain


class Act(StrEnum):
    # The bundled world's named acts (its domain file, commerce.domain.yaml, says what each
    # looks up and how it is answered), named here for Python callers.
    ORDER_STATUS = "order_status"    # why hasn't it arrived / where is it
    ASK_ETA = "ask_eta"              # when will it arrive
    ASK_WAIT = "ask_wait"            # do I still have to wait (tomorrow)?
    ASK_ADDRESS = "ask_address"      # what is my delivery address
    ASK_PHONE = "ask_phone"          # what phone number is on file
    ASK_POLICY = "ask_policy"        # a knowledge-base question (returns, refunds)
    ASK_TRACE = "ask_trace"          # the full logistics trace (a large tool output)
    LIST_ORDERS = "list_orders"      # which orders do I have (ids and items, in order)
    ASK_SHIP_TO = "ask_ship_to"      # where is this order being shipped
    SET_CONSTRAINT = "set_constraint"  # "keep it short from now on"
    CHITCHAT = "chitchat"            # small talk, needs no fact
    # A declared domain's (harnesslab.sim.domain): a field of an entity, and a user's list of
    # entities of one type, looked up by the tools the domain declares for them.
    ASK = "ask"
    LIST = "list"


class Slot(StrEnum):
    ORDER = "order"
    USER = "user"


class Constraint(StrEnum):
    BREVITY = "brevity"
    DETAILED = "detailed"
    ENGLISH = "english"
    CHINESE = "chinese"


# A later constraint of a pair replaces an earlier one.
CONFLICTS: dict[Constraint, Constraint] = {
    Constraint.BREVITY: Constraint.DETAILED, Constraint.DETAILED: Constraint.BREVITY,
    Constraint.ENGLISH: Constraint.CHINESE, Constraint.CHINESE: Constraint.ENGLISH,
}


class ClaimKind(StrEnum):
    IDENTITY = "identity"    # "我是李四": the speaker claims to be user U-2
    OWNERSHIP = "ownership"  # "O-1002 是我的订单": the speaker claims an order


# Slot values resolved from the request rather than named (harnesslab.sim.reading.View.resolve):
REF = "@ref"      # the latest visible id of the slot's type
FIRST = "@first"  # orders only: the first order of the latest visible order list
LAST = "@last"    # orders only: the last order of the latest visible order list
ITEM = "@item:"   # orders only, "@item:skateboard": the order a visible fact says holds it


def is_reference(value: str | None) -> bool:
    """True for a slot value the model resolves from the request (not an explicit id)."""
    return value is not None and (value in (REF, FIRST, LAST) or
                                  (value.startswith(ITEM) and len(value) > len(ITEM)) or
                                  by_field(value) is not None)


def by_field(value: str) -> tuple[str, str] | None:
    """A declared domain's ``@<field>:<value>`` reference as (field, value): the instance a
    visible fact gives that value of that field (``@item:<name>`` is the bundled world's)."""
    if not value.startswith("@") or value.startswith(ITEM):
        return None
    name, sep, wanted = value[1:].partition(":")
    return (name, wanted) if sep and name and wanted else None


# The bundled world's id patterns, as its domain file declares them (anchored so that an id
# inside a longer token is not one: PO-7731 is no order O-7731, U-12 is no U-1). Filler and the
# knowledge base contain no such ids unless a scenario declares them as distractors.
ID_PATTERNS: dict[str, re.Pattern[str]] = dict(bundled_domain("commerce").patterns)

# An id given as an example ("The order id, e.g. O-1001": a tool's documentation that a
# framework writes into its prompt, as smolagents does) is no entity the conversation named.
_EXAMPLE_RE = re.compile(r"(?:\be\.?g\.?|\bfor[ \t]+(?:example|instance)|\bsuch[ \t]+as|例如|比如|譬如)"
                         r"[,:：，]?[ \t]*['\"“‘`]?$", re.IGNORECASE)


def is_example(text: str, start: int) -> bool:
    """Whether the id found at ``start`` of ``text`` is given as an example (after ``e.g.``,
    ``for example``, ``such as``, ``例如``, ...)."""
    return _EXAMPLE_RE.search(text, max(0, start - 16), start) is not None


class ToolError(StrEnum):
    """Why a tool failed, as its result's ``code`` field states it (the fake model also reads
    the wording of an error that has no code, such as a harness's own refusal)."""

    NOT_FOUND = "not_found"      # no such order, user or policy
    FORBIDDEN = "forbidden"      # not the acting user's, or another user_id than the session's
    UNAVAILABLE = "unavailable"  # the service behind the tool is down: try again later
    BAD_REQUEST = "bad_request"  # arguments missing or not JSON, an unknown tool

@dataclass(frozen=True)
class Claim:
    kind: ClaimKind
    value: str  # a user id (identity) or an order id (ownership)


@dataclass(frozen=True)
class Intent:
    """The meaning of one user utterance, as the scenario lexicon declares it."""

    act: Act | str   # a generic act, or the name of one its domain declares
    order: str | None = None       # "O-1001", "@ref", "@first", "@last" or "@item:<name>"
    user: str | None = None        # "U-2" or "@ref"; None: the acting user (omitted argument)
    topic: str | None = None       # knowledge-base topic for ask_policy
    constraints: tuple[Constraint, ...] = ()
    claims: tuple[Claim, ...] = ()
    # A declared domain's acts (ask, list): the entity type, the instance (an id or a
    # reference as for orders) and the field asked.
    entity: str | None = None
    id: str | None = None
    field: str | None = None


# --- published tags: what a summarizer (fake or a harness strategy) writes ---------------------

TAG_RE = re.compile(r"\[(constraint|claim|fact):([^\]]*)\]")
_TAG_OPEN_RE = re.compile(r"\[(constraint|claim|fact):")


def tags_in(text: str) -> list[tuple[int, str, str]]:
    """``TAG_RE``'s matches (start, kind, body), found in linear time: the regex scans to the
    next ``]`` from every opener, so many openers without one cost O(n^2) (a request of
    ``[fact:`` repeated took seconds)."""
    out: list[tuple[int, str, str]] = []
    pos = 0
    while (m := _TAG_OPEN_RE.search(text, pos)) is not None:
        close = text.find("]", m.end())
        if close < 0:
            break  # no later opener has a "]" after it either
        out.append((m.start(), m.group(1), text[m.end():close]))
        pos = close + 1
    return out


def open_tag(text: str) -> bool:
    """Whether a tag opener in ``text`` has no ``]`` after it (a tag left open at its end),
    in linear time: such an opener comes after the last ``]``."""
    return _TAG_OPEN_RE.search(text, text.rfind("]") + 1) is not None


def constraint_tag(c: Constraint) -> str:
    return f"[constraint:{c.value}]"


def claim_tag(claim: Claim, *, verified: bool = False) -> str:
    """``[claim:identity=U-2 unverified]``; without ``unverified`` the claim reads as established
    (what a summary that promotes a claim writes: the fake model then trusts it, see
    ``harnesslab.sim.model``)."""
    return f"[claim:{claim.kind.value}={claim.value}{'' if verified else ' unverified'}]"


def fact_tag(tool: str, fields: dict[str, str]) -> str:
    """``[fact:track_order order_id=O-1001 status=delayed eta=2026-11-30 as_of=...]``.

    Values must not contain spaces or ``]``; the fake model reads a fact tag like a tool result.
    """
    body = " ".join(f"{k}={v}" for k, v in fields.items())
    return f"[fact:{tool} {body}]"


# Phrases that state a constraint when they appear verbatim anywhere in a request. A scenario's
# lexicon may add phrases; these are the defaults.
CONSTRAINT_PHRASES: dict[Constraint, tuple[str, ...]] = {
    Constraint.BREVITY: ("回答简单一点", "简单一点", "简短回答", "说简短点", "keep it short",
                         "keep answers short", "be brief", "short answers"),
    Constraint.DETAILED: ("详细说说", "详细一点", "说详细点", "in detail", "more detail"),
    Constraint.ENGLISH: ("用英文回答", "please answer in english", "reply in english"),
    Constraint.CHINESE: ("用中文回答", "please answer in chinese", "reply in chinese"),
}

# --- time ------------------------------------------------------------------------------------

# The runtime-state hint states "now" as <current-time>ISO-8601 with offset</current-time>.
CURRENT_TIME_RE = re.compile(r"<current-time>([^<]+)</current-time>")


def current_time_text(now: datetime) -> str:
    return f"<current-time>{now.isoformat(timespec='seconds')}</current-time>"


def parse_time(text: str) -> datetime | None:
    """An ISO-8601 time with offset, or None when it is not one."""
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


# --- summary requests ------------------------------------------------------------------------

# A request is a summary request when it offers exactly one tool, this one (AgentScope's
# structured output: the fake model fills the schema's properties) ...
SUMMARY_TOOL = "generate_structured_output"
# ... or when its last user message contains one of these markers (freeform and handoff forms).
FREEFORM_SUMMARY_MARKER = "[task:summarize]"
HANDOFF_SUMMARY_MARKER = "CONTEXT CHECKPOINT COMPACTION"

# Field names the fake summarizer knows, by template: AgentScope's five and the seed's five.
AGENTSCOPE_FIELDS = ("task_overview", "current_state", "important_discoveries", "next_steps",
                     "context_to_preserve")
# A structured request asking only for these is a pin extraction: the standing instructions
# (constraints in force, as tags) and the entities under discussion (ids, most recent last).
PIN_FIELDS = ("standing_instructions", "entities")
# A model offered this tool keeps its own memory file (the agentic memory mode): when the user
# states a preference or a claim it rewrites MEMORY.md with what it sees, claims unverified.
MEMORY_WRITE_TOOL = "memory_write"
# ... or, told in its instructions that it has a file-based memory system at a directory
# (AgentScope's AgenticMemoryMiddleware, Claude Code's auto memory: "a persistent, file-based
# memory system at `<dir>`"), it keeps <dir>/MEMORY.md through a file-writing tool of this name
# taking an absolute file_path and the content; offered the reading tool as well, it reads the
# file before rewriting it (AgentScope's Write refuses to overwrite a file not read first).
FILE_WRITE_TOOL = "Write"
FILE_READ_TOOL = "Read"
MEMORY_DIR_RE = re.compile(r"file-based memory system at `([^`\n]+)`")
# A structured request asking only for these is a memory extraction: the user's standing
# preferences (constraint tags), their claims (claim tags, unverified) and the facts tool
# results state (fact tags, with their as_of), one per line.
MEMORY_FIELDS = ("preferences", "user_claims", "facts")
# A memory extraction in words whose instructions show its output as a JSON object with a
# "memory" list of {"id", "text"} objects (mem0's ADDITIVE_EXTRACTION_PROMPT) is answered in that
# shape, one object per line it would have written.
MEMORY_JSON_RE = re.compile(r'\{\s*"memory"\s*:\s*\[\s*\{\s*"id"\s*:\s*"[^"]*"\s*,\s*"text"\s*:')
SEED_FIELDS = ("goal", "confirmed_facts", "unconfirmed_items", "next_step",
               "constraints_to_keep")
