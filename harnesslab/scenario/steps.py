"""Session steps of a scenario: what happens to the harness instances between user turns
(issue 9). The runner (``bench.instances``) carries them out; checks and metrics read the
``resume``, ``session`` and ``instances`` events they leave in the record.

- ``restart``: the current session's instances are replaced by fresh ones on the same session
  (and workdir), as a service restart or a redeploy does.
- ``new_session``: a new session opens with its own fresh instance and becomes current: for
  the same user (a user who comes back tomorrow) or, with ``user``, a second verified user,
  whose turns can then be interleaved with ``switch``. Sessions share the world and the
  workdir (the harness's stores).
- ``switch``: the following user turns go to an open session again.
- ``instances``: the current session is served by this many instances in turn (a load
  balancer): each user turn goes to the next one.
- ``kill``: the current session's next user turn is killed before its ``at_call``-th model call
  (a process killed mid-turn); a fresh instance takes over. That turn is lost, and the record
  says so.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The keys that tell one kind of session step from another (beside user, advance, filler).
SESSION_KEYS = ("restart", "new_session", "switch", "instances", "kill")
FIDELITY = "resume_fidelity"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RestartSpec(_Strict):
    fidelity: bool = Field(default=True, description="Check (s<step>.resume_fidelity) that the "
                           "fresh instance's state, once restored, equals the old instance's "
                           "state before the restart")


class _SpecStep(_Strict):
    """A step whose key holds a mapping of options: ``- restart:`` and ``- restart: true``
    read as "with the defaults"."""

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: {} if k in cls.model_fields and v in (None, True) else v
                    for k, v in data.items()}
        return data


class RestartStep(_SpecStep):
    restart: RestartSpec = Field(description="Restart: fresh instance(s), same session")


class NewSessionSpec(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="The new "
                    "session's id")
    user: str | None = Field(default=None, description="Its verified user; null: the current "
                             "session's user (a new session for the same user)")


class NewSessionStep(_Strict):
    new_session: NewSessionSpec = Field(description="Open a session with a fresh instance; "
                                        "the following user turns go to it")


class SwitchStep(_Strict):
    switch: str = Field(description="The id of an open session; the following user turns go "
                        "to it")


class InstancesStep(_Strict):
    instances: int = Field(ge=1, le=8, description="Serve the current session with this many "
                           "instances, each user turn by the next one (alternate turns)")


class KillSpec(_Strict):
    at_call: int = Field(default=1, ge=1, description="Kill the instance before this model "
                         "call of the turn (1: before the first)")
    fidelity: bool = Field(default=True, description="Check (s<step>.resume_fidelity) that the "
                           "instance taking over holds the state of the last finished turn")


class KillStep(_SpecStep):
    kill: KillSpec = Field(description="Kill the current session's instance during its next "
                           "user turn; a fresh instance takes over, the turn is lost")


SessionStep = RestartStep | NewSessionStep | SwitchStep | InstancesStep | KillStep


def step_checks(step: Any) -> list[str]:
    """The check kinds a session step adds (named s<step>.<kind>)."""
    if isinstance(step, RestartStep | KillStep):
        spec = step.restart if isinstance(step, RestartStep) else step.kill
        return [FIDELITY] if spec.fidelity else []
    return []


def needs_workdir(steps: list[Any]) -> bool:
    """Whether a scenario's instances must share a store: any restart, other session, other
    instance or kill."""
    return any(isinstance(s, SessionStep) for s in steps)


def session_errors(steps: list[Any], users: set[str], first: str,
                   user_step: type) -> list[tuple[tuple[int | str, ...], str]]:
    """Problems in the order of the steps: a switch to a session not open, a session opened
    twice, an unknown user, a kill that no user turn follows."""
    errs: list[tuple[tuple[int | str, ...], str]] = []
    open_ids = {first}
    for i, step in enumerate(steps):
        if isinstance(step, NewSessionStep):
            spec = step.new_session
            if spec.id in open_ids:
                errs.append((("steps", i, "new_session", "id"),
                             f"session {spec.id!r} is already open; switch to it instead"))
            if spec.user is not None and spec.user not in users:
                errs.append((("steps", i, "new_session", "user"),
                             f"unknown user {spec.user!r}; expected one of "
                             f"{', '.join(sorted(users))}"))
            open_ids.add(spec.id)
        elif isinstance(step, SwitchStep) and step.switch not in open_ids:
            errs.append((("steps", i, "switch"), f"no open session {step.switch!r}; expected "
                         f"one of {', '.join(sorted(open_ids))}"))
        elif isinstance(step, KillStep):
            later = steps[i + 1:]
            nxt = next((s for s in later if isinstance(s, user_step | SessionStep)), None)
            if not isinstance(nxt, user_step):
                errs.append((("steps", i, "kill"), "a kill applies to the next user turn of "
                             "the session; put a user step right after it"))
    return errs
