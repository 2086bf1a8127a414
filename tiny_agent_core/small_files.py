"""Reading the small files that sit beside a session file (its metadata, fork, copies and cost sidecars).

They live in the workspace's ``.tiny-agent/`` folder, which a repository you open can fill: a sidecar may be a
symlink to a huge file, a FIFO that blocks whoever opens it, or simply too large. :func:`read_small_file` opens
without following a symlink and without blocking (``O_NOFOLLOW | O_NONBLOCK``), reads only a regular file, and at
most ``limit`` bytes; anything else reads as missing, so a planted sidecar can make the app ignore it, never hang.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["read_at_most", "read_small_file"]


def read_small_file(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` when it has at most ``limit`` of them; ``None`` when it is missing,
    unreadable, a symlink, not a regular file (a FIFO, a device, a folder) or larger."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = read_at_most(fd, limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_at_most(fd: int, limit: int) -> bytes:
    """The next bytes of the open file ``fd``, up to ``limit`` of them (fewer at its end). Raises ``OSError``."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(limit - size, 1 << 24))  # 16 MiB: a session file is most often one read, no copy
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
