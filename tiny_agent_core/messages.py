"""Canonical transcript messages: the exact shapes of reference notes §1.2, immutable and strictly validated.

These are the only message objects the rest of the core (sessions, the agent loop, the window) sees. Provider
wire shapes never reach here except through the normalization seam (:mod:`tiny_agent_core.seam`).

``as_dict()`` gives the exact-key JSON form the session files and the provider requests use: an assistant
message always carries ``content`` (``null`` allowed) and carries ``tool_calls`` only when there are calls.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, StringConstraints, TypeAdapter, model_validator

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class FunctionCall(BaseModel):
    """The function part of a tool call: a name and the model's argument text (JSON, not parsed here)."""

    model_config = _STRICT

    name: NonEmptyStr
    """The tool name the model asked for."""
    arguments: str
    """The arguments exactly as the model wrote them; parsed per call by the agent loop."""


class ToolCall(BaseModel):
    """One call in an assistant message: ``{id, type: "function", function: {name, arguments}}``."""

    model_config = _STRICT

    id: NonEmptyStr
    """The provider's call id; answered by the tool message with the same ``tool_call_id``."""
    type: Literal["function"] = "function"
    """Always ``"function"``."""
    function: FunctionCall
    """What to call and with which arguments."""

    def as_dict(self) -> dict[str, Any]:
        """The exact-key JSON form."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.function.name, "arguments": self.function.arguments},
        }


class SystemMessage(BaseModel):
    """The per-request system prompt. Built for each request and never persisted."""

    model_config = _STRICT

    role: Literal["system"] = "system"
    content: str

    def as_dict(self) -> dict[str, Any]:
        """The exact-key JSON form."""
        return {"role": "system", "content": self.content}


class UserMessage(BaseModel):
    """A user turn: non-empty text."""

    model_config = _STRICT

    role: Literal["user"] = "user"
    content: NonEmptyStr

    def as_dict(self) -> dict[str, Any]:
        """The exact-key JSON form."""
        return {"role": "user", "content": self.content}


class AssistantMessage(BaseModel):
    """A model turn: text (possibly empty or null) and optionally a non-empty list of tool calls."""

    model_config = _STRICT

    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: Annotated[tuple[ToolCall, ...], Strict(False)] | None = None
    """``None`` when the model called no tool; never an empty tuple."""

    @model_validator(mode="after")
    def _calls_non_empty_and_unique(self) -> AssistantMessage:
        if self.tool_calls is not None:
            if not self.tool_calls:
                raise ValueError("tool_calls must be non-empty when present")
            ids = [call.id for call in self.tool_calls]
            if len(set(ids)) != len(ids):
                raise ValueError("tool call ids must be unique within one assistant message")
        return self

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls, empty when there are none."""
        return self.tool_calls or ()

    def as_dict(self) -> dict[str, Any]:
        """The exact-key JSON form (``tool_calls`` only when present)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls is not None:
            out["tool_calls"] = [call.as_dict() for call in self.tool_calls]
        return out


class ToolMessage(BaseModel):
    """The result of one tool call, bound to it by ``tool_call_id``."""

    model_config = _STRICT

    role: Literal["tool"] = "tool"
    content: str
    tool_call_id: NonEmptyStr

    def as_dict(self) -> dict[str, Any]:
        """The exact-key JSON form."""
        return {"role": "tool", "content": self.content, "tool_call_id": self.tool_call_id}


Message = Annotated[UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]
"""A persisted transcript message (system messages are never persisted)."""

MessageAdapter: TypeAdapter[UserMessage | AssistantMessage | ToolMessage] = TypeAdapter(Message)
"""Validates a persisted message from its JSON form (exact keys, no coercion)."""


def message_from_dict(value: Any) -> UserMessage | AssistantMessage | ToolMessage:
    """Validate a persisted message dict (raises ``pydantic.ValidationError`` on any deviation)."""
    return MessageAdapter.validate_python(value)
