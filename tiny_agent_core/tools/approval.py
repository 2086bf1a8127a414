"""The approval policy: which tool calls run at once, which ask first, and the answers' scopes (SPEC §6).

The reference has no approval at all (notes §6.7); this is ours. Plain Python, so the window and the CLI plug in
the same way::

    settings = ToolSettings.load(config_dir)          # standing permissions: a small JSON file, never a session
    policy = ApprovalPolicy(settings)                 # one per session: "allow for this session" lives here
    granted = await policy.authorize(tool, args, approver, call_id=call.id)
    if granted.allowed:
        outcome = await tool.execute(granted.arguments, cancel=...)   # the arguments may have been edited
    else:
        outcome = granted.denial                       # recorded as a started tool with an error result

Defaults: ``read`` is allowed; ``write``, ``edit``, ``bash`` and ``bg`` ask, except the read-only ``bg`` actions
``list``, ``status`` and ``logs``; any other tool asks. The answers are allow once, allow for this session,
always allow this tool (stored in :class:`ToolSettings`, visible and revocable there), and deny; an answer may
carry edited arguments. For ``write``/``edit`` the request carries a unified diff of what the call would change,
the real target when a symlink redirects the path (:attr:`ApprovalRequest.target`) and warnings for an
executable target or version-control internals (:attr:`ApprovalRequest.warnings`); for ``bash`` the command.

For ``tiny-agent run --allow TOOL`` (nobody to ask) use :func:`non_interactive`: every call goes to an
:class:`AllowListApprover` that allows the named tools and denies everything else; no standing permission applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from tiny_agent_core.tools.base import Preview, Tool, ToolOutcome
from tiny_agent_core.tools.bg import READ_ONLY_ACTIONS

__all__ = [
    "DEFAULT_RULES",
    "PREVIEW_TIMEOUT",
    "SETTINGS_FILE",
    "AllowListApprover",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "Authorization",
    "Choice",
    "Decision",
    "ToolSettings",
    "Verdict",
    "non_interactive",
]

SETTINGS_FILE = "tool-permissions.json"
"""The settings file's name inside the config folder the caller gives."""

_SETTINGS_VERSION = 1

PREVIEW_TIMEOUT = 10.0
"""Seconds a tool's preview may take before the prompt opens without it (a stuck network file system, a buggy
tool); the built-ins never block, this only bounds what the prompt waits for."""


class Verdict(StrEnum):
    """What the policy says about a call before anyone is asked."""

    ALLOW = "allow"
    ASK = "ask"


class Choice(StrEnum):
    """The four answers to an approval prompt."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"


DEFAULT_RULES: Mapping[str, Verdict] = {
    "read": Verdict.ALLOW,
    "write": Verdict.ASK,
    "edit": Verdict.ASK,
    "bash": Verdict.ASK,
    "bg": Verdict.ASK,
}


@dataclass(frozen=True, slots=True)
class Decision:
    """The policy's verdict on one call and why."""

    verdict: Verdict
    reason: str
    """``default``, ``read-only action``, ``allowed for this session`` or ``always allowed``."""

    @property
    def needs_approval(self) -> bool:
        return self.verdict is Verdict.ASK


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is shown: the call, its full arguments and a preview."""

    tool_name: str
    arguments: Mapping[str, Any]
    preview: Preview
    call_id: str | None = None

    @property
    def target(self) -> str | None:
        """The real path a file change would reach when a symlink redirects the named one (show it)."""
        return self.preview.target

    @property
    def warnings(self) -> tuple[str, ...]:
        """Why the call deserves a second look (an executable target, version-control internals); show them."""
        return self.preview.warnings

    @property
    def arguments_json(self) -> str:
        """The arguments as indented JSON, for display and editing."""
        return json.dumps(dict(self.arguments), ensure_ascii=False, indent=2)


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """An approver's answer; ``arguments`` replaces the call's arguments when given (edited by the user)."""

    choice: Choice
    arguments: Mapping[str, Any] | None = None
    reason: str | None = None
    """For a denial: why, in words the model will read."""

    @classmethod
    def deny(cls, reason: str | None = None) -> ApprovalAnswer:
        return cls(Choice.DENY, reason=reason)

    @property
    def allowed(self) -> bool:
        return self.choice is not Choice.DENY


class Approver(Protocol):
    """Asks someone (a dialog, a terminal prompt, an allow-list) about one call."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer: ...


