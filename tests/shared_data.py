"""Access to ../shared (reference fixtures, recorded wire cases). Tests that need it skip when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"

ABSENT_REASON = "../shared is not present beside the project (a plain clone); reference data tests skipped"


def shared_path(*parts: str) -> Path:
    """A path inside ../shared; skips the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(ABSENT_REASON)
    return path


def shared_files(folder: str, pattern: str) -> list[Path]:
    """Files of a ../shared folder for parametrization; empty when ../shared is absent."""
    base = SHARED / folder
    return sorted(base.glob(pattern)) if base.is_dir() else []
