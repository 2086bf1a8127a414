"""The built-in tool set, tool definitions for requests, and replay declarations.

The built-ins are ``bash, read, write, edit, bg`` in the reference's order (notes §6.1), made per workspace
(:func:`builtin_tools`). The model sees each tool as ``{type: "function", function: {name, description,
parameters}}`` (no ``strict``), via :func:`tool_definitions`.

Replay (notes §5.10): only an instance of exactly the built-in :class:`~tiny_agent_core.tools.read.ReadTool` is
``safe`` with key ``builtin:read:v1``; any other tool is ``never``, whatever it claims, keyed by its own
``replay_key`` (the built-ins' ``builtin:<name>:v1``) or else ``tool:<name>:v1``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiny_agent_core.tools.base import Replay, Tool, ToolError
from tiny_agent_core.tools.bash import BashTool
from tiny_agent_core.tools.bg import BgTool
from tiny_agent_core.tools.edit import EditTool
from tiny_agent_core.tools.guard import WorkspaceGuard
from tiny_agent_core.tools.read import ReadTool
from tiny_agent_core.tools.write import WriteTool

__all__ = [
    "BUILTIN_NAMES",
    "ReplayDeclaration",
    "ToolSet",
    "builtin_tools",
    "definition_digest",
    "definition_identity",
    "replay_declaration",
    "tool_definition",
    "tool_definitions",
]

BUILTIN_NAMES: tuple[str, ...] = ("bash", "read", "write", "edit", "bg")


def builtin_tools(
    workspace: str | os.PathLike[str],
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    names: Iterable[str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    sandbox: bool = True,
    network: bool = True,
) -> list[Tool]:
    """The built-ins for ``workspace`` (in the reference's order), optionally only those in ``names``.

    ``allowed_roots`` widens what the file tools may reach (the per-workspace setting
    :meth:`~tiny_agent_core.tools.approval.ToolSettings.allowed_roots`); they are writable inside the process
    tools' sandbox as well. ``extra_env`` (the workspace's configured variables, secret-looking names dropped),
    ``sandbox`` and ``network`` go to ``bash`` and ``bg`` (see :mod:`~tiny_agent_core.tools.sandbox`). Unknown
    names raise, listing the available ones.
    """
    guard = WorkspaceGuard(workspace, allowed_roots)
    root = guard.workspace
    if names is not None:
        wanted = list(dict.fromkeys(names))
        unknown = [name for name in wanted if name not in BUILTIN_NAMES]
        if unknown:
            raise ToolError(f"unknown tool: {', '.join(unknown)} (available: {', '.join(BUILTIN_NAMES)})")
    else:
        wanted = list(BUILTIN_NAMES)
    process = _ProcessOptions(root, guard.roots[1:], dict(extra_env or {}), sandbox, network)
    makers: dict[str, Tool] = {}
    for name in BUILTIN_NAMES:
        if name not in wanted:
            continue
        makers[name] = _make(name, guard, process)
    return [makers[name] for name in BUILTIN_NAMES if name in makers]


@dataclass(frozen=True, slots=True)
class _ProcessOptions:
    """What ``bash`` and ``bg`` are built with."""

    workspace: Path
    writable_roots: tuple[Path, ...]
    extra_env: dict[str, str]
    sandbox: bool
    network: bool


def _make(name: str, guard: WorkspaceGuard, process: _ProcessOptions) -> Tool:
    if name in ("bash", "bg"):
        kind = BashTool if name == "bash" else BgTool
        return kind(
            process.workspace,
            extra_env=process.extra_env,
            sandbox=process.sandbox,
            network=process.network,
            writable_roots=process.writable_roots,
        )
    if name == "read":
        return ReadTool(guard)
    if name == "write":
        return WriteTool(guard)
    return EditTool(guard)


def tool_definition(tool: Tool) -> dict[str, Any]:
    """The request form of one tool."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": _plain(tool.parameters)},
    }


def tool_definitions(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The request's ``tools`` array, in the given order."""
    return [tool_definition(tool) for tool in tools]


def definition_identity(tool: Tool) -> dict[str, Any]:
    """``{name, description, parameters}``: what a tool's ``definitionDigest`` hashes (notes §5.8)."""
    return {"name": tool.name, "description": tool.description, "parameters": _plain(tool.parameters)}


def definition_digest(tool: Tool) -> str:
    """``sha256:<hex>`` of the canonical JSON of :func:`definition_identity`: the tool's ``definitionDigest``."""
    from tiny_agent_core.session.canonical_json import canonical_digest  # late: the session package may import tools

    return canonical_digest(definition_identity(tool))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class ReplayDeclaration:
    """What a ``toolStarted`` record stores about replay."""

    replay: Replay
    replay_key: str


def replay_declaration(tool: Tool) -> ReplayDeclaration:
    """``safe``/``builtin:read:v1`` for the built-in read only; ``never`` for every other tool."""
    if type(tool) is ReadTool:
        return ReplayDeclaration("safe", "builtin:read:v1")
    key = getattr(tool, "replay_key", None)
    return ReplayDeclaration("never", key if isinstance(key, str) and key else f"tool:{tool.name}:v1")


class ToolSet(Mapping[str, Tool]):
    """The tools of one agent, by name, in order; duplicate names are refused (``duplicate tool name: <name>``)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ToolError(f"duplicate tool name: {tool.name}")
            self._tools[tool.name] = tool

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """The function-tool definitions of the registered tools, in the provider's request form."""
        return tool_definitions(self._tools.values())

    async def close(self) -> None:
        """Stop the background processes the ``bg`` tool started (at app exit)."""
        for tool in self._tools.values():
            close = getattr(tool, "close", None)
            if callable(close):
                await close()
