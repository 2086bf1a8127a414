"""What every tool is: the :class:`Tool` protocol, :class:`ToolOutcome`, and the shared argument guards.

A tool is one object that carries its model-facing definition (``name``, ``description``, ``parameters`` as a
JSON Schema object), its replay declaration (``replay`` and ``replay_key``, reference notes §5.10) and its
implementation, so definition and behaviour cannot drift apart (reference notes §6.8).

``execute(args, *, cancel=None)`` always *returns* for a settled execution:

- a normal result is ``ToolOutcome(content, is_error=False)`` (result type ``success``), even when the text
  reports a failure such as a non-zero exit of ``bash``;
- an error raised inside the tool becomes ``ToolOutcome("Error: <message>", is_error=True)`` (result type
  ``error``), exactly as the reference turns a thrown error into tool content (notes §6.1).

It *raises* only when the execution was cut short, so its effects are unknown and the caller records the
``interrupted`` synthetic result instead of an outcome:

- :class:`asyncio.CancelledError` when the task running it is cancelled (re-raised after clean-up, e.g. after
  ``bash`` killed its process group);
- :class:`ToolAborted` when the ``cancel`` event passed in was set before or during the execution.

JSON Schema describes a tool to the model; it is not a runtime guard. Model arguments are untrusted, so every
built-in checks each field with the guards below, whose messages are the reference's (notes §6.1).
"""

from __future__ import annotations

import asyncio
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from tiny_agent_core.errors import ToolAborted, ToolError

__all__ = [
    "MAX_TOOL_OUTPUT",
    "TOOL_OUTPUT",
    "BuiltinTool",
    "Preview",
    "Replay",
    "Tool",
    "ToolAborted",
    "ToolError",
    "ToolOutcome",
    "js_number",
    "optional_positive_integer",
    "required_string",
]

_log = logging.getLogger(__name__)

TOOL_OUTPUT: ContextVar[Callable[[str], None] | None] = ContextVar("tool_output", default=None)
"""Where a running tool reports its output as it is produced (``bash`` does; set by the agent around each
execution so a view can show live output). The final, bounded result is still the tool's outcome."""

MAX_TOOL_OUTPUT = 50 * 1024
"""The byte budget of one tool result shown to the model (``read`` pages and ``bash`` tails): 50 KiB."""

MAX_TOOL_LINES = 2_000
"""The line budget of one tool result shown to the model."""

Replay = Literal["safe", "never"]
"""Whether a started-but-unfinished call may be executed again during recovery (notes §5.10)."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The settled result of one tool execution, as the session records it."""

    content: str
    """The text the model sees."""
    is_error: bool = False
    """``True`` when the tool raised: the content is ``Error: <message>`` and the result type is ``error``."""

    @property
    def result_type(self) -> Literal["success", "error"]:
        """The session record's ``result.type``."""
        return "error" if self.is_error else "success"

    @classmethod
    def error(cls, message: str) -> ToolOutcome:
        """The outcome of a tool that raised ``message``: content ``Error: <message>``."""
        return cls(f"Error: {message}", is_error=True)


@dataclass(frozen=True, slots=True)
class Preview:
    """What an approval prompt shows for a call before it runs."""

    kind: Literal["diff", "command", "arguments"]
    """``diff`` (a unified diff of a file change), ``command`` (a shell command) or ``arguments`` (JSON)."""
    text: str
    """The preview itself; may be empty (a write that changes nothing)."""
    error: str | None = None
    """Why a full preview could not be made (e.g. the edit would fail); the call may still be approved."""
    target: str | None = None
    """The real path a file change would reach, when it is not the path the call names (a symlink on the way)."""
    warnings: tuple[str, ...] = ()
    """What makes the change riskier than it looks: the target is executable, or version-control internals."""


@runtime_checkable
class Tool(Protocol):
    """A tool the agent loop can offer to the model and execute."""

    @property
    def name(self) -> str:
        """The unique function name the model calls."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The JSON Schema object of the arguments."""
        ...

    @property
    def replay(self) -> Replay:
        """The tool's own replay claim. Only the built-in ``read`` is honoured as ``safe`` (registry)."""
        ...

    @property
    def replay_key(self) -> str | None:
        """A stable key for the replay declaration; ``None`` means ``tool:<name>:v1``."""
        ...

    async def execute(self, args: Mapping[str, Any], *, cancel: asyncio.Event | None = None) -> ToolOutcome:
        """Run the call. Returns the outcome; raises only ``CancelledError`` or :class:`ToolAborted`."""
        ...


@runtime_checkable
class HoldsSecrets(Protocol):
    """A tool that was given secrets of its own (an MCP server's token): the agent masks them like the API key."""

    @property
    def secrets(self) -> Sequence[str]:
        """The values to mask in tool output, errors and everything persisted or sent."""
        ...


def tool_secrets(tools: Iterable[object]) -> list[str]:
    """Every secret the ``tools`` hold (see :class:`HoldsSecrets`)."""
    return [secret for tool in tools if isinstance(tool, HoldsSecrets) for secret in tool.secrets]


class BuiltinTool(ABC):
    """Base of the built-ins: fixed definition attributes, the error-to-outcome rule, the cancel check."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    replay: Replay = "never"
    replay_key: str | None = None

    async def execute(self, args: Mapping[str, Any], *, cancel: asyncio.Event | None = None) -> ToolOutcome:
        """Run :meth:`run`; a raised error becomes an error outcome, cancellation propagates."""
        check_cancel(cancel)
        try:
            if not isinstance(args, Mapping):
                raise ToolError("arguments must be an object")
            content = await self.run(args, cancel)
        except (ToolAborted, asyncio.CancelledError):
            raise
        except ToolError as error:
            return ToolOutcome.error(str(error))
        except OSError as error:
            return ToolOutcome.error(describe_os_error(error))
        except Exception as error:  # the reference turns any thrown error into tool content
            _log.debug("tool %s raised", self.name, exc_info=True)
            return ToolOutcome.error(str(error) or error.__class__.__name__)
        check_cancel(cancel)
        return ToolOutcome(content)

    @abstractmethod
    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        """The tool's work: return the content, or raise :class:`ToolError` with the model-facing message."""

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        """A preview for an approval prompt (blocking I/O allowed; called in a worker thread)."""
        return None


def check_cancel(cancel: asyncio.Event | None) -> None:
    """Raise :class:`ToolAborted` when the cancel event is set."""
    if cancel is not None and cancel.is_set():
        raise ToolAborted()


def describe_os_error(error: OSError) -> str:
    """A short sentence for a file-system error: ``<strerror>: <path>`` without errno noise."""
    reason = error.strerror or error.__class__.__name__
    if error.filename is not None:
        return f"{reason}: {error.filename}"
    return reason


def required_string(value: object, name: str) -> str:
    """``value`` as a nonempty string, else ``<name> must be a nonempty string``."""
    if not isinstance(value, str) or not value:
        raise ToolError(f"{name} must be a nonempty string")
    return value


def optional_positive_integer(value: object, name: str) -> int | None:
    """``None`` when absent, else an integer >= 1 (``<name> must be an integer >= 1``).

    An integral float such as ``2.0`` is accepted, as JSON (and the reference's ``Number.isInteger``) does.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"{name} must be an integer >= 1")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ToolError(f"{name} must be an integer >= 1")
    if value < 1:
        raise ToolError(f"{name} must be an integer >= 1")
    return int(value)


def js_number(value: float) -> str:
    """A number formatted as JavaScript's ``String(n)`` does for ordinary values (``120``, ``0.05``, ``1.5``)."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa.removesuffix('.0')}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text
