"""Writing the commands' output: one-line messages, and stdout that its reader closed early (``| head``)."""

from __future__ import annotations

import contextlib
import os
import sys


def one_line(text: object) -> str:
    """``str(text)`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def discard_stdout() -> None:
    """After the reader closed stdout: point it at the null device, so later writes and the flush at exit are quiet."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
