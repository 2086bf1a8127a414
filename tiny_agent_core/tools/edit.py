"""The built-in ``edit`` tool (reference notes §6.4): exact, all-or-nothing replacements in a UTF-8 file.

Every ``oldText`` (CRLF normalised to LF) must occur exactly once in the *original* file, the matched ranges
must not overlap, ``newText`` takes the file's first line ending, and a UTF-8 byte order mark is kept. CRLF is
normalised only for matching: a position map keeps every other byte of the file as it was. All edits are
validated before anything is written; the file is then replaced once, atomically (unlike the reference), with
its mode kept, and only inside the workspace: it is read through the descriptor the guard opened (``O_NOFOLLOW``)
and replaced in the same held directory. Files over :data:`MAX_EDIT_FILE` and anything but a regular file (a
FIFO, socket or device) are refused before they are read.

:func:`apply_edits` is the pure part, also used to build the approval diff.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tiny_agent_core.tools.base import BuiltinTool, Preview, ToolError, required_string
from tiny_agent_core.tools.guard import WorkspaceGuard
from tiny_agent_core.tools.read import read_whole
from tiny_agent_core.tools.write import atomic_write, diff_preview

__all__ = ["MAX_EDIT_FILE", "Edit", "EditTool", "apply_edits", "required_edits"]

MAX_EDIT_FILE = 10 * 1024 * 1024
"""The largest file ``edit`` changes: 10 MiB. Source files are far smaller (a 10 MiB file is ~250,000 lines); the
bound keeps an edit of a huge log or data file from holding several copies of it in memory. Larger files are
refused before they are read; ``bash`` (``sed``, a script) can still change them."""

_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Edit:
    """One replacement block."""

    old_text: str
    new_text: str


def required_edits(value: object) -> list[Edit]:
    """The ``edits`` argument checked field by field, with the reference's messages."""
    if not isinstance(value, list) or not value:
        raise ToolError("edits must be a nonempty array")
    edits = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ToolError(f"edits[{index}] must be an object")
        old_text, new_text = item.get("oldText"), item.get("newText")
        if not isinstance(old_text, str):
            raise ToolError(f"edits[{index}].oldText must be a string")
        if not old_text:
            raise ToolError(f"edits[{index}].oldText must not be empty")
        if not isinstance(new_text, str):
            raise ToolError(f"edits[{index}].newText must be a string")
        edits.append(Edit(old_text, new_text))
    return edits


def apply_edits(original: str, edits: Sequence[Edit], requested: str) -> str:
    """The file text after ``edits``; raises :class:`ToolError` with the reference's message when one fails."""
    bom = original.startswith(_BOM)
    text = original[1:] if bom else original
    first_newline = text.find("\n")
    ending = "\r\n" if first_newline > 0 and text[first_newline - 1] == "\r" else "\n"

    # CRLF is matched as LF; an index into the normalized text maps back through the CRLFs before it
    normalized = text.replace("\r\n", "\n")
    crlf_at: list[int] = []  # normalized index of the LF that stands for each CRLF
    found = text.find("\r\n")
    while found >= 0:
        crlf_at.append(found - len(crlf_at))
        found = text.find("\r\n", found + 2)

    def original_index(index: int) -> int:
        return index + bisect.bisect_left(crlf_at, index)

    ranges: list[tuple[int, int, int, str]] = []  # (start, end, index, replacement) in original positions
    for index, edit in enumerate(edits):
        old_text = edit.old_text.replace("\r\n", "\n")
        if not old_text:
            raise ToolError(f"edits[{index}].oldText must not be empty")
        start = normalized.find(old_text)
        if start < 0:
            raise ToolError(f"edits[{index}].oldText was not found in {requested}.")
        if normalized.find(old_text, start + 1) >= 0:
            raise ToolError(f"edits[{index}].oldText occurs more than once in {requested}; add more context.")
        replacement = edit.new_text.replace("\r\n", "\n").replace("\n", ending)
        ranges.append((original_index(start), original_index(start + len(old_text)), index, replacement))

    ordered = sorted(ranges, key=lambda item: item[0])
    for previous, current in itertools.pairwise(ordered):
        if current[0] < previous[1]:
            raise ToolError(f"edits[{previous[2]}] and edits[{current[2]}] overlap in {requested}.")

    pieces: list[str] = []
    cursor = 0
    for start, end, _, replacement in ordered:
        pieces.append(text[cursor:start])
        pieces.append(replacement)
        cursor = end
    pieces.append(text[cursor:])
    return (_BOM if bom else "") + "".join(pieces)


def _decode(data: bytes, requested: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{requested} is not valid UTF-8 text.") from None


class EditTool(BuiltinTool):
    """``edit(path, edits: [{oldText, newText}])``."""

    name = "edit"
    replay_key = "builtin:edit:v1"
    description = (
        "Make precise replacements in an existing UTF-8 text file. Every oldText must match exactly once in the "
        "original file, and edits must not overlap. All edits are validated before writing."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the existing UTF-8 text file."},
            "edits": {
                "type": "array",
                "minItems": 1,
                "description": "Non-overlapping replacements, all matched against the original file.",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {
                            "type": "string",
                            "minLength": 1,
                            "description": "Exact text that must occur exactly once in the original file.",
                        },
                        "newText": {"type": "string", "description": "Replacement text."},
                    },
                    "required": ["oldText", "newText"],
                },
            },
        },
        "required": ["path", "edits"],
    }

    def __init__(self, guard: WorkspaceGuard) -> None:
        self.guard = guard

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        """Apply the ``edits`` (each ``oldText`` must occur exactly once) to the file and say how many."""
        requested = required_string(args.get("path"), "path")
        edits = required_edits(args.get("edits"))
        await asyncio.to_thread(self._edit, requested, edits)
        return f"Successfully replaced {len(edits)} block(s) in {requested}."

    def _edit(self, requested: str, edits: Sequence[Edit]) -> None:
        with self.guard.locate(requested, writable=True) as target:
            original = _decode(read_whole(target, MAX_EDIT_FILE, "edit"), requested)
            atomic_write(target, apply_edits(original, edits, requested).encode("utf-8"))

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        """The edit as a diff, for the approval dialog (``None`` when it cannot be computed)."""
        try:
            requested = required_string(args.get("path"), "path")
            edits = required_edits(args.get("edits"))
        except ToolError as error:
            return Preview("diff", "", error=str(error))

        def change(before: str | None) -> str:
            if before is None:
                raise ToolError(f"{requested} does not exist")
            return apply_edits(before, edits, requested)

        return diff_preview(self.guard, requested, change)
