"""Saved comparisons: a compare run is saved, listed and reopened; keep and discard remove the copies, and a
comparison whose copies are gone still reopens with every run's figures, diff and session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer, Reply
from tests.scripted_models import ScriptedModels, answer, tool_call
from tiny_agent_core.compare import CompareRun, Contender
from tiny_agent_core.comparisons import (
    MAX_SAVED_DIFF_CHARS,
    ComparisonError,
    discard_copies,
    keep_run,
    list_comparisons,
    load_comparison,
)
from tiny_agent_core.ledger import connect, get_session, known_workspaces, scan_workspace
from tiny_agent_core.ledger.costs import cost_total
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session import reduce_session
from tiny_agent_core.worktrees import KeepConflictError


def _edit(call_id: str, new: str) -> Reply:
    return tool_call(call_id, "edit", {"path": "greet.py", "edits": [{"oldText": "hi", "newText": new}]})


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture(params=["copy", "worktree"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text("print('hi')\n")
    if request.param == "worktree":
        _git(workspace, "init", "-q")
        _git(workspace, "add", ".")
        _git(workspace, "commit", "-q", "-m", "start")
    return workspace


async def _compare(workspace: Path, folder: Path, ledger: sqlite3.Connection | None = None) -> CompareRun:
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-a": [_edit("a1", "hello"), answer("hello it is")],
                "model-b": [_edit("b1", "hey"), answer("hey it is")],
            }
        )
        profile = custom_profile(server.base_url, name="Loop")
        async with ProviderClient() as client:
            run = CompareRun(
                workspace,
                "greet better",
                [Contender(profile, "model-a"), Contender(profile, "model-b")],
                folder=folder,
                client=client,
                ledger=ledger,
            )
            await run.run()
    return run


async def test_a_compare_is_saved_and_reopens_with_the_same_figures(workspace: Path, tmp_path: Path) -> None:
    folder = tmp_path / "compare"
    run = await _compare(workspace, folder)
    (listed,) = list_comparisons(folder)
    assert listed.id == run.id
    assert listed.title == "greet better"
    assert listed.workspace == workspace
    assert listed.allowed == ("read", "write", "edit")
    assert listed.ended_at is not None
    assert listed.ended_at >= listed.started_at
    for saved, live in zip(listed.reports, run.reports, strict=True):
        assert saved.contender.label == live.contender.label == f"Loop · {live.contender.model}"
        assert (saved.status, saved.session_path, saved.session_id) == (live.status, live.session_path, live.session_id)
        assert (saved.requests, saved.steps, saved.tools, saved.usage) == (live.requests, 2, live.tools, live.usage)
        assert (saved.cost, saved.cost_sources, saved.answer) == (live.cost, {"local"}, live.answer)
        assert saved.wall_ms == live.wall_ms
        assert saved.changes == live.changes
        assert saved.copy is not None
        assert live.copy is not None
        assert saved.copy.path == live.copy.path
        assert saved.copy.manifest == {"greet.py": live.copy.manifest["greet.py"]}  # only what the run changed


async def test_discarding_removes_the_copies_and_keeps_the_sessions(workspace: Path, tmp_path: Path) -> None:
    with contextlib.closing(connect()) as ledger:  # the app's index, as the window's compare runs record into it
        run = await _compare(workspace, tmp_path / "compare", ledger)
        assert cost_total(ledger).requests == 4
    copies = [report.copy.path for report in run.reports if report.copy is not None]
    discard_copies(load_comparison(run.folder))
    assert not any(path.exists() for path in copies)
    if (workspace / ".git").exists():
        assert _git(workspace, "worktree", "list").count("\n") == 1  # git forgot the worktrees too
    assert (workspace / "greet.py").read_text() == "print('hi')\n"
    reopened = load_comparison(run.folder)
    assert reopened.copies_removed
    assert reopened.kept is None
    for report in reopened.reports:
        assert report.copy is None
        assert report.session_path is not None
        assert report.session_path.is_relative_to(run.folder)
        assert reduce_session(report.session_path.read_bytes()).operation.kind == "idle"
        assert "+print('h" in (report.changes[0].diff or "")  # the diff is still there
    with contextlib.closing(connect()) as ledger:  # the sessions were indexed at their new place
        for workspace_folder in known_workspaces(ledger):  # what the session list's rescan does
            scan_workspace(ledger, workspace_folder)
        assert cost_total(ledger).requests == 4  # the runs' costs stay in the history
        for report in reopened.reports:
            assert report.session_id is not None
            summary = get_session(ledger, report.session_id)
            assert summary is not None
            assert summary.path == report.session_path
    with pytest.raises(ComparisonError, match="copies of this comparison were removed"):
        keep_run(reopened, 0)


async def test_keeping_one_applies_its_changes_then_removes_every_copy(workspace: Path, tmp_path: Path) -> None:
    run = await _compare(workspace, tmp_path / "compare")
    comparison = load_comparison(run.folder)
    keep_run(comparison, 1)
    assert (workspace / "greet.py").read_text() == "print('hey')\n"
    reopened = load_comparison(run.folder)
    assert reopened.kept == 1
    assert reopened.copies_removed
    assert all(report.copy is None for report in reopened.reports)
    assert not (tmp_path / "compare" / run.id / "1-model-a").exists()


async def test_keep_refuses_when_the_workspace_changed_and_keeps_the_copies(workspace: Path, tmp_path: Path) -> None:
    run = await _compare(workspace, tmp_path / "compare")
    (workspace / "greet.py").write_text("print('changed meanwhile')\n")
    comparison = load_comparison(run.folder)
    with pytest.raises(KeepConflictError):
        keep_run(comparison, 0)
    assert (workspace / "greet.py").read_text() == "print('changed meanwhile')\n"
    assert all(report.copy is not None and report.copy.path.exists() for report in comparison.reports)
    assert load_comparison(run.folder).kept is None


def test_a_damaged_record_is_left_out_of_the_list_and_named_when_opened(tmp_path: Path) -> None:
    folder = tmp_path / "compare"
    (folder / "broken").mkdir(parents=True)
    (folder / "broken" / "comparison.json").write_text('{"version": 1, "id": ')
    (folder / "empty").mkdir()
    assert list_comparisons(folder) == []
    assert list_comparisons(tmp_path / "nowhere") == []
    with pytest.raises(ComparisonError, match=r"broken/comparison.json is damaged"):
        load_comparison(folder / "broken")
    (folder / "fifo").mkdir()
    os.mkfifo(folder / "fifo" / "comparison.json")  # reading it would wait for a writer forever
    with pytest.raises(ComparisonError, match=r"fifo/comparison.json is not a regular file"):
        load_comparison(folder / "fifo")
    assert list_comparisons(folder) == []


@pytest.mark.parametrize("workspace", ["copy"], indirect=True)
async def test_a_record_that_names_a_copy_outside_its_folder_is_damaged(workspace: Path, tmp_path: Path) -> None:
    run = await _compare(workspace, tmp_path / "compare")
    victim = tmp_path / "victim"
    (victim / "keep-me").mkdir(parents=True)
    record = run.folder / "comparison.json"
    saved = json.loads(record.read_text())
    saved["runs"][0]["copy"]["path"] = str(victim)  # discarding the copies would delete it
    record.write_text(json.dumps(saved))
    with pytest.raises(ComparisonError, match="is not inside the comparison's folder"):
        load_comparison(run.folder)
    assert list_comparisons(tmp_path / "compare") == []

    saved["runs"][0]["copy"]["path"] = str(run.reports[0].copy.path if run.reports[0].copy else "")
    record.write_text(json.dumps(saved))
    assert len(list_comparisons(tmp_path / "compare")) == 1  # the record is whole again
    copy = run.reports[0].copy
    assert copy is not None
    shutil.rmtree(copy.path)
    copy.path.symlink_to(victim)  # a link in the copy's place leads out of the folder too
    with pytest.raises(ComparisonError, match="is not inside the comparison's folder"):
        load_comparison(run.folder)
    assert (victim / "keep-me").is_dir()


@pytest.mark.parametrize("workspace", ["copy"], indirect=True)
async def test_a_record_whose_id_is_not_its_folder_s_name_is_damaged(workspace: Path, tmp_path: Path) -> None:
    run = await _compare(workspace, tmp_path / "compare")
    moved = tmp_path / "compare" / "another-folder"
    moved.mkdir()
    (moved / "comparison.json").write_bytes((run.folder / "comparison.json").read_bytes())
    with pytest.raises(ComparisonError, match="is not the name of its folder"):
        load_comparison(moved)
    assert [comparison.id for comparison in list_comparisons(tmp_path / "compare")] == [run.id]


async def test_a_huge_diff_is_saved_without_its_text(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    big = "".join(f"line {n}\n" for n in range(MAX_SAVED_DIFF_CHARS // 8))
    write = tool_call("w1", "write", {"path": "big.txt", "content": big})
    with LoopbackServer() as server:
        server.handler = ScriptedModels({"a": [write, answer("wrote")], "b": [answer("no")]})
        profile = custom_profile(server.base_url, name="Loop")
        async with ProviderClient() as client:
            run = CompareRun(
                workspace, "write", [Contender(profile, "a"), Contender(profile, "b")], folder=tmp_path, client=client
            )
            await run.run()
    assert run.reports[0].changes[0].diff is not None
    record = json.loads((run.folder / "comparison.json").read_text())
    (change,) = record["runs"][0]["changes"]
    assert change["diff"] is None
    assert change["note"] == "the diff was too large to save with the comparison"
    assert change["added"] == MAX_SAVED_DIFF_CHARS // 8


async def test_the_record_names_every_copy_while_the_runs_go(tmp_path: Path) -> None:
    """Saved as each copy is made: after a crash mid-compare the copies can still be found and discarded."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text("print('hi')\n")
    stall = Reply.sse("data: {}\n\n", stall_after=0, stall=30)
    with LoopbackServer() as server:
        server.handler = ScriptedModels({"a": [stall], "b": [stall]})
        profile = custom_profile(server.base_url, name="Loop")
        async with ProviderClient() as client:
            run = CompareRun(
                workspace, "go", [Contender(profile, "a"), Contender(profile, "b")], folder=tmp_path, client=client
            )
            task = asyncio.ensure_future(run.run())
            assert await asyncio.to_thread(server.wait_for_requests, 2, 10)
            midway = load_comparison(run.folder)  # what a crash now would leave
            run.cancel()
            await asyncio.wait_for(task, 10)
    assert midway.ended_at is None
    assert not any(report.ended for report in midway.reports)
    assert all(report.copy is not None and report.copy.path.is_dir() for report in midway.reports)
    discard_copies(midway)
    assert not any(report.copy for report in midway.reports)
    assert not any(path.name.startswith(("1-", "2-")) for path in run.folder.iterdir())
