"""Scoped "always allow" rules: a command prefix for ``bash``/``bg start``, a path glob for ``write``/``edit``.

"Always allow bash" would cover every command; a rule covers a family of calls:

- **Command prefix** (``pytest``, ``git status``, ``npm test``): matches a command only when the command is *one
  plain command* — no ``;``, ``&``, ``&&``, ``||``, ``|``, newline, parenthesis, backtick, ``$(``, ``<(``/``>(``,
  no redirection other than ``2>&1``-style descriptor copies and ``>/dev/null``, no leading ``VAR=value``, at most
  4,096 characters — whose words (as the shell splits them) begin with the prefix's words. ``git status`` therefore
  matches ``git status -s`` but not ``git statusx``, ``git status; rm -rf ~`` or ``git status > ~/.bashrc``. The
  prompt offers the first one or two words of a plain command (:func:`prefix_choices`; nothing for a compound one,
  and never a bare shell, interpreter or wrapper such as ``bash``, ``python``, ``sudo``, ``env`` or ``xargs``, whose
  "prefix" would be any program); the user may type another prefix, which must be plain words (:func:`make_rule`).
- **Path glob** (``src/**``, ``docs/*.md``, ``src/app.py``): relative to the workspace the rule was made in and
  applying only there; ``*`` and ``?`` stay within one folder, ``**`` spans folders. A call matches when the path it
  names, and the real target when a symlink redirects it, both lie inside the workspace and match. No ``..``, no
  absolute globs, nothing inside version-control folders is offered (:func:`glob_choices`).

Whatever a rule says, a call the risk check flags (:mod:`~tiny_agent_core.tools.risk`) still asks: the policy
checks risk first.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tiny_agent_core.tools.risk import is_operator, shell_tokens
from tiny_agent_core.tools.write import VCS_FOLDERS

__all__ = ["AllowRule", "RuleKind", "glob_choices", "make_rule", "prefix_choices", "rule_kind"]

RuleKind = Literal["prefix", "glob"]

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.:@+,=/-]+")
_SUBCOMMAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
"""A second word worth offering: a subcommand (``status``, ``test``), not an option, path or assignment."""
_PROGRAM = re.compile(r"(?:\.{0,2}/)?[A-Za-z0-9_][A-Za-z0-9_./+-]*")
_NEVER_ALONE = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "busybox", "env", "sudo", "doas", "su", "pkexec",
     "xargs", "eval", "exec", "command", "builtin", "nohup", "nice", "time", "timeout", "stdbuf", "watch", "python",
     "python2", "python3", "perl", "ruby", "node", "php", "pwsh", "source", ".", "find", "awk", "sed"}
)  # fmt: skip
"""Programs that run whatever their arguments say: a one-word prefix of them would allow any command."""
_MAX_PLAIN = 4096
"""A longer command is not "plain": no prefix rule covers it (and reading it would hold the event loop)."""
_HARMLESS_REDIRECTS = re.compile(r"[0-9]*>&[0-9]+|[0-9]*>/dev/null|&>/dev/null")


@dataclass(frozen=True, slots=True)
class AllowRule:
    """A standing permission for some calls of one tool (stored in ``ToolSettings``, revocable there)."""

    tool: str
    kind: RuleKind
    pattern: str
    """The command prefix (words separated by single spaces) or the glob (``/``-separated, relative)."""
    workspace: str | None = None
    """For a glob: the workspace (its real path, as the tools' guard has it) it is relative to. A prefix applies in
    every workspace."""

    def matches(
        self, tool_name: str, arguments: Mapping[str, Any], *, workspace: str | None = None, target: str | None = None
    ) -> bool:
        """Whether this rule covers the call (``target``: the real path a symlink redirects a file change to)."""
        if tool_name != self.tool or rule_kind(tool_name, arguments) != self.kind:
            return False
        if self.kind == "prefix":
            words = _plain_words(arguments.get("command"))
            wanted = self.pattern.split()
            return words is not None and bool(wanted) and words[: len(wanted)] == wanted
        path = arguments.get("path")
        if not isinstance(path, str) or workspace is None or posixpath.normpath(workspace) != self.workspace:
            return False
        pattern = _glob_pattern(self.pattern)
        places = [_relative(path, self.workspace)]
        if target is not None:
            places.append(_relative(target, self.workspace))
        return all(place is not None and pattern.fullmatch(place) for place in places)

    def describe(self) -> str:
        """The rule in words, e.g. ``bash: commands starting with "git status"``."""
        if self.kind == "prefix":
            return f'{self.tool}: commands starting with "{self.pattern}"'
        return f"{self.tool}: paths matching {self.pattern} in {self.workspace}"

    def as_json(self) -> dict[str, str]:
        """The settings file's form."""
        data = {"tool": self.tool, self.kind: self.pattern}
        if self.workspace is not None:
            data["workspace"] = self.workspace
        return data

    @classmethod
    def from_json(cls, data: object) -> AllowRule | None:
        """A rule from the settings file's form; ``None`` for anything malformed (it grants nothing)."""
        if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
            return None
        workspace = data.get("workspace")
        for kind in ("prefix", "glob"):
            pattern = data.get(kind)
            if isinstance(pattern, str):
                try:
                    return make_rule(data["tool"], kind, pattern, workspace if isinstance(workspace, str) else None)
                except ValueError:
                    return None
        return None


def rule_kind(tool_name: str, arguments: Mapping[str, Any]) -> RuleKind | None:
    """The kind of rule that can cover calls like this one: ``prefix`` for a command, ``glob`` for a file change;
    ``None`` when only the whole tool can be allowed."""
    if tool_name == "bash" or (tool_name == "bg" and arguments.get("action") == "start"):
        return "prefix"
    if tool_name in ("write", "edit"):
        return "glob"
    return None


def make_rule(tool_name: str, kind: RuleKind, pattern: str, workspace: str | None = None) -> AllowRule:
    """A rule from what the user chose or typed; raises ``ValueError`` saying what is wrong with it."""
    text = pattern.strip()
    if kind == "prefix":
        words = text.split()
        if not words:
            raise ValueError("Type the command prefix to allow, e.g. pytest or git status.")
        if not _PROGRAM.fullmatch(words[0]) or not all(_PLAIN_WORD.fullmatch(word) for word in words[1:]):
            raise ValueError("A prefix is plain words: no quotes, operators, variables or substitutions.")
        if len(words) == 1 and posixpath.basename(words[0]) in _NEVER_ALONE:
            raise ValueError(f"{words[0]} runs whatever follows it: add the next word (e.g. {words[0]} -m pytest).")
        return AllowRule(tool_name, "prefix", " ".join(words))
    if workspace is None:
        raise ValueError("A path rule needs the workspace it is relative to.")
    text = text.removeprefix("./")
    parts = text.split("/")
    if not text or text.startswith("/") or ".." in parts or "" in parts or "\\" in text:
        raise ValueError("A path glob is relative to the workspace, without .. (e.g. src/** or docs/*.md).")
    if any(part.casefold() in VCS_FOLDERS for part in parts):
        raise ValueError("Changes inside version-control folders always ask.")
    return AllowRule(tool_name, "glob", text, posixpath.normpath(workspace))


def prefix_choices(command: object) -> tuple[str, ...]:
    """The prefixes to offer for ``command``, most specific first; none for a compound or unusual command."""
    words = _plain_words(command)
    if not words or not _PROGRAM.fullmatch(words[0]):
        return ()
    choices = []
    if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]):
        choices.append(f"{words[0]} {words[1]}")
    if posixpath.basename(words[0]) not in _NEVER_ALONE:
        choices.append(words[0])
    return tuple(choices)


