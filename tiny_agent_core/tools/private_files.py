"""Private files of the process tools under ``<workspace>/.tiny-agent``: 0700 folders, 0600 files, no symlinks.

The workspace is writable by the commands the tools run, so a command can plant a symlink where the tools keep
their files (``.tiny-agent/tool-output``, ``.tiny-agent/bg``). Folders are therefore opened one component at a
time with ``O_NOFOLLOW``, and files are created and opened relative to the folder's descriptor with
``O_NOFOLLOW``: a planted symlink makes the operation fail instead of leading out of the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "create_private", "open_private_folder", "open_regular"]

FOLDER_MODE = 0o700
"""Mode of the folders the tools create (and of the last one, even if it existed)."""

FILE_MODE = 0o600
"""Mode of the files the tools create (spilled outputs, bg logs and metadata)."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def open_private_folder(workspace: Path, relative: str) -> Iterator[int]:
    """A descriptor of ``workspace/relative``, creating missing folders 0700; a symlinked component raises OSError.

    The last folder is set to 0700 even when it existed, if it is ours.
    """
    descriptor = os.open(workspace, _DIRECTORY)
    try:
        for name in Path(relative).parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, FOLDER_MODE, dir_fd=descriptor)
            child = os.open(name, _DIRECTORY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = child
        info = os.fstat(descriptor)
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != FOLDER_MODE:
            os.fchmod(descriptor, FOLDER_MODE)
        yield descriptor
    finally:
        os.close(descriptor)


def create_private(folder: int, name: str, *, append: bool = False) -> int:
    """A new file ``name`` in ``folder`` (mode 0600, exclusive, write-only); raises FileExistsError if present."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    return os.open(name, flags, FILE_MODE, dir_fd=folder)


def open_regular(folder: int, name: str, flags: int = os.O_RDONLY) -> int:
    """``name`` in ``folder`` opened without following a symlink or blocking (mode 0600 if ``flags`` create it);
    raises OSError unless it is a regular file with a single link (a hard link could lead out of the workspace)."""
    descriptor = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE, dir_fd=folder)
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(descriptor)
        raise OSError(f"{name} is not a regular file of its own")
    return descriptor
