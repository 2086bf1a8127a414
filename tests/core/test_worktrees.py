"""Workspace copies for compare runs: git worktrees, bounded plain copies, nothing followed out, the changes."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from tiny_agent_core.tools.guard import PathOutsideWorkspace
from tiny_agent_core.worktrees import (
    CopyLimits,
    KeepConflictError,
    WorkspaceCopyError,
    WorkspaceTooLargeError,
    changes_diff,
    keep_changes,
    make_copy,
    remove_copy,
    workspace_changes,
)


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout


def _repository(folder: Path, files: dict[str, str]) -> Path:
    """A git repository at ``folder`` with ``files`` (relative path → text) in its first commit."""
    folder.mkdir()
    _git(folder, "init", "-q")
    for relative, text in files.items():
        (folder / relative).write_text(text)
    _git(folder, "add", ".")
    _git(folder, "commit", "-qm", "first")
    return folder


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / "node_modules" / "x").mkdir(parents=True)
    (workspace / "node_modules" / "x" / "big.js").write_text("x" * 1000)
    (workspace / ".tiny-agent" / "sessions").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("outside")
    (workspace / "out").symlink_to(tmp_path / "secret.txt")
    (workspace / "up").symlink_to("../secret.txt")
    (workspace / "inside").symlink_to("src/app.py")
    os.mkfifo(workspace / "pipe")
    return workspace


def test_a_plain_copy_skips_heavy_folders_and_never_follows_out(plain: Path, tmp_path: Path) -> None:
    copy = make_copy(plain, tmp_path / "data" / "1")
    assert copy.kind == "copy"
    assert (copy.path / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (copy.path / "node_modules").exists()
    assert not (copy.path / ".tiny-agent").exists()
    assert not (copy.path / "out").exists()
    assert not (copy.path / "up").exists()
    assert os.readlink(copy.path / "inside") == "src/app.py"
    assert not (copy.path / "pipe").exists()
    assert sorted(item.split(" ")[0] for item in copy.skipped) == ["out", "pipe", "up"]

    (copy.path / "src" / "app.py").write_text("print('hello')\n")
    (copy.path / "new.txt").write_text("new\n")
    changes = workspace_changes(copy)
    assert [(c.path, c.status, c.added, c.removed) for c in changes] == [
        ("new.txt", "added", 1, 0),
        ("src/app.py", "modified", 1, 1),
    ]
    patch = changes_diff(changes)
    assert "-print('hi')\n+print('hello')\n" in patch
    assert (plain / "src" / "app.py").read_text() == "print('hi')\n"  # the original is untouched
    remove_copy(copy)
    assert not copy.path.exists()


def test_a_copy_too_large_is_refused_with_the_way_out_and_leaves_nothing(plain: Path, tmp_path: Path) -> None:
    (plain / "data.bin").write_bytes(b"\0" * 5000)
    destination = tmp_path / "data" / "1"
    with pytest.raises(WorkspaceTooLargeError, match="git repository"):
        make_copy(plain, destination, limits=CopyLimits(max_bytes=4000))
    assert not destination.exists()


def test_a_git_workspace_gets_a_worktree_with_its_uncommitted_state(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", {".gitignore": "ignored/\n", "tracked.txt": "v1\n"})
    (repo / "tracked.txt").write_text("v2 uncommitted\n")
    (repo / "untracked.txt").write_text("fresh\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "cache.bin").write_text("junk")
    status_before = _git(repo, "status", "--porcelain")

    copy = make_copy(repo, tmp_path / "data" / "1")
    assert copy.kind == "worktree"
    assert (copy.path / "tracked.txt").read_text() == "v2 uncommitted\n"
    assert (copy.path / "untracked.txt").read_text() == "fresh\n"
    assert not (copy.path / "ignored").exists()
    assert _git(repo, "status", "--porcelain") == status_before  # the original's state is as it was

    (copy.path / "tracked.txt").write_text("v3 by the model\n")
    (copy.path / "untracked.txt").unlink()
    changes = workspace_changes(copy)
    assert [(c.path, c.status) for c in changes] == [("tracked.txt", "modified"), ("untracked.txt", "deleted")]
    assert "-v2 uncommitted\n+v3 by the model\n" in (changes[0].diff or "")
    assert (repo / "tracked.txt").read_text() == "v2 uncommitted\n"

    remove_copy(copy)
    assert not copy.path.exists()
    assert str(copy.path) not in _git(repo, "worktree", "list")


def test_keeping_a_run_applies_its_changes_to_the_original(plain: Path, tmp_path: Path) -> None:
    (plain / "old.txt").write_text("to delete\n")
    copy = make_copy(plain, tmp_path / "data" / "1")
    (copy.path / "src" / "app.py").write_text("print('kept')\n")
    (copy.path / "src" / "new").mkdir()
    (copy.path / "src" / "new" / "mod.py").write_text("x = 1\n")
    (copy.path / "old.txt").unlink()
    keep_changes(copy, workspace_changes(copy))
    assert (plain / "src" / "app.py").read_text() == "print('kept')\n"
    assert (plain / "src" / "new" / "mod.py").read_text() == "x = 1\n"
    assert not (plain / "old.txt").exists()
    assert workspace_changes(copy) != []  # the copy still differs from its own starting tree


def test_keeping_refuses_when_the_original_changed_meanwhile_and_writes_nothing(plain: Path, tmp_path: Path) -> None:
    copy = make_copy(plain, tmp_path / "data" / "1")
    (copy.path / "src" / "app.py").write_text("print('model')\n")
    (copy.path / "added.txt").write_text("model\n")
    (plain / "src" / "app.py").write_text("print('user edit')\n")
    with pytest.raises(KeepConflictError, match=r"src/app\.py"):
        keep_changes(copy, workspace_changes(copy))
    assert (plain / "src" / "app.py").read_text() == "print('user edit')\n"
    assert not (plain / "added.txt").exists()


def test_keeping_never_writes_through_a_symlink_out_of_the_workspace(plain: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    copy = make_copy(plain, tmp_path / "data" / "1")
    (copy.path / "escape").mkdir()
    (copy.path / "escape" / "x.txt").write_text("model\n")
    (plain / "escape").symlink_to(outside)  # swapped in by someone else after the run
    with pytest.raises(PathOutsideWorkspace):
        keep_changes(copy, workspace_changes(copy))
    assert list(outside.iterdir()) == []


def test_keeping_never_reads_through_a_link_or_a_fifo_left_in_the_copy(plain: Path, tmp_path: Path) -> None:
    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY\n")
    copy = make_copy(plain, tmp_path / "data" / "1")
    (copy.path / "keys").mkdir()
    (copy.path / "keys" / "id_rsa").write_text("model\n")
    (copy.path / "pipe.txt").write_text("model\n")
    changes = workspace_changes(copy)  # what the user approved
    (copy.path / "keys" / "id_rsa").unlink()
    (copy.path / "keys").rmdir()
    (copy.path / "keys").symlink_to(secret.parent)  # swapped in after the diff, e.g. by a process left running
    with pytest.raises(WorkspaceCopyError, match="keys/id_rsa of the run's copy cannot be kept"):
        keep_changes(copy, changes)
    assert not (plain / "keys").exists()  # checked before the first write: nothing was applied
    (copy.path / "keys").unlink()
    (copy.path / "keys").mkdir()
    (copy.path / "keys" / "id_rsa").write_text("model\n")
    (copy.path / "pipe.txt").unlink()
    os.mkfifo(copy.path / "pipe.txt")  # reading it would wait for a writer forever
    with pytest.raises(WorkspaceCopyError, match=r"pipe\.txt of the run's copy is not a regular file"):
        keep_changes(copy, changes)
    assert not (plain / "pipe.txt").exists()
    assert not (plain / "keys").exists()


def test_a_workspace_s_git_configuration_runs_no_program_while_it_is_copied(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", {"a.txt": "v1\n"})
    marker = tmp_path / "ran"
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\necho\n")
    monitor.chmod(0o755)
    _git(repo, "config", "core.fsmonitor", str(monitor))  # e.g. a repository unpacked with its .git folder
    (repo / ".git" / "hooks" / "post-checkout").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (repo / ".git" / "hooks" / "post-checkout").chmod(0o755)
    (repo / "a.txt").write_text("v2 uncommitted\n")
    copy = make_copy(repo, tmp_path / "data" / "1")
    assert (copy.path / "a.txt").read_text() == "v2 uncommitted\n"
    workspace_changes(copy)
    remove_copy(copy)
    assert not marker.exists()


def test_a_workspace_s_own_filter_drivers_do_not_run_and_the_user_s_own_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attributes = "*.txt filter=evil\n*.md filter=mine\n"
    repo = _repository(tmp_path / "repo", {".gitattributes": attributes, "a.txt": "v1\n", "b.md": "notes\n"})
    marker = tmp_path / "ran"
    evil = f"sh -c 'touch {marker}; cat'"
    for key in ("clean", "smudge"):
        _git(repo, "config", "--file", ".git/more.config", f"filter.evil.{key}", evil)
    _git(repo, "config", "include.path", "more.config")  # hidden one include away from .git/config
    _git(repo, "config", "filter.evil.required", "true")  # so a switched-off driver must not be fatal
    _git(repo, "config", "filter.evil.process", evil)
    seen = tmp_path / "environment"
    user_config = tmp_path / "gitconfig"  # the user's own configuration is theirs to trust (e.g. Git LFS)
    _git(repo, "config", "--file", str(user_config), "filter.mine.smudge", f"sh -c 'env > {seen}; tr a-z A-Z'")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-reach-git")
    (repo / "a.txt").write_text("v2 uncommitted\n")
    copy = make_copy(repo, tmp_path / "data" / "1")
    assert (copy.path / "a.txt").read_text() == "v2 uncommitted\n"
    assert (copy.path / "b.md").read_text() == "NOTES\n"
    remove_copy(copy)
    assert not marker.exists()
    assert "sk-must-not-reach-git" not in seen.read_text()
    assert "GIT_CONFIG_GLOBAL=" in seen.read_text()


def test_a_filter_name_git_cannot_be_told_to_skip_refuses_the_copy(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", {"a.txt": "v1\n"})
    (repo / ".git" / "config").write_text((repo / ".git" / "config").read_text() + '[filter "a=b"]\n\tsmudge = x\n')
    with pytest.raises(WorkspaceCopyError, match=r"defines a filter named 'a=b'.*remove it from \.git/config"):
        make_copy(repo, tmp_path / "data" / "1")
    assert not (tmp_path / "data" / "1").exists()


@pytest.mark.parametrize("where", ["config.worktree", "includeIf for linked worktrees"])
def test_filters_switched_on_only_for_a_worktree_do_not_run_either(where: str, tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", {".gitattributes": "*.txt filter=evil\n", "a.txt": "v1\n"})
    marker = tmp_path / "ran"
    evil = f"sh -c 'touch {marker}; cat'"
    if where == "config.worktree":
        _git(repo, "config", "extensions.worktreeConfig", "true")
        for key in ("clean", "smudge"):
            _git(repo, "config", "--worktree", f"filter.evil.{key}", evil)
    else:  # read only by git running in a linked worktree, i.e. by the checkout of the copy
        _git(repo, "config", "--file", ".git/evil.config", "filter.evil.smudge", evil)
        _git(repo, "config", "includeIf.gitdir:**/worktrees/**.path", "evil.config")
    copy = make_copy(repo, tmp_path / "data" / "1")
    assert (copy.path / "a.txt").read_text() == "v1\n"
    remove_copy(copy)
    assert not marker.exists()


def test_a_partial_clone_fetches_nothing_through_its_remote_s_programs(tmp_path: Path) -> None:
    source = _repository(tmp_path / "source", {"a.txt": "v1\n"})
    _git(source, "config", "uploadpack.allowFilter", "true")
    repo = tmp_path / "repo"
    _git(tmp_path, "clone", "-q", "--no-local", "--no-checkout", "--filter=blob:none", f"file://{source}", str(repo))
    _git(repo, "read-tree", "HEAD")  # the working tree as if checked out, its blob still missing from the objects
    (repo / "a.txt").write_text("v1\n")
    _git(repo, "update-index", "--refresh")
    marker = tmp_path / "ran"
    _git(repo, "config", "protocol.file.allow", "always")
    _git(repo, "config", "remote.origin.uploadpack", f"sh -c 'touch {marker}; git-upload-pack \"$@\"' -")
    with contextlib.suppress(WorkspaceCopyError):  # the missing file cannot be fetched: no copy, or one without it
        remove_copy(make_copy(repo, tmp_path / "data" / "1"))
    assert not marker.exists()
