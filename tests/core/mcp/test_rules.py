"""The reference's MCP rules without a server: names, limits, result text, and ``--allow mcp:…`` specs."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mcp_types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from mcp_types import Tool as RemoteTool

from tiny_agent_core.mcp.allow import McpAllow, allowed_names, is_mcp_spec, parse_allow, split_allow
from tiny_agent_core.mcp.limits import MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS, check_tools
from tiny_agent_core.mcp.names import (
    MAX_FUNCTION_NAME,
    display_name,
    function_name,
    parse_function_name,
    shown_name,
)
from tiny_agent_core.mcp.results import MAX_RESULT_BYTES, outcome_of, truncate
from tiny_agent_core.tools.base import ToolOutcome


def remote(name: str, schema: dict[str, Any] | None = None, description: str | None = None) -> RemoteTool:
    return RemoteTool(name=name, input_schema=schema or {"type": "object"}, description=description)


def test_function_names_follow_the_reference() -> None:
    assert function_name("docs", "search") == "mcp__ZG9jcw__c2VhcmNo"
    assert display_name("docs", "search") == "mcp:docs/search"
    assert function_name("a", "x" * 100) is None
    longest = function_name("a", "x" * 40)
    assert longest is not None
    assert len(longest) <= MAX_FUNCTION_NAME


def test_check_tools_offers_the_allowed_ones() -> None:
    listed = [remote("a"), remote("b"), remote("c")]
    assert [tool.name for tool in check_tools("s", listed, None)] == ["a", "b", "c"]
    assert [tool.name for tool in check_tools("s", listed, ["c", "a"])] == ["a", "c"]


def deep(depth: int) -> dict[str, Any]:
    """An object schema whose objects nest ``depth`` deep."""
    schema: dict[str, Any] = {"type": "object"}
    node = schema
    for _ in range(depth - 1):
        node["x"] = {}
        node = node["x"]
    return schema


@pytest.mark.parametrize(
    ("listed", "allowed", "message"),
    [
        ([remote(f"t{i}") for i in range(MAX_TOOLS + 1)], None, "at most 64"),
        ([remote("a"), remote("a")], None, "duplicate tools: a"),
        ([remote("a")], ["a", "b"], "does not have: b"),
        ([remote("x" * 100)], None, "too long"),
        ([remote("a", description="d" * (MAX_DESCRIPTION_BYTES + 1))], None, "description of a"),
        ([remote("a", {"type": "object", "description": "s" * MAX_SCHEMA_BYTES})], None, "larger than"),
        ([remote("a", {"type": "array"})], None, "not an object schema"),
        ([remote("a", deep(21))], None, "deeper than 20"),
    ],
)
def test_check_tools_refuses_what_breaks_a_limit(
    listed: list[RemoteTool], allowed: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_tools("s", listed, allowed)


def test_a_tool_outside_allowed_tools_is_not_checked() -> None:
    assert [tool.name for tool in check_tools("s", [remote("a"), remote("x" * 100)], ["a"])] == ["a"]


def test_a_schema_nested_20_deep_is_accepted() -> None:
    assert check_tools("s", [remote("a", deep(20))], None)


def test_text_and_text_resources_are_joined_and_structured_content_appended() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="first"),
            EmbeddedResource(
                type="resource", resource=TextResourceContents(uri="file:///a", text="second", mime_type="text/plain")
            ),
        ],
        structured_content={"rows": 2, "name": "ü"},
    )
    assert outcome_of(result) == ToolOutcome('first\n\nsecond\n\n{"rows": 2, "name": "ü"}')


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        (ImageContent(type="image", data="AAAA", mime_type="image/png"), "image"),
        (EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file:///b", blob="AAAA")), "resource"),
    ],
)
def test_other_content_is_an_error(item: Any, kind: str) -> None:
    result = CallToolResult(content=[TextContent(type="text", text="x"), item])
    assert outcome_of(result) == ToolOutcome.error(f"Unsupported MCP content type: {kind}")


def test_is_error_is_an_error_outcome() -> None:
    result = CallToolResult(content=[TextContent(type="text", text="no such file")], is_error=True)
    assert outcome_of(result) == ToolOutcome.error("MCP tool error: no such file")


def test_results_are_cut_at_50_kb_on_a_character_boundary() -> None:
    assert truncate("short") == "short"
    text = "é" * MAX_RESULT_BYTES  # two bytes each
    cut = truncate(text)
    head, marker = cut.rsplit("\n\n", 1)
    assert head == "é" * (MAX_RESULT_BYTES // 2)
    assert marker == f"[MCP result truncated: {2 * MAX_RESULT_BYTES} bytes, the first {MAX_RESULT_BYTES} shown]"


def test_allow_specs() -> None:
    assert is_mcp_spec("mcp:docs")
    assert not is_mcp_spec("read")
    assert parse_allow("mcp:docs") == McpAllow("docs")
    assert parse_allow("mcp:docs/search") == McpAllow("docs", "search")
    for bad in ("mcp:", "mcp:/x", "mcp:docs/", "read"):
        with pytest.raises(ValueError, match=r"mcp:ALIAS|does not start"):
            parse_allow(bad)


class FakeTool:
    """What :func:`allowed_names` looks at."""

    def __init__(self, alias: str, remote_name: str) -> None:
        self.alias = alias
        self.remote_name = remote_name
        self.name = f"fn_{alias}_{remote_name}"


def test_allowed_names_resolve_specs_to_function_names() -> None:
    tools: Any = [FakeTool("docs", "search"), FakeTool("docs", "fetch"), FakeTool("files", "read")]
    assert allowed_names([McpAllow("docs")], tools) == ["fn_docs_search", "fn_docs_fetch"]
    assert allowed_names([McpAllow("files", "read"), McpAllow("files")], tools) == ["fn_files_read"]
    with pytest.raises(ValueError, match="no connected server nope"):
        allowed_names([McpAllow("nope")], tools)
    with pytest.raises(ValueError, match="no connected tool write of server files"):
        allowed_names([McpAllow("files", "write")], tools)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20))
def test_function_names_read_back(alias: str, tool: str) -> None:
    name = function_name(alias, tool)
    assume(name is not None)
    assert name is not None
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)
    parsed = parse_function_name(name)
    assert parsed is not None
    assert function_name(*parsed) == name


def test_shown_names() -> None:
    assert shown_name(str(function_name("docs", "search"))) == "mcp:docs/search"
    assert shown_name("read") == "read"
    assert shown_name("mcp__!!__x") == "mcp__!!__x"
    assert parse_function_name("mcp__ZG9jcw") is None


def test_split_allow() -> None:
    assert split_allow(["read", "mcp:docs", "bash", "mcp:files/read"]) == (
        ["read", "bash"],
        [McpAllow("docs"), McpAllow("files", "read")],
    )
    with pytest.raises(ValueError, match="mcp:ALIAS"):
        split_allow(["mcp:"])


def test_the_light_modules_do_not_load_the_sdk() -> None:
    """A settings page or the CLI's argument check reads catalogs and specs without importing the SDK."""
    code = (
        "import sys\n"
        "import tiny_agent_core.mcp.allow, tiny_agent_core.mcp.catalog, tiny_agent_core.mcp.errors\n"
        "import tiny_agent_core.mcp.names\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('mcp', 'mcp_types', 'httpx2')))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
