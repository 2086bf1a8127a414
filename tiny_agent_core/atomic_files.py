"""Writing a whole file so that a reader sees the old content or the new one, never a part.

:func:`write_atomically` writes a temporary file beside the target (mode 0600 unless told, never following a
symlink), flushes it to disk, then puts it in place: ``os.replace`` when the target may be overwritten, else a
hard link, which fails when the target exists (file systems without hard links fall back to a rename after a
check, which a concurrent writer could race — the only window). On any failure the temporary file is removed and
the target is as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(target: Path, data: bytes, *, overwrite: bool = True, mode: int = 0o600) -> None:
    """Write ``data`` to ``target`` atomically. With ``overwrite=False`` an existing ``target`` raises
    ``FileExistsError`` and is left untouched. Raises ``OSError`` (the folder must exist)."""
    temporary = target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temporary, target)
            return
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (FAT, exFAT, some network shares)
            if os.path.lexists(target):
                raise FileExistsError(f"{target} exists") from None
            os.rename(temporary, target)
            return
        os.unlink(temporary)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
