"""Symlink-swap races: another process flips a directory, or the final name, between a real one inside the
workspace and a symlink to an outside folder while read, write and edit run. Nothing outside may be read,
written, or left with a temporary file; the tools may fail meanwhile, and must still work."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tiny_agent_core.tools import EditTool, ReadTool, WorkspaceGuard, WriteTool

ROUNDS = 300


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange() -> Callable[[Path, Path], None]:
    """``renameat2(RENAME_EXCHANGE)``: swaps two names atomically, so the flipped name is never missing."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        pytest.skip("no renameat2 in this C library")

    def exchange(first: Path, second: Path) -> None:
        if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(first))

    return exchange


class Flipper:
    """A thread that keeps swapping ``place`` with a symlink to ``elsewhere``, atomically."""

    def __init__(self, place: Path, elsewhere: Path) -> None:
        self.place = place
        self.link = place.with_name(f".{place.name}.link")
        self.link.symlink_to(elsewhere)
        self.flips = 0
        self.error: OSError | None = None
        self._exchange = _exchange()
        try:
            self._exchange(self.place, self.link)
            self._exchange(self.place, self.link)
        except OSError as error:
            pytest.skip(f"the file system cannot exchange names: {error}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._exchange(self.place, self.link)
                self.flips += 1
        except OSError as error:
            self.error = error

    def __enter__(self) -> Flipper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive()
        assert self.error is None
        if self.place.is_symlink():
            self._exchange(self.place, self.link)


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "d").mkdir(parents=True)
    outside.mkdir()
    (workspace / "d" / "f.txt").write_text("inside\n")
    (workspace / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("secret\n")
    yield workspace, outside
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]  # nothing created or left outside
    assert (outside / "f.txt").read_text() == "secret\n"
    assert not [p.name for p in workspace.rglob("*.tmp")]  # failed writes cleaned up


@pytest.mark.slow
@pytest.mark.parametrize("flipped", ["d", "f.txt"])
async def test_swapping_a_directory_or_the_final_name_never_reaches_outside(
    layout: tuple[Path, Path], flipped: str
) -> None:
    workspace, outside = layout
    guard = WorkspaceGuard(workspace)
    read, write, edit = ReadTool(guard), WriteTool(guard), EditTool(guard)
    path = "d/f.txt" if flipped == "d" else "f.txt"
    elsewhere = outside if flipped == "d" else outside / "f.txt"
    succeeded = 0
    with Flipper(workspace / flipped, elsewhere) as flipper:
        for _ in range(ROUNDS):
            seen = await read.execute({"path": path})
            assert "secret" not in seen.content
            written = await write.execute({"path": path, "content": "inside\n"})
            edited = await edit.execute({"path": path, "edits": [{"oldText": "inside", "newText": "INSIDE"}]})
            succeeded += sum(not outcome.is_error for outcome in (seen, written, edited))
            assert (outside / "f.txt").read_text() == "secret\n"
    assert flipper.flips > 0
    assert succeeded > 0  # the race was exercised, not every call refused up front
    assert (workspace / path).read_text() in ("inside\n", "INSIDE\n")
