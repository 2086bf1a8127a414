"""Workspace containment of read, write and edit: `..`, absolute and symlink escapes are refused."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.tools import (
    EditTool,
    PathOutsideWorkspace,
    ReadTool,
    ToolError,
    WorkspaceGuard,
    WriteTool,
    builtin_tools,
)


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


# -- tiny-agent's own state is not writable through the file tools -------------------------------------------------


@pytest.fixture
def app_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The app's config and data folders, moved into tmp_path (and created)."""
    config = tmp_path / "config"
    data = tmp_path / "data"
    config.mkdir()
    data.mkdir()
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(config))
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(data))
    return config, data


def write_args(tool_name: str, path: str) -> dict[str, Any]:
    if tool_name == "write":
        return {"path": path, "content": "forged\n"}
    return {"path": path, "edits": [{"oldText": "original", "newText": "forged"}]}


async def assert_refused(workspace: Path, path: str, target: Path, *, roots: tuple[Path, ...] = ()) -> str:
    """Both write and edit refuse ``path`` and leave ``target`` (which has ``original`` in it, or is absent) alone."""
    before = target.read_bytes() if target.is_file() else target.exists()
    messages = []
    for tool_name in ("write", "edit"):
        outcome = await tools(workspace, roots)[tool_name].execute(write_args(tool_name, path))
        assert outcome.is_error, (tool_name, path, outcome.content)
        assert outcome.content.startswith(f"Error: Path {path} is inside "), outcome.content
        assert outcome.content.endswith("; file tools may not change it.")
        messages.append(outcome.content)
        assert (target.read_bytes() if target.is_file() else target.exists()) == before
    assert messages[0] == messages[1]
    return messages[0]


@pytest.mark.parametrize(
    "relative", ["bg/4242.json", "bg/4242.log", "tool-output/x.log", "settings.json", "new/deeper/file.txt"]
)
async def test_the_tiny_agent_folder_is_protected(
    tmp_path: Path, app_folders: tuple[Path, Path], relative: str
) -> None:
    workspace = tmp_path / "ws"
    target = workspace / ".tiny-agent" / relative
    target.parent.mkdir(parents=True)
    if not relative.startswith("new/"):
        target.write_text("original\n")
    message = await assert_refused(workspace, f".tiny-agent/{relative}", target)
    assert "the tiny-agent folder" in message
    assert "only .tiny-agent/skills may be changed" in message
    assert not (workspace / ".tiny-agent" / "new" / "deeper" / "file.txt").exists()