@dataclass(frozen=True, slots=True)
class Authorization:
    """The result of :meth:`ApprovalPolicy.authorize`."""

    allowed: bool
    arguments: Mapping[str, Any]
    """The arguments to execute with (and to record): the edited ones when the answer carried some."""
    decision: Decision
    answer: ApprovalAnswer | None = None
    """``None`` when the policy allowed the call without asking."""

    @property
    def denial(self) -> ToolOutcome:
        """The error result a denied call is recorded with, so the model learns it was denied."""
        message = "Tool call denied; the tool was not executed."
        if self.answer is not None and self.answer.reason:
            message += f" Reason: {self.answer.reason}"
        return ToolOutcome.error(message)


class AllowListApprover:
    """A non-interactive approver: allows (once) the named tools, denies every other call."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = frozenset(allowed)

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        if request.tool_name in self.allowed:
            return ApprovalAnswer(Choice.ALLOW_ONCE)
        return ApprovalAnswer.deny(
            f"{request.tool_name} is not allowed in this non-interactive run (allow it with --allow "
            f"{request.tool_name})."
        )


@dataclass
class ToolSettings:
    """Standing tool permissions and per-workspace allowed roots, kept in ``<config dir>/tool-permissions.json``.

    ``path=None`` keeps them in memory only. Each change re-reads the file first (another window may have changed
    it) and rewrites it atomically with mode 0600. An unreadable file grants nothing: ``load_error`` says why, and
    the next change replaces it.
    """

    path: Path | None = None
    always_allow: set[str] = field(default_factory=set)
    workspace_roots: dict[str, list[str]] = field(default_factory=dict)
    load_error: str | None = None

    @classmethod
    def load(cls, config_dir: str | os.PathLike[str]) -> ToolSettings:
        settings = cls(Path(config_dir) / SETTINGS_FILE)
        settings.reload()
        return settings

    @classmethod
    def in_memory(cls) -> ToolSettings:
        return cls(None)

    def reload(self) -> None:
        """Read the file again (nothing when in memory)."""
        if self.path is None:
            return
        self.always_allow, self.workspace_roots, self.load_error = set(), {}, None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            self.load_error = f"{self.path}: {error}"
            return
        if not isinstance(data, dict) or data.get("version") != _SETTINGS_VERSION:
            self.load_error = f"{self.path}: not a version {_SETTINGS_VERSION} tool settings file"
            return
        always = data.get("alwaysAllow", [])
        if isinstance(always, list):
            self.always_allow = {name for name in always if isinstance(name, str) and name}
        workspaces = data.get("workspaces", {})
        if isinstance(workspaces, dict):
            for workspace, entry in workspaces.items():
                roots = entry.get("allowedRoots") if isinstance(entry, dict) else None
                if isinstance(roots, list):
                    self.workspace_roots[workspace] = [root for root in roots if isinstance(root, str) and root]

    def save(self) -> None:
        """Write the file atomically (nothing when in memory)."""
        if self.path is None:
            return
        data = {
            "version": _SETTINGS_VERSION,
            "alwaysAllow": sorted(self.always_allow),
            "workspaces": {
                workspace: {"allowedRoots": roots} for workspace, roots in sorted(self.workspace_roots.items())
            },
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, ensure_ascii=False, indent=2)
                file.write("\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self.load_error = None

    # -- standing permissions ------------------------------------------------------------------------------

    def always_allowed(self) -> frozenset[str]:
        """The tools that never ask (for a settings page)."""
        return frozenset(self.always_allow)

    def is_always_allowed(self, tool_name: str) -> bool:
        return tool_name in self.always_allow

    def allow_always(self, tool_name: str) -> None:
        self.reload()
        self.always_allow.add(tool_name)
        self.save()

    def revoke(self, tool_name: str) -> None:
        """Take back "always allow" for one tool."""
        self.reload()
        self.always_allow.discard(tool_name)
        self.save()

    def revoke_all(self) -> None:
        self.reload()
        self.always_allow.clear()
        self.save()

    # -- containment widening ------------------------------------------------------------------------------

    def allowed_roots(self, workspace: str | os.PathLike[str]) -> tuple[Path, ...]:
        """The extra roots the file tools may reach from ``workspace`` (empty: the workspace only)."""
        return tuple(Path(root) for root in self.workspace_roots.get(_workspace_key(workspace), []))

    def set_allowed_roots(self, workspace: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> None:
        """Widen (or, with no roots, narrow back) what the file tools may reach from ``workspace``."""
        self.reload()
        real = [os.path.realpath(root) for root in roots]
        key = _workspace_key(workspace)
        if real:
            self.workspace_roots[key] = real
        else:
            self.workspace_roots.pop(key, None)
        self.save()


def _workspace_key(workspace: str | os.PathLike[str]) -> str:
    return os.path.realpath(workspace)


class ApprovalPolicy:
    """Decides per call; remembers "allow for this session". Make one per session."""

    def __init__(
        self,
        settings: ToolSettings | None = None,
        *,
        defaults: Mapping[str, Verdict] = DEFAULT_RULES,
        read_only_bg: bool = True,
        standing: bool = True,
    ) -> None:
        self.settings = settings if settings is not None else ToolSettings.in_memory()
        self.defaults = dict(defaults)
        self.read_only_bg = read_only_bg
        self.standing = standing
        self._session: set[str] = set()

    # -- decisions -----------------------------------------------------------------------------------------

    def decide(self, tool_name: str, args: Mapping[str, Any]) -> Decision:
        """Allow now, or ask first. Tools without a rule ask."""
        if self.defaults.get(tool_name) is Verdict.ALLOW:
            return Decision(Verdict.ALLOW, "default")
        if self.read_only_bg and tool_name == "bg" and args.get("action") in READ_ONLY_ACTIONS:
            return Decision(Verdict.ALLOW, "read-only action")
        if tool_name in self._session:
            return Decision(Verdict.ALLOW, "allowed for this session")
        if self.standing and self.settings.is_always_allowed(tool_name):
            return Decision(Verdict.ALLOW, "always allowed")
        return Decision(Verdict.ASK, "default")

    # -- session scope -------------------------------------------------------------------------------------

    @property
    def session_allowed(self) -> frozenset[str]:
        return frozenset(self._session)

    def allow_for_session(self, tool_name: str) -> None:
        self._session.add(tool_name)

    def revoke_session(self, tool_name: str) -> None:
        self._session.discard(tool_name)

    def record(self, tool_name: str, answer: ApprovalAnswer) -> None:
        """Keep what an answer grants beyond this call."""
        if answer.choice is Choice.ALLOW_SESSION:
            self._session.add(tool_name)
        elif answer.choice is Choice.ALLOW_ALWAYS:
            if self.standing:
                self.settings.allow_always(tool_name)
            else:
                self._session.add(tool_name)

    # -- the whole flow ------------------------------------------------------------------------------------

    async def request_for(self, tool: Tool, args: Mapping[str, Any], *, call_id: str | None = None) -> ApprovalRequest:
        """The request for a call, with its preview (a diff for ``write``/``edit``, the command for ``bash``)."""
        make_preview = getattr(tool, "preview", None)
        preview: Preview | None = None
        if callable(make_preview):
            try:
                preview = await asyncio.wait_for(asyncio.to_thread(make_preview, args), PREVIEW_TIMEOUT)
            except TimeoutError:
                preview = Preview("arguments", _json(args), error=f"no preview: it took over {PREVIEW_TIMEOUT:g} s")
            except Exception as error:  # a preview must never stop the prompt
                preview = Preview("arguments", _json(args), error=f"no preview: {error}")
        if preview is None:
            preview = Preview("arguments", _json(args))
        return ApprovalRequest(tool.name, dict(args), preview, call_id)

    async def authorize(
        self, tool: Tool, args: Mapping[str, Any], approver: Approver, *, call_id: str | None = None
    ) -> Authorization:
        """Decide; ask ``approver`` when needed; record the answer's scope. Cancellation propagates."""
        decision = self.decide(tool.name, args)
        if not decision.needs_approval:
            return Authorization(True, args, decision)
        request = await self.request_for(tool, args, call_id=call_id)
        answer = await approver.ask(request)
        if not answer.allowed:
            return Authorization(False, args, decision, answer)
        self.record(tool.name, answer)
        arguments = answer.arguments if answer.arguments is not None else args
        return Authorization(True, arguments, decision, answer)


def non_interactive(allowed: Iterable[str]) -> tuple[ApprovalPolicy, AllowListApprover]:
    """The policy and approver of ``tiny-agent run --allow TOOL...``: only the named tools ever run.

    Every call is put to the allow-list (no defaults, no read-only exemption, no standing permission), so the run
    does the same whatever the user's settings say. The caller should also offer the model only these tools.
    """
    policy = ApprovalPolicy(ToolSettings.in_memory(), defaults={}, read_only_bg=False, standing=False)
    return policy, AllowListApprover(allowed)


def _json(args: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(args), ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(dict(args))
