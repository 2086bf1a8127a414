"""The guard's descriptor walk: realpath's answers, kernel errors, parents made in place, no leaked descriptors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.tools import EditTool, ReadTool, WorkspaceGuard, WriteTool


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "sub" / "deep").mkdir(parents=True)
    (path / "sub" / "deep" / "f.txt").write_text("deep\n")
    (path / "inside.txt").write_text("inside\n")
    return path


@pytest.mark.parametrize(
    "relative",
    [
        "inside.txt",
        "sub/../inside.txt",
        "sub/deep/../../inside.txt",
        "missing/../inside.txt",
        "sub/deep/",
        ".",
        "sub/deep/new/more/x.txt",
        "sub/./deep//f.txt",
    ],
)
def test_resolve_agrees_with_realpath(workspace: Path, relative: str) -> None:
    (workspace / "hop").symlink_to("sub")
    (workspace / "abs").symlink_to(workspace / "sub" / "deep")
    guard = WorkspaceGuard(workspace)
    for path in (relative, f"hop/{relative}", f"abs/../{relative}"):
        assert guard.resolve(path) == Path(os.path.realpath(workspace / path)), path


async def test_chained_and_absolute_symlinks_inside_are_followed(workspace: Path) -> None:
    (workspace / "a").symlink_to("b")
    (workspace / "b").symlink_to("sub/")
    (workspace / "c").symlink_to(workspace / "a" / "deep" / "f.txt")
    outcome = await ReadTool(WorkspaceGuard(workspace)).execute({"path": "c"})
    assert outcome.content == "deep"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("loop/x", "Error: Too many levels of symbolic links: loop/x"),
        ("inside.txt/x", "Error: Not a directory: inside.txt/x"),
        ("sub/nope/x.txt", "Error: No such file or directory: sub/nope/x.txt"),
    ],
)
async def test_walk_errors_name_the_requested_path(workspace: Path, path: str, message: str) -> None:
    (workspace / "loop").symlink_to("loop")
    outcome = await ReadTool(WorkspaceGuard(workspace)).execute({"path": path})
    assert outcome.content == message


async def test_write_makes_parents_only_where_the_path_ends(workspace: Path) -> None:
    guard = WorkspaceGuard(workspace)
    outcome = await WriteTool(guard).execute({"path": "gone/../made/x.txt", "content": "x"})
    assert not outcome.is_error, outcome.content
    assert (workspace / "made" / "x.txt").read_text() == "x"
    assert not (workspace / "gone").exists()  # `..` undid it before anything was made, as realpath does


async def test_temporary_files_are_made_in_the_real_directory(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "alias").symlink_to("sub/deep")
    seen: list[tuple[str, str]] = []
    replace = os.replace

    def spy(source: str, target: str, **kwargs: Any) -> None:
        seen.append((os.readlink(f"/proc/self/fd/{kwargs['src_dir_fd']}"), source))
        replace(source, target, **kwargs)

    monkeypatch.setattr(os, "replace", spy)
    guard = WorkspaceGuard(workspace)
    await WriteTool(guard).execute({"path": "alias/f.txt", "content": "w\n"})
    await EditTool(guard).execute({"path": "alias/f.txt", "edits": [{"oldText": "w", "newText": "e"}]})
    assert [directory for directory, _ in seen] == [str(workspace / "sub" / "deep")] * 2
    assert all(name.startswith(".f.txt.") and name.endswith(".tmp") for _, name in seen)
    assert (workspace / "sub" / "deep" / "f.txt").read_text() == "e\n"
    assert (workspace / "alias").is_symlink()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_no_descriptor_is_leaked(workspace: Path, tmp_path: Path) -> None:
    (workspace / "out").symlink_to(tmp_path)
    (workspace / "loop").symlink_to("loop")
    guard = WorkspaceGuard(workspace)
    tools = [ReadTool(guard), WriteTool(guard), EditTool(guard)]
    paths = ["inside.txt", "sub/deep/f.txt", "new/dir/x.txt", "out/x", "loop/x", "inside.txt/x", "sub", "../x"]
    calls = [(tool, path) for tool in tools for path in paths]
    before = open_descriptors()
    for tool, path in calls:
        args = {"path": path, "content": "inside\n", "edits": [{"oldText": "inside", "newText": "inside"}]}
        await tool.execute(args)
        tool.preview(args)
    assert open_descriptors() == before
