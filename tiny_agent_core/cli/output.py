"""Writing the commands' output: one-line messages, the JSON error line, and stdout that its reader closed early
(``| head``)."""

from __future__ import annotations

import contextlib
import json
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


def fail(kind: str, error: BaseException) -> int:
    """Print ``{"error": {"kind", "message"}}`` as one stderr line and return the failure exit status, 2."""
    print(json.dumps({"error": {"kind": kind, "message": one_line(error)}}, ensure_ascii=False), file=sys.stderr)
    return 2
