"""Who a tool call acts for: the one rule the reference harness and the bench's MCP tool server
share (design 3.4), so a black-box harness reaching the tools over MCP is bound exactly as the
reference harness binds its own calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

IdentityMode = Literal["bind", "refuse", "trust"]


@dataclass(frozen=True)
class Binding:
    """The decision for one tool call."""

    arguments: str   # the arguments to run with (user_id overridden under ``bind``)
    acting: str      # the user the tool acts for
    decision: str    # bound, overridden, refused or trusted
    claimed: Any     # the user_id the model passed, if any


def bind_identity(mode: IdentityMode, session_user: str, arguments: str) -> Binding:
    """``bind``: the verified session user, a different ``user_id`` overridden; ``refuse``: a
    different ``user_id`` refused (the caller answers with an error result); ``trust``: the
    model's ``user_id`` (the negative control)."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = None
    claimed = args.get("user_id") if isinstance(args, dict) else None
    if mode == "trust":
        return Binding(arguments, claimed or session_user, "trusted", claimed)
    if claimed in (None, "", session_user):
        return Binding(arguments, session_user, "bound", claimed)
    if mode == "refuse":
        return Binding(arguments, session_user, "refused", claimed)
    assert isinstance(args, dict)
    args["user_id"] = session_user
    return Binding(json.dumps(args, ensure_ascii=False), session_user, "overridden", claimed)
