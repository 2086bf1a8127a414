"""The built-in tool set: order, request definitions, replay declarations, duplicate names."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.tools import (
    ReadTool,
    ReplayDeclaration,
    ToolError,
    ToolOutcome,
    ToolSet,
    WorkspaceGuard,
    builtin_tools,
    definition_digest,
    definition_identity,
    replay_declaration,
    tool_definitions,
)
from tiny_agent_core.tools.base import BuiltinTool, Tool


def test_builtins_in_reference_order(tmp_path: Path) -> None:
    assert [tool.name for tool in builtin_tools(tmp_path)] == ["bash", "read", "write", "edit", "bg"]
    assert [tool.name for tool in builtin_tools(tmp_path, names=["edit", "read"])] == ["read", "edit"]
    with pytest.raises(ToolError, match="unknown tool: web"):
        builtin_tools(tmp_path, names=["web"])


def test_definitions_are_json_schema_functions(tmp_path: Path) -> None:
    definitions = tool_definitions(builtin_tools(tmp_path))
    json.dumps(definitions)  # plain JSON
    for definition in definitions:
        assert list(definition) == ["type", "function"]
        assert definition["type"] == "function"
        assert list(definition["function"]) == ["name", "description", "parameters"]
        assert definition["function"]["parameters"]["type"] == "object"
    by_name = {d["function"]["name"]: d["function"]["parameters"] for d in definitions}
    assert by_name["bash"]["required"] == ["command"]
    assert by_name["bash"]["properties"]["timeout"]["exclusiveMinimum"] == 0
    assert by_name["read"]["required"] == ["path"]
    assert by_name["write"]["required"] == ["path", "content"]
    assert by_name["edit"]["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]
    assert by_name["bg"]["properties"]["action"]["enum"] == ["start", "list", "status", "logs", "stop"]
    assert by_name["bg"]["properties"]["status"]["enum"] == ["running", "exited", "stopped", "stale", "all"]


def test_definition_identity_and_digest(tmp_path: Path) -> None:
    read = builtin_tools(tmp_path, names=["read"])[0]
    identity = definition_identity(read)
    assert list(identity) == ["name", "description", "parameters"]
    assert identity["description"].startswith("Read a UTF-8 text file.")
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert definition_digest(read) == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert len({definition_digest(tool) for tool in builtin_tools(tmp_path)}) == 5


class FakeRead(BuiltinTool):
    """A custom tool that claims to be a safe read."""

    name = "read"
    description = "not the built-in"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {}}
    replay = "safe"
    replay_key = "builtin:read:v1"

    async def run(self, args: Mapping[str, Any], cancel: object) -> str:
        return "fake"


class SubRead(ReadTool):
    pass


def test_replay_declarations(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in builtin_tools(tmp_path)}
    assert replay_declaration(tools["read"]) == ReplayDeclaration("safe", "builtin:read:v1")
    for name in ("bash", "write", "edit", "bg"):
        assert replay_declaration(tools[name]) == ReplayDeclaration("never", f"builtin:{name}:v1")
    assert replay_declaration(FakeRead()) == ReplayDeclaration("never", "builtin:read:v1")
    assert replay_declaration(SubRead(WorkspaceGuard(tmp_path))).replay == "never"

    class Plain:
        name = "mcp__x__y"
        description = ""
        parameters: Mapping[str, Any] = {}
        replay = "safe"
        replay_key = None

        async def execute(self, args: Mapping[str, Any], *, cancel: object = None) -> ToolOutcome:
            return ToolOutcome("")

    plain: Tool = Plain()  # type: ignore[assignment]
    assert replay_declaration(plain) == ReplayDeclaration("never", "tool:mcp__x__y:v1")


def test_tool_set_rejects_duplicates(tmp_path: Path) -> None:
    tools = builtin_tools(tmp_path)
    with pytest.raises(ToolError, match="duplicate tool name: read"):
        ToolSet([*tools, FakeRead()])
    tool_set = ToolSet(tools)
    assert list(tool_set) == ["bash", "read", "write", "edit", "bg"]
    assert tool_set.definitions() == tool_definitions(tools)


def test_builtins_satisfy_the_protocol(tmp_path: Path) -> None:
    for tool in builtin_tools(tmp_path):
        assert isinstance(tool, Tool)


async def test_unexpected_exception_becomes_an_error_outcome() -> None:
    class Broken(BuiltinTool):
        name = "broken"
        description = ""
        parameters: Mapping[str, Any] = {}

        async def run(self, args: Mapping[str, Any], cancel: object) -> str:
            raise RuntimeError("kaput")

    outcome = await Broken().execute({})
    assert outcome == ToolOutcome("Error: kaput", is_error=True)
    assert outcome.result_type == "error"
    assert ToolOutcome("ok").result_type == "success"
