"""The built-in tools (``read``, ``write``, ``edit``, ``bash``, ``bg``), their execution guard, and approval.

Headless: the agent loop offers :func:`builtin_tools` to the model (:func:`tool_definitions`), asks the
:class:`ApprovalPolicy` before each call, and runs ``tool.execute(args, cancel=...)``, which returns a
:class:`ToolOutcome` (``Error: <message>`` with ``is_error`` when the tool raised) or raises only on
cancellation (``asyncio.CancelledError`` / :class:`ToolAborted`, recorded as ``interrupted``).
"""

from tiny_agent_core.tools.approval import (
    DEFAULT_RULES,
    AllowListApprover,
    ApprovalAnswer,
    ApprovalPolicy,
    ApprovalRequest,
    Approver,
    Authorization,
    Choice,
    Decision,
    ToolSettings,
    Verdict,
    non_interactive,
)
from tiny_agent_core.tools.base import Preview, Replay, Tool, ToolAborted, ToolError, ToolOutcome
from tiny_agent_core.tools.bash import BashTool
from tiny_agent_core.tools.bg import BgTool
from tiny_agent_core.tools.edit import EditTool
from tiny_agent_core.tools.guard import PathOutsideWorkspace, WorkspaceGuard
from tiny_agent_core.tools.read import ReadTool
from tiny_agent_core.tools.registry import (
    BUILTIN_NAMES,
    ReplayDeclaration,
    ToolSet,
    builtin_tools,
    definition_digest,
    definition_identity,
    replay_declaration,
    tool_definition,
    tool_definitions,
)
from tiny_agent_core.tools.sandbox import SandboxStatus, sandbox_status
from tiny_agent_core.tools.write import WriteTool

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_RULES",
    "AllowListApprover",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "Authorization",
    "BashTool",
    "BgTool",
    "Choice",
    "Decision",
    "EditTool",
    "PathOutsideWorkspace",
    "Preview",
    "ReadTool",
    "Replay",
    "ReplayDeclaration",
    "SandboxStatus",
    "Tool",
    "ToolAborted",
    "ToolError",
    "ToolOutcome",
    "ToolSet",
    "ToolSettings",
    "Verdict",
    "WorkspaceGuard",
    "WriteTool",
    "builtin_tools",
    "definition_digest",
    "definition_identity",
    "non_interactive",
    "replay_declaration",
    "sandbox_status",
    "tool_definition",
    "tool_definitions",
]
