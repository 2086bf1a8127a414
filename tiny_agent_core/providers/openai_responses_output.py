"""OpenAI Responses output items: a response's ``output`` list, item by item, → the assistant message the seam
validates.

:class:`OutputItems` is shared by both paths of :mod:`~tiny_agent_core.providers.openai_responses`: a complete JSON
body applies each finished item, a stream adds each item when it starts and then its pieces. A response is a list of
output items. ``message`` items give the text (``output_text`` parts) and refusals (``refusal`` parts: a refusal
with no text and no call is a :class:`~tiny_agent_core.errors.ContentFilteredError`); ``function_call`` items give
the tool calls, whose canonical ``id`` is the ``call_id``; ``reasoning`` items are kept out of the canonical
transcript and listed in ``dropped``. Any other item type (a built-in tool call this client never offers) is
malformed: fail closed. Provider-only keys that carried a value are listed in ``dropped`` too. A finished item (or
a ``.done`` event) must agree with the pieces streamed before it.

The dialect repairs ``message_items_joined`` (with :data:`MESSAGE_SEPARATOR`), ``missing_call_id`` and
``empty_arguments`` are applied here (see :data:`~tiny_agent_core.providers.openai_responses.REPAIRS`). The message
is held to :class:`~tiny_agent_core.providers.results.Limits` as it grows, and the number of output items to
:data:`MAX_OUTPUT_ITEMS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tiny_agent_core.errors import MalformedResponseError, ResponseTooLargeError
from tiny_agent_core.providers.results import (
    IdFactory,
    Limits,
    Notes,
    Pieces,
    arguments_too_large,
    message_too_large,
    too_many_calls,
    utf8_size,
)

MAX_OUTPUT_ITEMS = 1024
"""The most output items (messages, calls, reasoning) one response may have: a real one has a handful."""

MESSAGE_SEPARATOR = "\n\n"
"""What joins the texts of several ``message`` items (``message_items_joined``)."""


def _has_value(value: Any) -> bool:
    return value is not None and value != [] and value != {} and value != ""


_MESSAGE_KEYS = frozenset({"type", "id", "status", "role", "content"})
_PART_KEYS = frozenset({"type", "text", "refusal", "annotations", "logprobs"})
_CALL_KEYS = frozenset({"type", "id", "status", "call_id", "name", "arguments"})


@dataclass
class CallItem:
    """One ``function_call`` output item as it accumulates."""

    ordinal: int
    """Its position among the response's calls (the canonical ``tool_calls`` index, the deltas' ``index``)."""
    call_id: str | None = None
    name: str | None = None
    arguments: Pieces = field(default_factory=Pieces)
    final: str | None = None
    """The complete arguments from a ``.done`` event or the finished item, when one said them."""


@dataclass
class MessageItem:
    """One ``message`` output item as it accumulates."""

    index: int
    """Its ``output_index``."""
    text: Pieces = field(default_factory=Pieces)
    refusal: Pieces = field(default_factory=Pieces)
    final: str | None = None


OutputItem = CallItem | MessageItem | None
"""An output item: a call, a message, or ``None`` for a reasoning item (kept out of the transcript)."""


class OutputItems:
    """The output items of one response in ``output_index`` order, held to the limits as they grow."""

    def __init__(self, notes: Notes, limits: Limits, new_id: IdFactory) -> None:
        self.notes = notes
        self.limits = limits
        self.new_id = new_id
        self.items: dict[int, OutputItem] = {}
        self.ids: dict[str, int] = {}
        self.calls = 0
        self.size = 0

    def grow(self, size: int) -> None:
        """Count ``size`` more bytes of the message; raises once it is larger than the limit."""
        self.size += size
        if self.size > self.limits.message_bytes:
            raise message_too_large(self.limits)

    def add(self, index: int, item: Any) -> OutputItem:
        """Register output item ``index`` (its ``output_item.added`` form, or the finished item)."""
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise MalformedResponseError(f"Output item {index} is not an object with a type.")
        kind = item["type"]
        if isinstance(item.get("id"), str):
            self.ids[item["id"]] = index
        if index in self.items:
            return self.items[index]
        if len(self.items) >= MAX_OUTPUT_ITEMS:
            raise ResponseTooLargeError(
                f"The response has more than {MAX_OUTPUT_ITEMS} output items (the limit), so it was refused. The "
                "server is misbehaving; retry.",
                limit=MAX_OUTPUT_ITEMS,
            )
        entry: OutputItem
        if kind == "message":
            if item.get("role", "assistant") != "assistant":
                raise MalformedResponseError("invalid assistant message role")
            self._drop(item, _MESSAGE_KEYS, "output.message.")
            entry = MessageItem(index)
        elif kind == "function_call":
            if self.calls >= self.limits.tool_calls:
                raise too_many_calls(self.limits)
            self._drop(item, _CALL_KEYS, "output.function_call.")
            entry = CallItem(self.calls, call_id=text_or_none(item.get("call_id")), name=text_or_none(item.get("name")))
            self.calls += 1
        elif kind == "reasoning":
            self.notes.dropped.setdefault("output.reasoning", None)
            entry = None
        else:
            raise MalformedResponseError(
                f"The response has an output item of type {kind!r}, which this client never asks for and cannot "
                "answer (only messages and function calls are accepted)."
            )
        self.items[index] = entry
        return entry

    def _drop(self, value: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
        for key, item in value.items():
            if key not in allowed and _has_value(item):
                self.notes.dropped.setdefault(f"{prefix}{key}", None)

    def add_text(self, message: MessageItem, text: str, *, refusal: bool = False) -> None:
        """Append a piece of ``message``'s text (or of its refusal)."""
        self.grow((message.refusal if refusal else message.text).add(text))

    def add_arguments(self, call: CallItem, piece: str) -> None:
        """Append a piece of ``call``'s arguments; raises once they are larger than the limit."""
        self.grow(call.arguments.add(piece))
        if call.arguments.size > self.limits.tool_call_argument_bytes:
            raise arguments_too_large(self.limits)

    def finish_item(self, index: int, item: Any) -> None:
        """Apply a finished item (``output_item.done`` or an item of a complete body) to entry ``index``."""
        entry = self.add(index, item)
        if isinstance(entry, CallItem):
            entry.call_id = entry.call_id or text_or_none(item.get("call_id"))
            entry.name = entry.name or text_or_none(item.get("name"))
            arguments = item.get("arguments")
            if arguments is not None:
                self.final_arguments(entry, arguments)
        elif isinstance(entry, MessageItem):
            self._finish_message(entry, item.get("content"))

    def final_arguments(self, call: CallItem, arguments: Any) -> None:
        """The complete arguments of ``call``: they must agree with the streamed pieces, if any arrived."""
        if not isinstance(arguments, str):
            raise MalformedResponseError("invalid assistant tool call function")
        if call.arguments.count == 0 and call.final is None:
            self.add_arguments(call, arguments)
        elif (call.final if call.final is not None else call.arguments.text()) != arguments:
            raise MalformedResponseError("The finished tool call's arguments differ from the streamed ones.")
        call.final = arguments

    def _finish_message(self, message: MessageItem, content: Any) -> None:
        if content is None:
            return
        if not isinstance(content, list):
            raise MalformedResponseError("invalid assistant content")
        texts: list[str] = []
        refusals: list[str] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "output_text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                refusals.append(part["refusal"])
            else:
                raise MalformedResponseError(f"invalid assistant content: unsupported content part {kind!r}")
            self._drop(part, _PART_KEYS, f"output.message.content.{kind}.")
        text = "".join(texts)
        if message.text.count == 0 and message.final is None:
            self.add_text(message, text)
            if refusals and message.refusal.count == 0:
                self.add_text(message, "".join(refusals), refusal=True)
        elif (message.final if message.final is not None else message.text.text()) != text:
            raise MalformedResponseError("The finished message's text differs from the streamed text.")
        message.final = text

    def assistant_message(self) -> dict[str, Any]:
        """The assistant message in the seam's input form (``role``, ``content``, ``tool_calls``, ``refusal``)."""
        texts: list[str] = []
        refusals: list[str] = []
        for index in sorted(self.items):
            entry = self.items[index]
            if isinstance(entry, MessageItem):
                if entry.text.count:
                    texts.append(entry.text.text())
                if entry.refusal.count:
                    refusals.append(entry.refusal.text())
        calls = [self._call_json(entry) for entry in self.items.values() if isinstance(entry, CallItem)]
        texts = [text for text in texts if text]
        if len(texts) > 1:
            self.notes.repair("message_items_joined")
            self.grow(utf8_size(MESSAGE_SEPARATOR) * (len(texts) - 1))
        message: dict[str, Any] = {"role": "assistant", "content": MESSAGE_SEPARATOR.join(texts) or None}
        if calls:
            message["tool_calls"] = calls
        if refusals:
            message["refusal"] = "".join(refusals)
        return message

    def _call_json(self, call: CallItem) -> dict[str, Any]:
        call_id = call.call_id
        if not call_id:
            call_id = call.call_id = self.new_id()
            self.notes.repair("missing_call_id")
        arguments = call.final if call.final is not None else call.arguments.text()
        if arguments == "":
            arguments = "{}"
            self.notes.repair("empty_arguments")
        function: dict[str, Any] = {"arguments": arguments}
        if call.name is not None:
            function["name"] = call.name
        return {"id": call_id, "type": "function", "function": function}


def text_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string (an id, a name, a model), else ``None``."""
    return value if isinstance(value, str) and value else None
