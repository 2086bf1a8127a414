"""Which file named by a tool call a person may open with the desktop's default application.

A tool card's *Open File* hands a path to the desktop (``xdg-open``, Finder, Explorer), and that path is model
output, in a session that may come from someone else's repository. The desktop's default application for a launcher
or a program *runs* it, so only a plain document of the session's workspace is opened:

- the path is resolved with the file tools' :class:`~tiny_agent_core.tools.guard.WorkspaceGuard` from the session's
  folder: ``..``, absolute paths elsewhere and links leading out of it give nothing;
- it must be a regular file that nobody may execute (no ``x`` bit), and its name must not end in a launcher's or a
  program's suffix (:data:`LAUNCHER_SUFFIXES`: ``.desktop``, ``.sh``, ``.exe``, ``.jar``, …), which some desktops
  run whatever the mode.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tiny_agent_core.tools.base import ToolError
from tiny_agent_core.tools.guard import WorkspaceGuard

__all__ = ["LAUNCHER_SUFFIXES", "openable_file"]

LAUNCHER_SUFFIXES = frozenset(
    {
        ".app",
        ".appimage",
        ".bat",
        ".bin",
        ".cmd",
        ".com",
        ".command",
        ".cpl",
        ".desktop",
        ".exe",
        ".jar",
        ".js",
        ".jse",
        ".lnk",
        ".msi",
        ".ps1",
        ".py",
        ".pyw",
        ".reg",
        ".run",
        ".scr",
        ".sh",
        ".url",
        ".vbe",
        ".vbs",
        ".wsf",
    }
)
"""Names a desktop may run when asked to open them (compared case-insensitively)."""


def openable_file(workspace: str | os.PathLike[str], requested: str) -> Path | None:
    """The real path of the file ``requested`` names in ``workspace`` when the desktop may open it (see the module
    docstring), else ``None``. Does a few system calls; nothing is read."""
    if not os.path.isdir(workspace):
        return None
    try:
        with WorkspaceGuard(workspace).locate(requested) as located:
            info = located.lstat()
            path = located.path
    except (ToolError, OSError):
        return None
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    if info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        return None
    if path.suffix.lower() in LAUNCHER_SUFFIXES:
        return None
    return path
