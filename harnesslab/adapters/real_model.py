"""A real model under the harness: ``model=openai-compatible`` with ``model.base_url`` and
``model.model`` (the API key from the environment variable ``model.api_key_env``, default
``OPENAI_API_KEY``; the ``openai`` extra).

The simulated service still admits and bills each request (the service profile says which
limits to enforce), then the request goes to the real endpoint in OpenAI's form
(``adapters.openai_wire``) and its answer comes back as the reply's blocks. A real model has no
annotations (what it resolved, which constraints it saw, which fact it cited), so the checks
that need them are reported not applicable (``bench.checks.ANNOTATION_CHECKS``); everything
visible in the answer, the requests and the tool calls is checked as for the fake model.

Its replies depend on the real model, not on the seed alone: such a run is evidence about that
model, and is not reproducible byte for byte (the header says which model answered).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harnesslab.errors import ContextOverflowError, InputError, OverflowDetail, ServiceRejected
from harnesslab.messages import Block, Request, TextBlock, ToolCallBlock

OPENAI_EXTRA = "pip install 'harnesslab[openai]'"
FAKE = "fake"
OPENAI_COMPATIBLE = "openai-compatible"


class ModelSpec(BaseModel):
    """Which model answers: the fake model (default) or an OpenAI-compatible endpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["fake", "openai-compatible"] = Field(
        default="fake", description="fake: the bench's fake model; openai-compatible: a real "
        "model behind an OpenAI Chat Completions endpoint")
    base_url: str | None = Field(default=None, description="The endpoint's base URL, e.g. "
                                 "http://127.0.0.1:8765/v1")
    model: str | None = Field(default=None, description="The model name sent with each request")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="The environment variable "
                             "holding the API key (the key itself is never recorded)")
    timeout: float = Field(default=120.0, gt=0, description="Seconds per request")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sent when set")

    @model_validator(mode="after")
    def _complete(self) -> ModelSpec:
        if self.kind == OPENAI_COMPATIBLE:
            if not self.base_url:
                raise ValueError("model=openai-compatible needs model.base_url")
            if not self.model:
                raise ValueError("model=openai-compatible needs model.model (the model name)")
        return self

    @property
    def real(self) -> bool:
        return self.kind != FAKE

    def header(self) -> dict[str, Any]:
        """What the record says about the model (never the key)."""
        return self.model_dump(mode="json", exclude={"timeout"})


def model_layer(key: str, value: Any, spec: dict[str, Any]) -> None:
    """Apply one setting (``model`` or ``model.<field>``) to ``spec``: a string names the kind,
    a mapping replaces the fields."""
    if key == "model":
        if isinstance(value, str):
            spec["kind"] = value
        elif isinstance(value, Mapping):
            spec.clear()
            spec.update(value)
        else:
            raise InputError("expected fake, openai-compatible or a mapping", field=key)
    else:
        spec[key.split(".", 1)[1]] = value


class EndpointOverflow(ContextOverflowError):
    """The real endpoint answered 400 ``context_length_exceeded``: its limits are its own, so
    the numbers are what the simulated service counted (``sim.endpoint`` records them) and the
    message is the endpoint's."""

    def __init__(self, where: str, message: str) -> None:
        ServiceRejected.__init__(self, f"{where}: context overflow: {message}")
        self.profile = where
        self.detail = OverflowDetail("endpoint", 0, 0, 0)


@dataclass(frozen=True)
class RealReply:
    blocks: tuple[Block, ...]
    annotations: Mapping[str, Any]


def openai_client(base_url: str, api_key_env: str, timeout: float) -> Any:
    """The official SDK's client; the exact install line when the extra is missing."""
    try:
        import openai
    except ImportError:
        raise InputError(f"model=openai-compatible needs the openai package: {OPENAI_EXTRA}",
                         field="model") from None
    key = os.environ.get(api_key_env)
    if not key:
        raise InputError(f"set the environment variable {api_key_env} to the API key",
                         field="model.api_key_env")
    # No retries: a failed call is a failed turn with its reason, as the harness would see it.
    return openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)


def reply_blocks(message: Any) -> tuple[Block, ...]:
    """The blocks of an SDK ``ChatCompletionMessage``: its text, then its tool calls."""
    blocks: list[Block] = []
    if message.content:
        blocks.append(TextBlock(message.content))
    for c in message.tool_calls or ():
        blocks.append(ToolCallBlock(c.id, c.function.name, c.function.arguments or ""))
    return tuple(blocks)


class OpenAICompatibleModel:
    """The endpoint's model in the fake model's place (``sim.endpoint.ModelLike``)."""

    def __init__(self, spec: ModelSpec, profile: str = "") -> None:
        assert spec.base_url and spec.model
        self.spec = spec
        self.profile = profile
        self.client = openai_client(spec.base_url, spec.api_key_env, spec.timeout)

    def reply(self, request: Request) -> RealReply:
        import openai

        from harnesslab.adapters.openai_wire import request_to_openai

        body = request_to_openai(request, model=self.spec.model or "")
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        try:
            resp = self.client.chat.completions.create(**body)
        except openai.BadRequestError as e:
            if getattr(e, "code", None) == "context_length_exceeded":
                # The real window said no: the harness sees the overflow a real API gives it.
                raise EndpointOverflow(f"{self.spec.model} at {self.spec.base_url}",
                                       str(e.message)) from None
            raise
        choice = resp.choices[0]
        usage = resp.usage
        return RealReply(reply_blocks(choice.message), {
            "model": self.spec.model, "finish_reason": choice.finish_reason,
            "api_usage": {"prompt_tokens": usage.prompt_tokens,
                          "completion_tokens": usage.completion_tokens} if usage else None})
