"""Every case of the reference's tool contracts (../shared/reference/schemas/tools), read at test time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.core.tools.support import load_contract, real, text_of
from tests.shared_data import shared_path
from tiny_agent_core.tools import BashTool, EditTool, ReadTool, WorkspaceGuard, WriteTool

BASH = load_contract("bash-contract.json")
LOCAL = load_contract("local-tool-contract.json")
BASH_CASES: list[dict[str, Any]] = BASH["cases"] if BASH else []
EDIT_FAILURES: list[dict[str, Any]] = LOCAL["edit"]["failures"] if LOCAL else []


def contract(name: str) -> dict[str, Any]:
    shared_path("reference", "schemas", "tools", name)  # skips when ../shared is absent
    data = load_contract(name)
    assert data is not None
    return data


@pytest.mark.parametrize("case", BASH_CASES, ids=[case["name"] for case in BASH_CASES])
async def test_bash_contract_case(case: dict[str, Any], tmp_path: Path) -> None:
    contract("bash-contract.json")
    args: dict[str, Any] = {"command": case["command"]}
    if "timeout" in case:
        args["timeout"] = case["timeout"]
    outcome = await BashTool(tmp_path).execute(args)
    assert outcome.content == case["result"]
    assert not outcome.is_error


async def test_bash_contract_line_truncation(tmp_path: Path) -> None:
    spec = contract("bash-contract.json")["lineTruncation"]
    outcome = await BashTool(tmp_path).execute({"command": spec["command"]})
    text = outcome.content
    separator = "\n" * spec["separatorNewlines"]
    tail, note = text.rsplit(separator, 1)
    assert tail.split("\n")[0] == spec["firstTailLine"]
    assert tail.split("\n")[-1] == spec["lastTailLine"]
    match = re.fullmatch(r"\[Showing lines (\d+)-(\d+) of (\d+)\. (.+): (.+)\]", note)
    assert match is not None, note
    start, end, total, label, path = match.groups()
    assert int(start) == spec["showingStart"]
    assert int(end) == int(total) == spec["totalLines"]
    assert label == spec["label"]
    full = Path(path)
    assert full.is_absolute()
    assert full.parent == real(tmp_path) / ".tiny-agent" / "tool-output"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.log", full.name)
    assert text_of(full).split("\n")[:-1] == [str(i) for i in range(1, spec["totalLines"] + 1)]


async def test_write_contract(tmp_path: Path) -> None:
    case = contract("local-tool-contract.json")["write"]
    outcome = await WriteTool(WorkspaceGuard(tmp_path)).execute({"path": case["path"], "content": case["content"]})
    assert outcome.content == case["result"]
    assert (tmp_path / case["path"]).read_bytes() == case["content"].encode("utf-8")


async def test_read_contract(tmp_path: Path) -> None:
    case = contract("local-tool-contract.json")["read"]
    (tmp_path / case["path"]).write_bytes(case["content"].encode("utf-8"))
    tool = ReadTool(WorkspaceGuard(tmp_path))
    outcome = await tool.execute({"path": case["path"], **case["arguments"]})
    assert outcome.content == case["result"]
    assert not outcome.is_error
    beyond = await tool.execute({"path": case["path"], "offset": case["beyondOffset"]})
    assert beyond.is_error
    assert beyond.content == f"Error: {case['beyondError']}"


async def test_edit_contract(tmp_path: Path) -> None:
    case = contract("local-tool-contract.json")["edit"]
    target = tmp_path / case["path"]
    target.write_bytes(case["content"].encode("utf-8"))
    outcome = await EditTool(WorkspaceGuard(tmp_path)).execute({"path": case["path"], "edits": case["edits"]})
    assert outcome.content == case["result"]
    assert target.read_bytes() == case["contentAfter"].encode("utf-8")


@pytest.mark.parametrize("failure", EDIT_FAILURES, ids=[failure["error"] for failure in EDIT_FAILURES])
async def test_edit_contract_failure(failure: dict[str, Any], tmp_path: Path) -> None:
    case = contract("local-tool-contract.json")["edit"]
    target = tmp_path / case["path"]
    # failures are checked against the file as it is after the successful edit
    target.write_bytes(case["contentAfter"].encode("utf-8"))
    outcome = await EditTool(WorkspaceGuard(tmp_path)).execute({"path": case["path"], "edits": failure["edits"]})
    assert outcome.is_error
    assert outcome.result_type == "error"
    assert outcome.content == f"Error: {failure['error']}"
    assert target.read_bytes() == case["contentAfter"].encode("utf-8")