async def test_the_tiny_agent_folder_itself_and_before_it_exists(
    tmp_path: Path, app_folders: tuple[Path, Path]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    await assert_refused(workspace, ".tiny-agent", workspace / ".tiny-agent")
    await assert_refused(workspace, ".tiny-agent/bg/1.json", workspace / ".tiny-agent" / "bg" / "1.json")
    await assert_refused(workspace, str(workspace / ".tiny-agent" / "x"), workspace / ".tiny-agent" / "x")
    await assert_refused(workspace, "sub/../.tiny-agent/x", workspace / ".tiny-agent" / "x")
    assert not (workspace / ".tiny-agent").exists()


async def test_the_tiny_agent_folder_of_every_allowed_root(tmp_path: Path, app_folders: tuple[Path, Path]) -> None:
    workspace = tmp_path / "ws"
    other = tmp_path / "other"
    workspace.mkdir()
    (other / ".tiny-agent" / "sessions").mkdir(parents=True)
    target = other / ".tiny-agent" / "sessions" / "s.jsonl"
    target.write_text("original\n")
    message = await assert_refused(workspace, str(target), target, roots=(other,))
    assert "session folder" in message
    await assert_refused(
        workspace, "../other/.tiny-agent/bg/1.json", other / ".tiny-agent" / "bg" / "1.json", roots=(other,)
    )


@pytest.mark.parametrize("tool_name", ["write", "edit"])
async def test_skills_stay_writable(tmp_path: Path, app_folders: tuple[Path, Path], tool_name: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    t = tools(workspace)
    fresh = await t["write"].execute({"path": ".tiny-agent/skills/x/SKILL.md", "content": "original\n"})
    assert not fresh.is_error, fresh.content  # .tiny-agent and skills did not exist yet
    skill = workspace / ".tiny-agent" / "skills" / "x" / "SKILL.md"
    assert skill.read_text() == "original\n"
    outcome = await t[tool_name].execute(write_args(tool_name, ".tiny-agent/skills/x/SKILL.md"))
    assert not outcome.is_error, outcome.content
    assert skill.read_text() == "forged\n"
    nested = await t["write"].execute({"path": str(skill.parent / "notes" / "a.md"), "content": "x"})
    assert not nested.is_error, nested.content


async def test_a_skills_symlink_does_not_open_the_rest(tmp_path: Path, app_folders: tuple[Path, Path]) -> None:
    workspace = tmp_path / "ws"
    bg = workspace / ".tiny-agent" / "bg"
    bg.mkdir(parents=True)
    (bg / "1.json").write_text("original\n")
    (workspace / ".tiny-agent" / "skills").symlink_to(bg)
    await assert_refused(workspace, ".tiny-agent/skills/1.json", bg / "1.json")


async def test_the_config_folder_is_protected(tmp_path: Path, app_folders: tuple[Path, Path]) -> None:
    config, _ = app_folders
    permissions = config / "tool-permissions.json"
    permissions.write_text("original\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    message = await assert_refused(workspace, str(permissions), permissions, roots=(tmp_path,))
    assert f"the tiny-agent configuration folder {config}" in message
    await assert_refused(workspace, "../config/settings.json", config / "settings.json", roots=(tmp_path,))
    await assert_refused(workspace, str(config), config, roots=(tmp_path,))


async def test_a_workspace_that_contains_the_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "tiny-agent-desktop"
    config.mkdir(parents=True)
    (config / "tool-permissions.json").write_text("original\n")
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(config))
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(home / ".local" / "share" / "tiny-agent-desktop"))
    await assert_refused(home, ".config/tiny-agent-desktop/tool-permissions.json", config / "tool-permissions.json")
    await assert_refused(home, ".local/share/tiny-agent-desktop/index.sqlite3", home / ".local" / "share" / "x")
    ok = await tools(home)["write"].execute({"path": ".config/other-app/x.json", "content": "{}"})
    assert not ok.is_error, ok.content


async def test_the_data_folder_is_protected_but_a_workspace_inside_it_is_not(
    tmp_path: Path, app_folders: tuple[Path, Path]
) -> None:
    _, data = app_folders
    database = data / "index.sqlite3"
    database.write_text("original\n")
    workspace = data / "workspace"  # the default workspace lives in the data folder
    workspace.mkdir()
    message = await assert_refused(workspace, "../index.sqlite3", database, roots=(data,))
    assert f"the tiny-agent data folder {data}" in message
    await assert_refused(workspace, str(data / "new.txt"), data / "new.txt", roots=(data,))
    t = tools(workspace, (data,))
    for path in ("notes.txt", str(workspace / "src" / "main.py")):
        outcome = await t["write"].execute({"path": path, "content": "x"})
        assert not outcome.is_error, outcome.content
    await assert_refused(workspace, ".tiny-agent/sessions/s.jsonl", workspace / ".tiny-agent" / "sessions" / "s.jsonl")


def test_another_name_for_a_protected_folder_is_caught_by_identity(
    tmp_path: Path, app_folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second path to the same directory that no real-path comparison can relate to ``.tiny-agent``: what a bind
    mount gives, or ``.TINY-AGENT`` on a case-insensitive file system. Simulated by making ``os.stat`` see
    ``ws/alias`` as ``ws/.tiny-agent`` (as the kernel would for a bind mount); no realpath spelling changes."""
    workspace = tmp_path / "ws"
    state = workspace / ".tiny-agent"
    (state / "bg").mkdir(parents=True)
    (state / "skills").mkdir()
    alias = workspace / "alias"
    alias.mkdir()
    guard = WorkspaceGuard(workspace)
    assert guard.resolve_writable("alias/bg/1.json") == Path(os.path.realpath(alias / "bg" / "1.json"))

    real_stat = os.stat
    mounted, source = str(os.path.realpath(alias)), str(os.path.realpath(state))

    def bind_mounted_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        text = os.fspath(path)
        if isinstance(text, str) and (text == mounted or text.startswith(mounted + os.sep)):
            text = source + text[len(mounted) :]
        return real_stat(text, *args, **kwargs)

    monkeypatch.setattr(os, "stat", bind_mounted_stat)
    for path in ("alias/bg/1.json", "alias/new.json", "alias", str(alias / "sessions" / "s.jsonl")):
        with pytest.raises(ToolError, match=r"is inside the tiny-agent folder .*; file tools may not change it"):
            guard.resolve_writable(path)
    # the skills exception is found by identity as well
    assert guard.resolve_writable("alias/skills/x/SKILL.md") == Path(os.path.realpath(alias / "skills/x/SKILL.md"))


async def test_a_symlink_to_a_protected_folder_is_refused(tmp_path: Path, app_folders: tuple[Path, Path]) -> None:
    config, _ = app_folders
    workspace = tmp_path / "ws"
    (workspace / ".tiny-agent" / "bg").mkdir(parents=True)
    (workspace / "state").symlink_to(workspace / ".tiny-agent")
    (workspace / "settings").symlink_to(config)
    await assert_refused(workspace, "state/bg/1.json", workspace / ".tiny-agent" / "bg" / "1.json")
    await assert_refused(workspace, "settings/tool-permissions.json", config / "tool-permissions.json", roots=(config,))


async def test_a_case_variant_is_refused_even_before_the_folder_exists(
    tmp_path: Path, app_folders: tuple[Path, Path]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    await assert_refused(workspace, ".TINY-AGENT/bg/1.json", workspace / ".TINY-AGENT" / "bg" / "1.json")
    await assert_refused(
        workspace, str(tmp_path / "CONFIG" / "x.json"), tmp_path / "CONFIG" / "x.json", roots=(tmp_path,)
    )
