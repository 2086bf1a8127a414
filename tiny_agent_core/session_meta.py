"""What the user says about a session that its file cannot hold: a title of their own, and whether it is pinned.

The v2 session format has no title or label fact (reference notes §5: exactly the reference's facts, which the
CLIs must keep reading), and rewriting a session's facts to rename it would change its history. So this metadata
lives in a sidecar beside the session file, ``<session file stem>.meta.json`` (like a fork's ``.origin.json``):
``{"version": 1, "title": "<text>" | null, "pinned": true | false}``. It is written atomically (mode 0600) and
read by the index whenever it (re)indexes the session, so it survives an index rebuild.

Rules: a title is whitespace-collapsed and at most :data:`TITLE_MAX` characters; an empty title means "the
session's own title" (its first message). A sidecar saying nothing (no title, not pinned) is removed. A sidecar
that is unreadable, too large or malformed reads as no metadata: it only ever adds to what the file says.

A session is its file and these sidecars together (:func:`companion_files`): moving it (to the trash and back)
moves them all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tiny_agent_core.atomic_files import write_atomically
from tiny_agent_core.small_files import read_small_file

__all__ = [
    "META_MAX_BYTES",
    "META_SUFFIX",
    "TITLE_MAX",
    "SessionMeta",
    "clean_title",
    "companion_files",
    "meta_path",
    "read_meta",
    "write_meta",
]

META_SUFFIX = ".meta.json"
"""The sidecar beside a session file that holds its user metadata."""

TITLE_MAX = 200
"""Longest title a user can give (characters)."""

META_MAX_BYTES = 64 * 1024
"""A larger sidecar is not read (it is not one this app wrote)."""


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """A session's user metadata."""

    title: str | None = None
    """The user's title; ``None`` = the session's own (its first message)."""
    pinned: bool = False
    """Listed in the "Pinned" group, above the dates."""


def clean_title(text: str | None) -> str | None:
    """A title as stored: whitespace collapsed, at most :data:`TITLE_MAX` characters; ``None`` when empty."""
    if text is None:
        return None
    title = " ".join(text.split())[:TITLE_MAX].rstrip()
    return title or None


def meta_path(session_file: Path) -> Path:
    """The metadata sidecar of ``session_file``."""
    return session_file.with_name(session_file.stem + META_SUFFIX)


def read_meta(session_file: Path) -> SessionMeta:
    """The metadata of ``session_file`` (no sidecar, or an unusable one: no metadata)."""
    data = read_small_file(meta_path(session_file), META_MAX_BYTES)
    if data is None:
        return SessionMeta()
    try:
        value = json.loads(data)
        title = value.get("title")
        pinned = value.get("pinned", False)
        if value.get("version") != 1 or not isinstance(title, str | None) or not isinstance(pinned, bool):
            return SessionMeta()
        return SessionMeta(clean_title(title), pinned)
    except (ValueError, AttributeError):
        return SessionMeta()


def write_meta(session_file: Path, meta: SessionMeta) -> SessionMeta:
    """Store ``meta`` for ``session_file`` (its title cleaned, see :func:`clean_title`); returns what was stored.

    Metadata that says nothing removes the sidecar. Raises ``OSError`` when it cannot be written.
    """
    stored = SessionMeta(clean_title(meta.title), meta.pinned)
    target = meta_path(session_file)
    if stored == SessionMeta():
        target.unlink(missing_ok=True)
        return stored
    value = {"version": 1, "title": stored.title, "pinned": stored.pinned}
    write_atomically(target, json.dumps(value, ensure_ascii=False).encode("utf-8"))
    return stored


def companion_files(session_file: Path) -> list[Path]:
    """The files that exist beside ``session_file`` and belong to it: its metadata, origin and copies sidecars and
    its cost side file (:mod:`tiny_agent_core.ledger.sidecar`)."""
    from tiny_agent_core.fork import copies_path, origin_path  # here: the ledger, which imports this module, too
    from tiny_agent_core.ledger.sidecar import sidecar_path

    candidates = (
        meta_path(session_file),
        origin_path(session_file),
        copies_path(session_file),
        sidecar_path(session_file),
    )
    return [path for path in candidates if path.is_file() and not path.is_symlink()]
