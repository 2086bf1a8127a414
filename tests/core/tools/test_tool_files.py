"""The process tools' own files: spilled outputs and bg files are private (0600 in 0700 folders), never reached
through a planted symlink or hard link, and the spill folder is pruned by age, count and size."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from tests.core.tools.support import real
from tiny_agent_core.tools import BashTool, BgTool
from tiny_agent_core.tools import bash as bash_module

BIG_OUTPUT = "seq 1 3000"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def spill(workspace: Path) -> Path:
    text = (await BashTool(workspace, sandbox=False).execute({"command": BIG_OUTPUT})).content
    return Path(text.rsplit("Full output: ", 1)[1].removesuffix("]"))


async def test_spilled_output_is_private(tmp_path: Path) -> None:
    path = await spill(tmp_path)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(tmp_path / ".tiny-agent") == 0o700


async def test_a_planted_spill_symlink_is_not_followed(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / ".tiny-agent").mkdir(parents=True)
    outside.mkdir()
    (workspace / ".tiny-agent" / "tool-output").symlink_to(outside)
    text = (await BashTool(workspace, sandbox=False).execute({"command": BIG_OUTPUT})).content
    assert text.endswith("Full output: not saved (.tiny-agent/tool-output: Not a directory)]")
    assert "\n3000\n" in text
    assert list(outside.iterdir()) == []


def plant(folder: Path, name: str, size: int, age: float) -> None:
    path = folder / name
    path.write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(path, (then, then))


async def test_spills_older_than_a_week_go(tmp_path: Path) -> None:
    folder = tmp_path / ".tiny-agent" / "tool-output"
    folder.mkdir(parents=True)
    plant(folder, "old.log", 10, bash_module.SPILL_MAX_AGE + 60)
    plant(folder, "recent.log", 10, bash_module.SPILL_MAX_AGE - 3600)
    plant(folder, "notes.txt", 10, bash_module.SPILL_MAX_AGE + 60)  # not a spill file
    new = await spill(tmp_path)
    assert sorted(path.name for path in folder.iterdir()) == sorted(["recent.log", "notes.txt", new.name])


async def test_the_oldest_spills_go_past_the_count(tmp_path: Path) -> None:
    folder = tmp_path / ".tiny-agent" / "tool-output"
    folder.mkdir(parents=True)
    for index in range(bash_module.SPILL_MAX_FILES + 5):
        plant(folder, f"{index:03}.log", 10, 3600 - index)  # 000 is the oldest
    new = await spill(tmp_path)
    kept = sorted(path.name for path in folder.iterdir())
    assert len(kept) == bash_module.SPILL_MAX_FILES
    assert new.name in kept
    assert next(name for name in kept if name != new.name) == "006.log"


async def test_the_oldest_spills_go_past_the_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bash_module, "SPILL_MAX_BYTES", 25_000)
    folder = tmp_path / ".tiny-agent" / "tool-output"
    folder.mkdir(parents=True)
    for index in range(3):
        plant(folder, f"{index}.log", 8_000, 3600 - index)
    new = await spill(tmp_path)  # 13,893 bytes: with 1.log and 2.log 29,893 (over); with 2.log alone 21,893
    assert sorted(path.name for path in folder.iterdir()) == sorted(["2.log", new.name])


async def bg_started(workspace: Path, command: str) -> tuple[BgTool, str]:
    tool = BgTool(workspace, sandbox=False, start_wait=0.05)
    outcome = await tool.execute({"action": "start", "command": command})
    return tool, json.loads(outcome.content.split("\n", 1)[0])["id"]


async def test_bg_files_are_private(tmp_path: Path) -> None:
    tool, pid = await bg_started(real(tmp_path), "echo hi")
    await tool.close()
    folder = tmp_path / ".tiny-agent" / "bg"
    assert mode(folder) == 0o700
    assert mode(folder / f"{pid}.log") == 0o600
    assert mode(folder / f"{pid}.json") == 0o600


@pytest.mark.parametrize("link", ["symlink", "hardlink", "fifo"])
async def test_bg_logs_refuse_a_planted_log(link: str, tmp_path: Path) -> None:
    workspace = real(tmp_path) / "workspace"
    workspace.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-OUTSIDE\n")
    tool, pid = await bg_started(workspace, "true")
    await tool.close()
    log = workspace / ".tiny-agent" / "bg" / f"{pid}.log"
    log.unlink()
    if link == "symlink":
        log.symlink_to(secret)
    elif link == "hardlink":
        log.hardlink_to(secret)
    else:
        os.mkfifo(log)
    for action in ("logs", "status"):
        outcome = await tool.execute({"action": action, "id": pid})
        assert outcome.is_error
        assert f"refusing to read the log of bg {pid}" in outcome.content
        assert "SECRET-OUTSIDE" not in outcome.content
