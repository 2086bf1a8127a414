"""Workspace containment of read, write and edit: `..`, absolute and symlink escapes are refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.tools import EditTool, PathOutsideWorkspace, ReadTool, WorkspaceGuard, WriteTool, builtin_tools


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a sibling folder outside it, each with a file."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "inside.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("secret\n")
    return workspace, outside


def tools(workspace: Path, roots: tuple[Path, ...] = ()) -> dict[str, Any]:
    return {tool.name: tool for tool in builtin_tools(workspace, allowed_roots=roots)}


def call_args(name: str, path: str) -> dict[str, Any]:
    if name == "read":
        return {"path": path}
    if name == "write":
        return {"path": path, "content": "pwned\n"}
    return {"path": path, "edits": [{"oldText": "secret", "newText": "pwned"}]}


ESCAPES = ["dotdot", "absolute", "symlinked_file", "symlinked_dir", "dotdot_after_symlink"]


def escape_path(kind: str, workspace: Path, outside: Path) -> str:
    if kind == "dotdot":
        return "../outside/secret.txt"
    if kind == "absolute":
        return str(outside / "secret.txt")
    if kind == "symlinked_file":
        (workspace / "link.txt").symlink_to(outside / "secret.txt")
        return "link.txt"
    if kind == "symlinked_dir":
        (workspace / "door").symlink_to(outside)
        return "door/secret.txt"
    (workspace / "sub").mkdir()
    (workspace / "sub" / "up").symlink_to(outside)
    return "sub/up/../secret.txt"  # `..` applies after the symlink is resolved: still outside


@pytest.mark.parametrize("tool_name", ["read", "write", "edit"])
@pytest.mark.parametrize("kind", ESCAPES)
async def test_escape_is_refused(tool_name: str, kind: str, layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    path = escape_path(kind, workspace, outside)
    outcome = await tools(workspace)[tool_name].execute(call_args(tool_name, path))
    assert outcome.is_error
    assert outcome.content.startswith(f"Error: Path {path} ")
    assert "file tools are limited to the workspace" in outcome.content
    if kind.startswith("symlinked"):
        assert "through a symlink" in outcome.content
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("tool_name", ["write", "edit"])
async def test_new_file_through_dangling_symlink_is_refused(tool_name: str, layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "dangling").symlink_to(outside / "new.txt")
    (workspace / "newdir").symlink_to(outside / "not-yet")
    for path in ("dangling", "newdir/file.txt"):
        outcome = await tools(workspace)[tool_name].execute(call_args(tool_name, path))
        assert outcome.is_error, path
        assert "outside the workspace" in outcome.content
    assert not (outside / "new.txt").exists()
    assert not (outside / "not-yet").exists()


async def test_write_does_not_create_directories_outside(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    outcome = await tools(workspace)["write"].execute({"path": "../outside/a/b/c.txt", "content": "x"})
    assert outcome.is_error
    assert not (outside / "a").exists()


async def test_symlink_inside_the_workspace_is_followed(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / "alias.txt").symlink_to(workspace / "inside.txt")
    read = await tools(workspace)["read"].execute({"path": "alias.txt"})
    assert read.content == "inside"
    write = await tools(workspace)["write"].execute({"path": "alias.txt", "content": "new\n"})
    assert write.content == "Successfully wrote 4 bytes to alias.txt."
    assert (workspace / "alias.txt").is_symlink()  # written through, the link itself kept
    assert (workspace / "inside.txt").read_text() == "new\n"


async def test_dotdot_that_stays_inside_and_absolute_inside_are_fine(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    (workspace / "sub").mkdir()
    t = tools(workspace)
    assert (await t["read"].execute({"path": "sub/../inside.txt"})).content == "inside"
    assert (await t["read"].execute({"path": str(workspace / "inside.txt")})).content == "inside"


async def test_workspace_given_through_a_symlink(layout: tuple[Path, Path], tmp_path: Path) -> None:
    workspace, _ = layout
    alias = tmp_path / "ws-alias"
    alias.symlink_to(workspace)
    t = tools(alias)
    assert (await t["read"].execute({"path": str(alias / "inside.txt")})).content == "inside"
    assert (await t["read"].execute({"path": "inside.txt"})).content == "inside"


@pytest.mark.parametrize("tool_name", ["read", "write", "edit"])
async def test_widened_roots_allow_outside_paths(tool_name: str, layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    (workspace / "door").symlink_to(outside)
    t = tools(workspace, roots=(outside,))
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), "door/secret.txt"):
        (outside / "secret.txt").write_text("secret\n")
        outcome = await t[tool_name].execute(call_args(tool_name, path))
        assert not outcome.is_error, outcome.content
    assert (outside / "secret.txt").read_text() == ("secret\n" if tool_name == "read" else "pwned\n")


async def test_widening_does_not_open_everything(layout: tuple[Path, Path], tmp_path: Path) -> None:
    workspace, outside = layout
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("x")
    outcome = await tools(workspace, roots=(outside,))["read"].execute({"path": str(elsewhere)})
    assert outcome.is_error
    assert "the allowed roots" in outcome.content


def test_guard_reports_requested_and_resolved(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    guard = WorkspaceGuard(workspace)
    with pytest.raises(PathOutsideWorkspace) as caught:
        guard.resolve("../outside/secret.txt")
    assert caught.value.requested == "../outside/secret.txt"
    assert caught.value.resolved == Path(os.path.realpath(outside / "secret.txt"))
    assert guard.resolve(".") == guard.workspace
    assert guard.workspace == Path(os.path.realpath(workspace))


def test_guard_refuses_nul(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    with pytest.raises(Exception, match="NUL"):
        WorkspaceGuard(workspace).resolve("a\0b")


async def test_file_tools_refuse_directly(layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    guard = WorkspaceGuard(workspace)
    for tool in (ReadTool(guard), WriteTool(guard), EditTool(guard)):
        outcome = await tool.execute(call_args(tool.name, str(outside / "secret.txt")))
        assert outcome.is_error


@pytest.mark.parametrize("tool_name", ["write", "edit"])
async def test_file_tools_may_not_change_session_files(tmp_path: Path, tool_name: str) -> None:
    sessions = tmp_path / ".tiny-agent" / "sessions"
    sessions.mkdir(parents=True)
    target = sessions / "s.jsonl"
    target.write_text('{"kind":"header"}\n')
    tool = {t.name: t for t in builtin_tools(tmp_path)}[tool_name]
    args = (
        {"path": ".tiny-agent/sessions/s.jsonl", "content": "x"}
        if tool_name == "write"
        else {"path": ".tiny-agent/sessions/s.jsonl", "edits": [{"oldText": "header", "newText": "x"}]}
    )
    outcome = await tool.execute(args)
    assert outcome.is_error
    assert "session folder" in outcome.content
    assert target.read_text() == '{"kind":"header"}\n'
