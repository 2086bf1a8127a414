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
always allow, and deny; an answer may carry edited arguments. "Always" is scoped where the call allows it
(:mod:`~tiny_agent_core.tools.scopes`): a command prefix for ``bash``/``bg start`` (``pytest``, ``git status``), a
path glob for ``write``/``edit`` (``src/**``), the whole tool otherwise; the answer carries the
:class:`~tiny_agent_core.tools.scopes.AllowRule`, stored in :class:`ToolSettings`, visible and revocable there.

A **risky** call (:mod:`~tiny_agent_core.tools.risk`: ``rm -rf`` of real data, ``git push --force``, ``curl … | sh``,
writes into ``.git/`` or outside the workspace, ``sudo``…) always asks, whatever was allowed for the session or
always, and an "always" answer to it counts as once. The request carries everything a prompt should show: the
model's rationale (its text in the step that made the call, :attr:`ApprovalRequest.rationale`), the risk
findings, a unified diff of what ``write``/``edit`` would change, the real target when a symlink redirects the
path (:attr:`ApprovalRequest.target`), warnings for an executable target or version-control internals
(:attr:`ApprovalRequest.warnings`), for ``bash`` the command, and the rules it may offer
(:attr:`ApprovalRequest.scopes`).

The settings file is version 2 (``rules`` added); a version 1 file is read as it is (its whole-tool permissions
stay) and written back as version 2 on the next change.

An MCP tool (function name ``mcp__…``, :mod:`tiny_agent_core.mcp.names`) is "any other tool": it asks unless
it was allowed for the session or always, as a tool or for its whole server (the standing permission
``mcp:<alias>`` in ``alwaysAllow``); a risky call asks all the same.

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

from tiny_agent_core.mcp.names import parse_function_name, shown_name
from tiny_agent_core.tools.base import Preview, Tool, ToolOutcome
from tiny_agent_core.tools.bg import READ_ONLY_ACTIONS
from tiny_agent_core.tools.guard import WorkspaceGuard
from tiny_agent_core.tools.risk import NO_RISK, Finding, Risk, RiskKind, assess
from tiny_agent_core.tools.sandbox import Confinement
from tiny_agent_core.tools.scopes import AllowRule, RuleKind, glob_choices, make_rule, prefix_choices, rule_kind

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

_SETTINGS_VERSION = 2
_READABLE_VERSIONS = (1, 2)

PREVIEW_TIMEOUT = 10.0
"""Seconds a tool's preview may take before the prompt opens without it (a stuck network file system, a buggy
tool); the built-ins never block, this only bounds what the prompt waits for. The risk check gets as long again;
a call it cannot finish in time counts as risky."""


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
    """``default``, ``read-only action``, ``risky``, ``allowed for this session``, ``always allowed``,
    ``always allowed (server)`` (every tool of the MCP server) or ``always allowed by a rule``."""
    rule: AllowRule | None = None
    """The standing rule that allowed the call, if one did."""

    @property
    def needs_approval(self) -> bool:
        """Someone must be asked before the call runs."""
        return self.verdict is Verdict.ASK


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is shown: the call, its full arguments and a preview."""

    tool_name: str
    arguments: Mapping[str, Any]
    preview: Preview
    call_id: str | None = None
    rationale: str | None = None
    """What the model said in the step that made the call (its reason, in its words), when it said anything."""
    risk: Risk = NO_RISK
    """What the call could destroy; a risky call cannot be allowed always."""
    workspace: str | None = None
    """The real path of the workspace the tool works in, when known (path rules are relative to it)."""
    scopes: tuple[AllowRule, ...] = ()
    """The "always allow" rules to offer, most specific first (see :attr:`scope_kind`)."""

    @property
    def scope_kind(self) -> RuleKind | None:
        """What "always allow" covers for this call: a command ``prefix``, a path ``glob`` (when the workspace is
        known), or (``None``) the whole tool."""
        kind = rule_kind(self.tool_name, self.arguments)
        return None if kind == "glob" and self.workspace is None else kind

    @property
    def can_allow_always(self) -> bool:
        """Whether "always allow" may be offered (never for a risky call)."""
        return not self.risk.risky

    def rule(self, pattern: str) -> AllowRule:
        """The rule for a prefix or glob the user chose or typed; ``ValueError`` says what is wrong with it."""
        kind = self.scope_kind
        if kind is None:
            raise ValueError(f"{self.tool_name} can only be allowed as a whole.")
        return make_rule(self.tool_name, kind, pattern, self.workspace)

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
    rule: AllowRule | None = None
    """For "always": the scope (a command prefix or a path glob); ``None`` always allows the whole tool."""

    @classmethod
    def deny(cls, reason: str | None = None) -> ApprovalAnswer:
        """A refusal, with the reason the model is told."""
        return cls(Choice.DENY, reason=reason)

    @property
    def allowed(self) -> bool:
        """Every answer but a refusal lets the call run."""
        return self.choice is not Choice.DENY


class Approver(Protocol):
    """Asks someone (a dialog, a terminal prompt, an allow-list) about one call."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Answer for one call; the call runs only if the answer allows it."""
        ...


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
    """A non-interactive approver: allows (once) the named tools (function names), denies every other call.

    A risky call (:mod:`~tiny_agent_core.tools.risk`: a write into ``.git/`` through a planted symlink, ``rm -rf``,
    ``curl | sh``…) is denied even for an allowed tool unless ``allow_risky``: where nobody can be asked, "always
    ask" means "never". The denial names the ``--allow`` value that would have allowed the call: the tool's name,
    or ``mcp:<alias>/<tool>`` for an MCP tool."""

    def __init__(self, allowed: Iterable[str], *, allow_risky: bool = False) -> None:
        self.allowed = frozenset(allowed)
        self.allow_risky = allow_risky

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Allow the listed tools (a risky call only with ``allow_risky``); deny everything else, saying why."""
        if request.tool_name in self.allowed:
            if request.risk.risky and not self.allow_risky:
                return ApprovalAnswer.deny(
                    f"the call looks risky ({'; '.join(request.risk.reasons)}), and a non-interactive run never "
                    "allows a risky call unless it was started with --allow-risky."
                )
            return ApprovalAnswer(Choice.ALLOW_ONCE)
        shown = shown_name(request.tool_name)
        return ApprovalAnswer.deny(
            f"{shown} is not allowed in this non-interactive run (allow it with --allow {shown})."
        )


@dataclass
class ToolSettings:
    """Standing tool permissions (whole tools and scoped rules, :class:`~tiny_agent_core.tools.scopes.AllowRule`)
    and per-workspace allowed roots, kept in ``<config dir>/tool-permissions.json``::

        {"version": 2, "alwaysAllow": ["bg"],
         "rules": [{"tool": "bash", "prefix": "git status"}, {"tool": "edit", "glob": "src/**", "workspace": "/w"}],
         "workspaces": {"/w": {"allowedRoots": ["/data"]}}}

    Version 1 (the same without ``rules``) is read as it is and written back as version 2.

    ``path=None`` keeps them in memory only. Each change re-reads the file first (another window may have changed
    it) and rewrites it atomically with mode 0600. An unreadable file grants nothing: ``load_error`` says why, and
    the next change replaces it.
    """

    path: Path | None = None
    always_allow: set[str] = field(default_factory=set)
    rules: list[AllowRule] = field(default_factory=list)
    workspace_roots: dict[str, list[str]] = field(default_factory=dict)
    load_error: str | None = None

    @classmethod
    def load(cls, config_dir: str | os.PathLike[str]) -> ToolSettings:
        """The settings kept in ``config_dir`` (defaults when the file is missing; see :attr:`load_error`)."""
        settings = cls(Path(config_dir) / SETTINGS_FILE)
        settings.reload()
        return settings

    @classmethod
    def in_memory(cls) -> ToolSettings:
        """Settings that are never saved (tests, headless runs)."""
        return cls(None)

    def reload(self) -> None:
        """Read the file again (nothing when in memory)."""
        if self.path is None:
            return
        self.always_allow, self.rules, self.workspace_roots, self.load_error = set(), [], {}, None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            self.load_error = f"{self.path}: {error}"
            return
        if not isinstance(data, dict) or data.get("version") not in _READABLE_VERSIONS:
            self.load_error = f"{self.path}: not a version {_SETTINGS_VERSION} tool settings file"
            return
        always = data.get("alwaysAllow", [])
        if isinstance(always, list):
            self.always_allow = {name for name in always if isinstance(name, str) and name}
        rules = data.get("rules", [])
        if isinstance(rules, list):
            parsed = (AllowRule.from_json(entry) for entry in rules)
            self.rules = list(dict.fromkeys(rule for rule in parsed if rule is not None))
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
            "rules": [rule.as_json() for rule in self.rules],
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
        """The tool runs without asking, in every session."""
        return tool_name in self.always_allow

    def allow_always(self, tool_name: str) -> None:
        """Let the tool run without asking from now on, and save that."""
        self.reload()
        self.always_allow.add(tool_name)
        self.save()

    def revoke(self, tool_name: str) -> None:
        """Take back "always allow" for one tool."""
        self.reload()
        self.always_allow.discard(tool_name)
        self.save()

    def revoke_all(self) -> None:
        """Take back every standing permission, whole tools and rules."""
        self.reload()
        self.always_allow.clear()
        self.rules.clear()
        self.save()

    def allow_rules(self) -> tuple[AllowRule, ...]:
        """The scoped permissions, oldest first (for a settings page)."""
        return tuple(self.rules)

    def add_rule(self, rule: AllowRule) -> None:
        """Store a scoped permission (once)."""
        self.reload()
        if rule not in self.rules:
            self.rules.append(rule)
        self.save()

    def revoke_rule(self, rule: AllowRule) -> None:
        """Take back one scoped permission."""
        self.reload()
        self.rules = [kept for kept in self.rules if kept != rule]
        self.save()

    def matching_rule(
        self, tool_name: str, args: Mapping[str, Any], *, workspace: str | None = None, target: str | None = None
    ) -> AllowRule | None:
        """The first stored rule that covers the call, if any."""
        return next(
            (rule for rule in self.rules if rule.matches(tool_name, args, workspace=workspace, target=target)), None
        )

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

    def decide(
        self,
        tool_name: str,
        args: Mapping[str, Any],
        *,
        risk: Risk | None = None,
        workspace: str | None = None,
        target: str | None = None,
    ) -> Decision:
        """Allow now, or ask first. Tools without a rule ask; so does a risky call, whatever was allowed (for the
        session, always, or for the whole MCP server).

        ``risk`` defaults to what the arguments alone show (:func:`~tiny_agent_core.tools.risk.assess` without the
        workspace); ``workspace`` and ``target`` (the real path of a redirected file change) let path rules apply.
        """
        if self.defaults.get(tool_name) is Verdict.ALLOW:
            return Decision(Verdict.ALLOW, "default")
        if self.read_only_bg and tool_name == "bg" and args.get("action") in READ_ONLY_ACTIONS:
            return Decision(Verdict.ALLOW, "read-only action")
        if (risk if risk is not None else assess(tool_name, args)).risky:
            return Decision(Verdict.ASK, "risky")
        if tool_name in self._session:
            return Decision(Verdict.ALLOW, "allowed for this session")
        if self.standing and self.settings.is_always_allowed(tool_name):
            return Decision(Verdict.ALLOW, "always allowed")
        server = parse_function_name(tool_name) if self.standing else None
        if server is not None and self.settings.is_always_allowed(f"mcp:{server[0]}"):
            return Decision(Verdict.ALLOW, "always allowed (server)")
        rule = (
            self.settings.matching_rule(tool_name, args, workspace=workspace, target=target) if self.standing else None
        )
        if rule is not None:
            return Decision(Verdict.ALLOW, "always allowed by a rule", rule)
        return Decision(Verdict.ASK, "default")

    # -- session scope -------------------------------------------------------------------------------------

    @property
    def session_allowed(self) -> frozenset[str]:
        """The tools allowed for the rest of this session only."""
        return frozenset(self._session)

    def allow_for_session(self, tool_name: str) -> None:
        """Let the tool run without asking for the rest of this session (never saved)."""
        self._session.add(tool_name)

    def revoke_session(self, tool_name: str) -> None:
        """Ask about the tool again (undo :meth:`allow_for_session`)."""
        self._session.discard(tool_name)

    def record(self, tool_name: str, answer: ApprovalAnswer, *, risky: bool = False) -> None:
        """Keep what an answer grants beyond this call: nothing for "always" on a ``risky`` call or with a rule
        for another tool; the rule when the answer carries one; else the whole tool."""
        if answer.choice is Choice.ALLOW_SESSION:
            self._session.add(tool_name)
        elif answer.choice is Choice.ALLOW_ALWAYS and not risky:
            if answer.rule is not None:
                if self.standing and answer.rule.tool == tool_name:
                    self.settings.add_rule(answer.rule)
            elif self.standing:
                self.settings.allow_always(tool_name)
            else:
                self._session.add(tool_name)

    # -- the whole flow ------------------------------------------------------------------------------------

    async def request_for(
        self, tool: Tool, args: Mapping[str, Any], *, call_id: str | None = None, rationale: str | None = None
    ) -> ApprovalRequest:
        """The request for a call: its preview (a diff for ``write``/``edit``, the command for ``bash``), its risk
        within the tool's workspace roots, the rules to offer, and ``rationale`` (the model's text of the step;
        blank or non-text is dropped)."""
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
        roots = _roots_of(tool)
        workspace = str(roots[0]) if roots else None
        try:  # a long command takes a while to read (about 0.5 s per 100 kB): off the event loop, bounded
            risk = await asyncio.wait_for(
                asyncio.to_thread(assess, tool.name, args, target=preview.target, roots=roots), PREVIEW_TIMEOUT
            )
        except TimeoutError:
            risk = Risk((Finding(RiskKind.UNCHECKED, f"too long to check for risks within {PREVIEW_TIMEOUT:g} s"),))
        scopes: tuple[AllowRule, ...] = ()
        kind = rule_kind(tool.name, args)
        if not risk.risky and kind == "prefix":
            scopes = tuple(make_rule(tool.name, kind, prefix) for prefix in prefix_choices(args.get("command")))
        elif not risk.risky and kind == "glob" and workspace is not None:
            globs = glob_choices(args.get("path"), workspace, preview.target)
            scopes = tuple(make_rule(tool.name, kind, glob, workspace) for glob in globs)
        said = rationale.strip() if isinstance(rationale, str) else ""
        return ApprovalRequest(tool.name, dict(args), preview, call_id, said or None, risk, workspace, scopes)

    async def authorize(
        self,
        tool: Tool,
        args: Mapping[str, Any],
        approver: Approver,
        *,
        call_id: str | None = None,
        rationale: str | None = None,
    ) -> Authorization:
        """Decide; ask ``approver`` when needed (with ``rationale``, the model's text of the step); record the
        answer's scope. Cancellation propagates."""
        decision = self.decide(tool.name, args, risk=NO_RISK)
        if decision.reason in ("default", "read-only action") and not decision.needs_approval:
            return Authorization(True, args, decision)
        request = await self.request_for(tool, args, call_id=call_id, rationale=rationale)
        decision = self.decide(tool.name, args, risk=request.risk, workspace=request.workspace, target=request.target)
        if not decision.needs_approval:
            return Authorization(True, args, decision)
        answer = await approver.ask(request)
        if not answer.allowed:
            return Authorization(False, args, decision, answer)
        self.record(tool.name, answer, risky=request.risk.risky)
        arguments = answer.arguments if answer.arguments is not None else args
        return Authorization(True, arguments, decision, answer)


def non_interactive(allowed: Iterable[str], *, allow_risky: bool = False) -> tuple[ApprovalPolicy, AllowListApprover]:
    """The policy and approver of ``tiny-agent run --allow TOOL... [--allow-risky]``: only the named tools ever run,
    and risky calls only with ``allow_risky``.

    Every call is put to the allow-list (no defaults, no read-only exemption, no standing permission), so the run
    does the same whatever the user's settings say. The caller should also offer the model only these tools.
    """
    policy = ApprovalPolicy(ToolSettings.in_memory(), defaults={}, read_only_bg=False, standing=False)
    return policy, AllowListApprover(allowed, allow_risky=allow_risky)


def _roots_of(tool: Tool) -> tuple[Path, ...]:
    """The folders a built-in tool works in (its workspace first); empty for a tool that does not say."""
    guard = getattr(tool, "guard", None)
    if isinstance(guard, WorkspaceGuard):
        return guard.roots
    confinement = getattr(tool, "confinement", None)
    if isinstance(confinement, Confinement):
        return confinement.writable
    return ()


def _json(args: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(args), ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(dict(args))
