"""A tool card's Open File hands a model-named path to the desktop, which runs programs and launchers: only a plain
document of the session's workspace may go there."""

from __future__ import annotations

import os
from pathlib import Path

from tiny_agent_core.openable import openable_file


def test_a_plain_document_of_the_workspace_opens(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.md").write_text("# notes\n")
    assert openable_file(tmp_path, "src/notes.md") == (tmp_path / "src" / "notes.md").resolve()
    assert openable_file(str(tmp_path), str(tmp_path / "src" / "notes.md")) is not None  # absolute, but inside
    (tmp_path / "link.md").symlink_to("src/notes.md")  # a link that stays inside leads to its target
    assert openable_file(tmp_path, "link.md") == (tmp_path / "src" / "notes.md").resolve()


def test_paths_leading_out_of_the_workspace_do_not_open(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (workspace / "out.txt").symlink_to(outside)
    for requested in ("../secret.txt", str(outside), "out.txt", "missing.txt", ".", "/etc/passwd"):
        assert openable_file(workspace, requested) is None, requested
    assert openable_file(tmp_path / "not-here", "x.txt") is None  # a session written on another machine


def test_programs_launchers_and_special_files_do_not_open(tmp_path: Path) -> None:
    for name in ("run.desktop", "setup.SH", "tool.exe", "app.jar", "script.py", "evil.AppImage"):
        (tmp_path / name).write_text("[Desktop Entry]\nExec=rm -rf ~\n")
        assert openable_file(tmp_path, name) is None, name
    program = tmp_path / "build"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert openable_file(tmp_path, "build") is None  # executable, whatever its name
    os.mkfifo(tmp_path / "pipe.txt")
    assert openable_file(tmp_path, "pipe.txt") is None
    (tmp_path / "folder.txt").mkdir()
    assert openable_file(tmp_path, "folder.txt") is None
