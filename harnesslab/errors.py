"""One error tree for harnesslab; every error names the file, line, field or value at fault."""

from __future__ import annotations

from dataclasses import dataclass


class HarnessLabError(Exception):
    """Base of every error harnesslab raises on purpose."""


class InputError(HarnessLabError):
    """Bad input (a file, a scenario, a CLI value, a record): one line, no traceback.

    Rendered as ``file:line: field: problem`` with the parts that are known; the CLI prints it
    and exits with code 2.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [p for p in (where, self.field) if p]
        return ": ".join([*parts, self.problem])


class NotApplicable(HarnessLabError):
    """A scenario needs something of the harness under test that it does not expose (its own
    estimate, for a filler sized up to just below its trigger): the run is reported not
    applicable, apart from the runs that failed."""


class TokenizerUnavailable(HarnessLabError):
    """A tokenizer cannot be loaded: unknown name, missing optional package, or a vocab that
    is missing or fails its sha256 check. The message says what to do, in one line."""


@dataclass(frozen=True)
class OverflowDetail:
    """The numbers of a rejected request, as a real API's 400 would state them."""

    limit_name: str  # "window", "max_input" or "max_output"
    limit: int
    true_input: int
    planned_output: int


class ServiceRejected(HarnessLabError):
    """The simulated service refused a request, as a real API answers 400: a harness catches
    this one base and fails the turn with ``reason`` ("overflow", "protocol_error")."""

    reason = "rejected"


class ContextOverflowError(ServiceRejected):
    """The simulated service rejected a request: a limit of the deployed model was crossed."""

    reason = "overflow"

    def __init__(self, profile: str, detail: OverflowDetail) -> None:
        self.profile = profile
        self.detail = detail
        d = detail
        if d.limit_name == "window":
            what = f"input {d.true_input} + planned output {d.planned_output} = " \
                   f"{d.true_input + d.planned_output} tokens exceeds the window of {d.limit}"
        elif d.limit_name == "max_input":
            what = f"input {d.true_input} tokens exceeds the max input of {d.limit}"
        else:
            what = f"planned output {d.planned_output} tokens exceeds the max output of {d.limit}"
        super().__init__(f"{profile}: context overflow: {what}")


class ProtocolError(ServiceRejected):
    """The simulated service rejected a request that breaks the chat protocol (a tool result
    without its call, a call left without a result when a user message follows, nothing to
    answer); ``problem`` says what, naming the message index and the call id."""

    reason = "protocol_error"

    def __init__(self, profile: str, problem: str) -> None:
        self.profile = profile
        self.problem = problem
        super().__init__(f"{profile}: invalid request: {problem}")
