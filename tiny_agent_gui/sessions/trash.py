"""Deleting a session to the desktop trash, and taking it back out (undo).

A session is its file and its sidecars (:func:`tiny_agent_core.session_meta.companion_files`); each is moved with
``QFile.moveToTrash`` (the freedesktop trash on Linux, the Recycle Bin, the macOS Trash). Where no trash is
available the move fails and nothing is deleted: a session is never unlinked silently. A partly failed move puts
back what it had moved. Restoring moves each file back to where it was and drops the trash's ``.trashinfo`` record;
it refuses to overwrite a file that appeared meanwhile.

These functions block on file I/O: call them off the GUI thread (they use no widgets).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QFile, QStandardPaths

from tiny_agent_core.session_meta import companion_files

__all__ = ["Trashed", "move_to_trash", "restore"]


@dataclass(frozen=True, slots=True)
class Trashed:
    """A session moved to the trash: each file's original path and its path in the trash."""

    session_id: str
    moved: tuple[tuple[Path, Path], ...]


def move_to_trash(session_id: str, session_file: Path) -> Trashed:
    """Move session ``session_id`` (``session_file`` and its sidecars) to the trash.

    Raises ``OSError`` with a message that says what to do when a file cannot go to the trash; then every file
    is where it was.
    """
    if sys.platform.startswith("linux"):
        # Qt makes <data home>/Trash but not the data home itself (~/.local/share), absent on a fresh account.
        data_home = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericDataLocation) or "."
        with contextlib.suppress(OSError):  # then the move fails below and says so
            Path(data_home).mkdir(parents=True, exist_ok=True)
    moved: list[tuple[Path, Path]] = []
    for path in [session_file, *companion_files(session_file)]:
        handle = QFile(str(path))
        if not handle.moveToTrash():
            reason = handle.errorString() or "no trash is available here"
            restore(Trashed(session_id, tuple(moved)))
            raise OSError(
                f"{path.name} could not be moved to the trash ({reason}), so the session was not deleted. "
                f"To delete it anyway, remove its files in {path.parent} yourself."
            )
        moved.append((path, Path(handle.fileName())))
    return Trashed(session_id, tuple(moved))


def _trash_info(trashed: Path) -> Path | None:
    """The freedesktop ``info/<name>.trashinfo`` record of a file in ``…/Trash/files/`` (``None`` elsewhere)."""
    if trashed.parent.name != "files":
        return None
    return trashed.parent.parent / "info" / f"{trashed.name}.trashinfo"


def restore(trashed: Trashed) -> None:
    """Move every file of ``trashed`` back (undo). Raises ``FileExistsError`` when a file is back in its place
    already (nothing is overwritten), ``OSError`` when a move fails."""
    for original, _in_trash in trashed.moved:
        if os.path.lexists(original):
            raise FileExistsError(f"{original} exists again; the trashed copy stays in the trash.")
    for original, in_trash in reversed(trashed.moved):
        try:
            os.rename(in_trash, original)
        except OSError:  # the trash is on another file system
            shutil.move(in_trash, original)
        info = _trash_info(in_trash)
        if info is not None:
            info.unlink(missing_ok=True)