def glob_choices(path: object, workspace: str | None, target: str | None = None) -> tuple[str, ...]:
    """The globs to offer for a change of ``path`` in ``workspace`` (a real path): the file, its folder, its top
    folder; none when the path or the real ``target`` leaves the workspace or is inside version-control internals."""
    if not isinstance(path, str) or workspace is None:
        return ()
    relative = _relative(path, workspace)
    redirected = _relative(target, workspace) if target is not None else relative
    if relative is None or redirected is None:
        return ()
    parts = relative.split("/")
    if any(part.casefold() in VCS_FOLDERS for part in parts + redirected.split("/")):
        return ()
    choices = [relative]
    if len(parts) > 1:
        choices.append("/".join(parts[:-1]) + "/**")
    if len(parts) > 2:
        choices.append(parts[0] + "/**")
    return tuple(choices)


def _plain_words(command: object) -> list[str] | None:
    """The words of a plain single command (see the module docstring), ``None`` for anything else."""
    if not isinstance(command, str) or len(command) > _MAX_PLAIN:
        return None
    if any(mark in command for mark in ("`", "$(", "<(", ">(", "\n", "\r")):
        return None
    words = shell_tokens(_HARMLESS_REDIRECTS.sub(" ", command))
    if not words or any(is_operator(word) for word in words) or "=" in words[0]:
        return None
    return words


def _relative(path: str, workspace: str) -> str | None:
    """``path`` (relative to ``workspace`` or absolute) as a ``/``-separated path inside it; ``None`` outside."""
    workspace = posixpath.normpath(workspace)
    joined = posixpath.normpath(posixpath.join(workspace, path))
    if not joined.startswith(workspace.rstrip("/") + "/"):
        return None
    return joined[len(workspace.rstrip("/")) + 1 :]


def _glob_pattern(glob: str) -> re.Pattern[str]:
    out = []
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif glob[index] == "*":
            out.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(out), re.DOTALL)
