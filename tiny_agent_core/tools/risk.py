"""How dangerous a tool call looks before it runs: destructive shell patterns and file changes in sensitive places.

Pure Python, no I/O: :func:`assess` reads the call's arguments (and, for ``write``/``edit``, the real target the
preview resolved) and returns a :class:`Risk` whose findings say what the call could destroy. The approval policy
asks before every risky call, whatever the standing or session permissions say, and offers no "always allow" for
it; the prompt shows the findings as a badge with "Deny" as its default.

Flagged (:class:`RiskKind`):

- ``delete-tree``: ``rm -r``/``-R``/``--recursive`` (any flag spelling: ``-rf``, ``-fr``, ``-r -f``) of anything but
  a regenerable folder named plainly inside the workspace (``build``, ``dist``, ``node_modules``, caches…),
  ``find … -delete``;
- ``force-push``: ``git push`` with ``--force``/``-f`` (also inside ``-uf``), ``--force-with-lease``, ``--mirror``,
  a ``+refspec``, or deleting a remote branch (``--delete``, ``-d``, ``:branch``);
- ``hard-reset`` (``git reset --hard``), ``git-clean`` (``git clean -f``);
- ``download-exec``: ``curl``/``wget`` piped into a shell or interpreter, or run through ``<(…)``/``$(…)``;
- ``world-writable``: ``chmod`` granting write to everyone (``777``, ``o+w``, ``a=rwx``);
- ``raw-device``: ``dd of=/dev/…`` or a redirection into a device; ``format-disk``: ``mkfs*``, ``wipefs``,
  ``fdisk``…;
- ``vcs-internals``: a write into ``.git/`` (or another version-control folder, whose hooks run);
- ``outside-workspace``: a write, deletion or redirection whose path resolves outside the workspace roots (``/tmp``
  and ``/dev/null`` excepted);
- ``elevated``: ``sudo``, ``doas``, ``su``, ``pkexec``;
- ``unchecked``: not found here; the approval policy uses it for a command too long to check in time.

Commands are split the way a shell would (quotes and backslashes removed, so ``\\rm`` and ``"rm"`` are ``rm``; every
``;``, ``&&``, ``||``, ``|``, ``&``, newline and parenthesis starts a new command); ``$(…)``, backticks, ``<(…)``,
``sh -c '…'`` and ``eval`` bodies are assessed as commands of their own; wrappers (``env``, ``nice``, ``xargs``,
``timeout``, ``command``…) and shell keywords (``then``, ``do``…) are skipped to the command they run; ``cd`` moves
the directory relative paths are resolved from. It is a tripwire for the common spellings, not a sandbox: the
sandbox and the workspace guard are what contain a command.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tiny_agent_core.tools.write import VCS_FOLDERS

__all__ = ["NO_RISK", "Finding", "Risk", "RiskKind", "assess", "assess_command", "is_operator", "shell_tokens"]


class RiskKind(StrEnum):
    """What a risky call could do."""

    DELETE_TREE = "delete-tree"
    FORCE_PUSH = "force-push"
    HARD_RESET = "hard-reset"
    GIT_CLEAN = "git-clean"
    DOWNLOAD_EXEC = "download-exec"
    WORLD_WRITABLE = "world-writable"
    RAW_DEVICE = "raw-device"
    FORMAT_DISK = "format-disk"
    VCS_INTERNALS = "vcs-internals"
    OUTSIDE_WORKSPACE = "outside-workspace"
    ELEVATED = "elevated"
    UNCHECKED = "unchecked"
    """The call could not be checked in time (set by the approval policy for a huge command)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason a call is risky."""

    kind: RiskKind
    text: str
    """A sentence for the user, naming what would be affected."""


@dataclass(frozen=True, slots=True)
class Risk:
    """The findings about one call; no findings means nothing destructive was recognised."""

    findings: tuple[Finding, ...] = ()

    @property
    def risky(self) -> bool:
        """Whether anything destructive was recognised."""
        return bool(self.findings)

    @property
    def kinds(self) -> frozenset[RiskKind]:
        """The kinds found."""
        return frozenset(finding.kind for finding in self.findings)

    @property
    def reasons(self) -> tuple[str, ...]:
        """The findings' sentences, in the order found."""
        return tuple(finding.text for finding in self.findings)


NO_RISK = Risk()
"""The risk of a call in which nothing destructive was recognised."""

_REGENERABLE = frozenset(
    {
        "build",
        "dist",
        "out",
        "target",
        "node_modules",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".cache",
        ".next",
        ".parcel-cache",
        "coverage",
        "htmlcov",
        ".coverage",
        "tmp",
        ".tmp",
    }
)
"""Folder names whose recursive removal inside the workspace is routine (outputs and caches a build recreates)."""

_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&", "(", ")", "\n"})
_PIPES = frozenset({"|", "|&"})
_KEYWORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}", "time", "coproc"})
_ELEVATORS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
_WRAPPERS = frozenset(
    {"env", "nice", "nohup", "command", "builtin", "exec", "stdbuf", "timeout", "xargs", "ionice", "chrt", "setsid",
     "unbuffer", "caffeinate", "flock", "watch", "strace", "ltrace", "time"}
)  # fmt: skip
_WRAPPER_OPTIONS_WITH_VALUE = {
    "sudo": frozenset("ugCDhpTrtU"),
    "doas": frozenset("uC"),
    "su": frozenset("cgGsw"),
    "env": frozenset("uCS"),
    "nice": frozenset("n"),
    "ionice": frozenset("cnp"),
    "stdbuf": frozenset("ioe"),
    "timeout": frozenset("sk"),
    "xargs": frozenset("IiLlnPdsEea"),
    "flock": frozenset("wEc"),
    "watch": frozenset("nd"),
}
_WRAPPERS_WITH_OPERAND = frozenset({"timeout", "flock", "chrt"})
"""Wrappers whose first operand is not the command (a duration, a lock file, a priority)."""
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
_INTERPRETERS = _SHELLS | frozenset(
    {"python", "python2", "python3", "perl", "ruby", "node", "php", "pwsh", "source", "."}
)
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk"})
_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/random", "/dev/urandom"}
)
_TEMPORARY = ("/tmp", "/var/tmp")
_MAX_DEPTH = 4
_FETCH_AND_RUN = re.compile(
    r"(?:^|[\s;&|(`])(?:(?:ba|z|da|k|mk|a)?sh|python[0-9.]*|perl|ruby|node|php|eval|source|\.)\s+"
    r"(?:-c\s+)?[\"']?(?:<\(|\$\(|`)\s*(?:curl|wget)\b"
)


def assess(
    tool_name: str,
    arguments: Mapping[str, Any],
    *,
    target: str | None = None,
    roots: Sequence[str | os.PathLike[str]] = (),
    home: str | None = None,
) -> Risk:
    """The risk of one call.

    ``roots`` are the folders the tools may work in (the workspace first, then the extra allowed roots; real
    paths; empty when unknown: then nothing is "outside"). ``target`` is the real path a ``write``/``edit``
    reaches when a symlink redirects the one named. ``home`` resolves ``~`` (default: the user's). Arbitrary
    arguments never raise.
    """
    root_paths = tuple(posixpath.normpath(os.fspath(root)) for root in roots)
    if tool_name in ("bash", "bg"):
        command = arguments.get("command")
        if not isinstance(command, str) or (tool_name == "bg" and arguments.get("action") != "start"):
            return NO_RISK
        return assess_command(command, roots=root_paths, home=home)
    if tool_name in ("write", "edit"):
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            return NO_RISK
        found = _Findings()
        named = _resolve(path, root_paths[0] if root_paths else None, home)
        places = [named if named is not None else path]
        if target is not None:
            places.append(posixpath.normpath(target))
        for place in dict.fromkeys(places):
            _check_written(found, place, root_paths, f"{tool_name} changes")
        return found.risk()
    return NO_RISK


def assess_command(command: str, *, roots: Sequence[str] = (), home: str | None = None) -> Risk:
    """The risk of a shell command run from ``roots[0]`` (see :func:`assess`)."""
    found = _Findings()
    _assess(command, found, tuple(roots), home, 0)
    return found.risk()


# -- the shell reader ---------------------------------------------------------------------------------------


def shell_tokens(command: str) -> list[str]:
    """``command``'s words (quotes and backslashes removed) and operators (``;``, ``&&``, ``>``…, a newline reads
    as ``;``), the way :func:`assess_command` reads it; unbalanced quotes are closed; never raises."""
    text = command.replace("\r", "\n").replace("\n", " ; ")
    for attempt in (text, text + '"', text + "'", text + "\\ "):
        lexer = shlex.shlex(attempt, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # a mid-command "#" must not hide what follows
        try:
            return list(lexer)
        except ValueError:
            continue
    return re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)


def is_operator(token: str) -> bool:
    """Whether a token of :func:`shell_tokens` is an operator (``;``, ``|``, ``>``, ``2>&``…) rather than a word."""
    return bool(token) and all(char in "();<>|&" for char in token)


def _split(command: str) -> list[tuple[list[str], str]]:
    """Simple commands with the separator that ends each (``""`` for the last)."""
    commands: list[tuple[list[str], str]] = []
    words: list[str] = []
    for token in shell_tokens(command):
        if token in _SEPARATORS or (is_operator(token) and not any(char in token for char in "<>")):
            commands.append((words, token))
            words = []
        else:
            words.append(token)
    commands.append((words, ""))
    return [(words, separator) for words, separator in commands if words]


def _substitutions(command: str) -> list[str]:
    """The bodies of the outermost ``$(…)``, ``<(…)``, ``>(…)`` and backticks (quoting ignored: a quoted one still
    runs); nested ones are found when a body is assessed in turn."""
    bodies: list[str] = []
    index = 0
    while index < len(command) - 1:
        if command[index] in "$<>" and command[index + 1] == "(":
            depth, end = 1, index + 2
            while end < len(command) and depth:
                depth += {"(": 1, ")": -1}.get(command[end], 0)
                end += 1
            bodies.append(command[index + 2 : end - 1 if depth == 0 else end])
            index = end
        else:
            index += 1
    parts = command.split("`")
    bodies.extend(parts[1::2])
    return [body for body in bodies if body.strip()]


# -- assessment ---------------------------------------------------------------------------------------------


class _Findings:
    def __init__(self) -> None:
        self._found: dict[tuple[RiskKind, str], None] = {}

    def add(self, kind: RiskKind, text: str) -> None:
        self._found[(kind, text)] = None

    def risk(self) -> Risk:
        return Risk(tuple(Finding(kind, text) for kind, text in self._found)) if self._found else NO_RISK


def _assess(command: str, found: _Findings, roots: tuple[str, ...], home: str | None, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if _FETCH_AND_RUN.search(command):
        found.add(RiskKind.DOWNLOAD_EXEC, "runs a script straight from the network")
    for body in _substitutions(command):
        if body != command:
            _assess(body, found, roots, home, depth + 1)
    cwd: str | None = roots[0] if roots else "."
    pipeline: list[str] = []
    for words, separator in _split(command):
        name, arguments, writes = _unwrap(words, found, roots, home, depth)
        for place in writes:
            _check_redirect(found, place, cwd, roots, home)
        if name:
            cwd = _command(name, arguments, found, cwd, roots, home, depth)
            pipeline.append(name)
        if separator not in _PIPES:
            _check_pipeline(pipeline, found)
            pipeline = []


def _unwrap(
    words: list[str], found: _Findings, roots: tuple[str, ...], home: str | None, depth: int
) -> tuple[str, list[str], list[str]]:
    """The command's name and arguments behind wrappers, assignments and keywords, and its redirection targets."""
    plain, writes = _redirections(words)
    command = _behind_prefixes(plain, found, roots, home, depth)
    if not command:
        return "", [], writes
    name, arguments = _name(command[0]), command[1:]
    if name in _SHELLS:
        _shell_string(arguments, found, roots, home, depth)
    elif name == "eval":
        _assess(" ".join(arguments), found, roots, home, depth + 1)
    return name, arguments, writes


def _redirections(words: list[str]) -> tuple[list[str], list[str]]:
    """``words`` without redirections (and their file-descriptor numbers), and the files they write."""
    plain: list[str] = []
    writes: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if is_operator(word):
            if plain and plain[-1].isdigit():
                plain.pop()  # the "2" of "2>file"
            following = words[index + 1] if index + 1 < len(words) else ""
            if ">" in word and following and not (word.endswith("&") and (following.isdigit() or following == "-")):
                writes.append(following)
            index += 2
            continue
        plain.append(word)
        index += 1
    return plain, writes


def _behind_prefixes(
    plain: list[str], found: _Findings, roots: tuple[str, ...], home: str | None, depth: int
) -> list[str]:
    """The command behind keywords, assignments, wrappers and elevators (``sudo`` is a finding; ``su -c`` is
    assessed as a command string, and then nothing is left)."""
    while plain:
        name = _name(plain[0])
        if name in _KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", plain[0], re.DOTALL):
            plain = plain[1:]
        elif name in _ELEVATORS:
            found.add(RiskKind.ELEVATED, f"runs as another user (usually root) through {name}")
            if name == "su":  # its command is a "-c" string
                _shell_string(plain[1:], found, roots, home, depth)
                return []
            plain = _skip_options(plain, name)
        elif name in _WRAPPERS:
            plain = _skip_options(plain, name)
        else:
            break
    return plain


def _shell_string(arguments: list[str], found: _Findings, roots: tuple[str, ...], home: str | None, depth: int) -> None:
    """Assess the command string of ``sh -c '…'`` (``-xc`` too) or ``su -c '…'``."""
    for position, argument in enumerate(arguments[:-1]):
        if argument == "--command" or (argument.startswith("-") and not argument.startswith("--") and "c" in argument):
            _assess(arguments[position + 1], found, roots, home, depth + 1)
            return


def _name(word: str) -> str:
    return posixpath.basename(word.lstrip("\\")) or word


def _skip_options(words: list[str], name: str) -> list[str]:
    """``words`` (a wrapper and what follows) without the wrapper, its options and its non-command operands."""
    with_value = _WRAPPER_OPTIONS_WITH_VALUE.get(name, frozenset())
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        if option == "--":
            break
        if not option.startswith("--") and option[-1:] in with_value and rest:
            rest.pop(0)
    if name in _WRAPPERS_WITH_OPERAND and rest:
        rest.pop(0)
    return rest


def _options_and_operands(arguments: Iterable[str]) -> tuple[list[str], list[str]]:
    options: list[str] = []
    operands: list[str] = []
    ended = False
    for argument in arguments:
        if not ended and argument == "--":
            ended = True
        elif not ended and argument.startswith("-") and argument != "-":
            options.append(argument)
        else:
            operands.append(argument)
    return options, operands


def _short(options: Iterable[str], letters: str) -> bool:
    return any(not option.startswith("--") and any(letter in option[1:] for letter in letters) for option in options)


_FILE_VERBS = {
    **dict.fromkeys(("rmdir", "unlink", "shred", "touch", "truncate", "mkdir", "tee"), "writes"),
    "mv": "moves",
}
"""Commands whose every operand is a place they change, and the verb a finding uses."""

_COPIERS = ("cp", "ln", "install", "rsync", "scp")
"""Commands whose last operand is the place they write."""


def _command(
    name: str,
    arguments: list[str],
    found: _Findings,
    cwd: str | None,
    roots: tuple[str, ...],
    home: str | None,
    depth: int,
) -> str | None:
    """Assess one simple command; return the directory the next one runs in."""
    options, operands = _options_and_operands(arguments)
    if name in ("cd", "pushd"):
        destination = operands[0] if operands else "~"
        return None if destination == "-" else _resolve(destination, cwd, home)
    if name == "rm":
        _rm(options, operands, found, cwd, roots, home)
    elif name in _FILE_VERBS:
        _check_all(found, operands, cwd, roots, home, _FILE_VERBS[name])
    elif name in _COPIERS and operands:
        _check_all(found, operands[-1:], cwd, roots, home, "writes")
    elif name in ("chmod", "chown", "chgrp") and operands:
        _change_mode(name, options, operands, found, cwd, roots, home)
    elif name == "find" and ("-delete" in arguments or _find_exec_removes(arguments)):
        found.add(RiskKind.DELETE_TREE, "find deletes every file it matches")
    elif name == "dd":
        for argument in arguments:
            if argument.startswith("of="):
                _check_redirect(found, argument[3:], cwd, roots, home)
    elif name.startswith("mkfs") or name in _FORMATTERS:
        found.add(RiskKind.FORMAT_DISK, f"{name} formats or repartitions a disk")
    elif name == "git":
        _git(arguments, found)
    return cwd


def _rm(
    options: list[str],
    operands: list[str],
    found: _Findings,
    cwd: str | None,
    roots: tuple[str, ...],
    home: str | None,
) -> None:
    if _short(options, "rR") or "--recursive" in options:
        heavy = [operand for operand in operands if not _regenerable(operand, cwd, roots)]
        if heavy or not operands:  # no operands: they come from elsewhere ("xargs rm -rf")
            found.add(RiskKind.DELETE_TREE, f"rm -r deletes {_quote(heavy)} and everything under it")
    _check_all(found, operands, cwd, roots, home, "deletes")


def _change_mode(
    name: str,
    options: list[str],
    operands: list[str],
    found: _Findings,
    cwd: str | None,
    roots: tuple[str, ...],
    home: str | None,
) -> None:
    if name == "chmod" and _world_writable(operands[0]):
        recursive = _short(options, "R") or "--recursive" in options
        how = "recursively " if recursive else ""
        found.add(
            RiskKind.WORLD_WRITABLE,
            f"chmod {operands[0]} {how}makes {_quote(operands[1:])} writable by every user",
        )
    _check_all(found, operands[1:], cwd, roots, home, "changes")


def _find_exec_removes(arguments: list[str]) -> bool:
    return any(
        argument in ("-exec", "-execdir", "-ok", "-okdir")
        and index + 1 < len(arguments)
        and _name(arguments[index + 1]) in ("rm", "shred", "unlink")
        for index, argument in enumerate(arguments)
    )


def _git(arguments: list[str], found: _Findings) -> None:
    rest = list(arguments)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path") and rest:
            rest.pop(0)
    if not rest:
        return
    subcommand, options, operands = rest[0], *_options_and_operands(rest[1:])
    if subcommand == "push":
        force = (
            _short(options, "f")
            or any(option.startswith(("--force", "--mirror")) for option in options)
            or any(operand.startswith("+") for operand in operands)
        )
        delete = _short(options, "d") or "--delete" in options or "--prune" in options
        delete = delete or any(operand.startswith(":") and len(operand) > 1 for operand in operands)
        if force:
            found.add(RiskKind.FORCE_PUSH, "git push --force overwrites the remote's history")
        if delete:
            found.add(RiskKind.FORCE_PUSH, "git push deletes a remote branch")
    elif subcommand == "reset" and "--hard" in options:
        found.add(RiskKind.HARD_RESET, "git reset --hard discards uncommitted changes")
    elif subcommand == "clean" and (_short(options, "f") or "--force" in options):
        found.add(RiskKind.GIT_CLEAN, "git clean -f deletes untracked files")


def _check_pipeline(names: list[str], found: _Findings) -> None:
    for index, name in enumerate(names):
        if name in _DOWNLOADERS and any(later in _INTERPRETERS for later in names[index + 1 :]):
            found.add(RiskKind.DOWNLOAD_EXEC, f"pipes what {name} downloads into a shell or interpreter")


def _world_writable(mode: str) -> bool:
    if re.fullmatch(r"[0-7]{1,4}", mode):
        return mode[-1] in "2367"
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)([-+=])([rwxXst]*)", clause)
        if match and match[2] in "+=" and "w" in match[3] and (not match[1] or "o" in match[1] or "a" in match[1]):
            return True
    return False


# -- places -------------------------------------------------------------------------------------------------


def _resolve(path: str, cwd: str | None, home: str | None) -> str | None:
    """The normalised absolute path of ``path`` from ``cwd``; ``None`` when it depends on what we cannot know."""
    if path == "~" or path.startswith("~/") or re.match(r"\$\{?HOME\}?(?:/|$)", path):
        base = home if home is not None else os.path.expanduser("~")
        path = base + path[path.index("/") :] if "/" in path else base
    if "$" in path or path.startswith("~"):
        return None
    if posixpath.isabs(path):
        return posixpath.normpath(path)
    return None if cwd is None else posixpath.normpath(posixpath.join(cwd, path))


def _inside(place: str, folders: Iterable[str]) -> bool:
    return any(place == folder or place.startswith(folder.rstrip("/") + "/") for folder in folders)


def _in_vcs_folder(path: str) -> bool:
    return any(part.casefold() in VCS_FOLDERS for part in path.replace("\\", "/").split("/"))


def _check_written(found: _Findings, place: str, roots: tuple[str, ...], verb: str) -> None:
    """``verb`` (``deletes``, ``edit changes``…) ``place``: flag version-control internals and outside places."""
    if _in_vcs_folder(place):
        found.add(RiskKind.VCS_INTERNALS, f"{verb} {place}, inside version-control internals (hooks run from there)")
    outside = posixpath.isabs(place) and roots and not _inside(place, roots)
    if outside and not _inside(place, _TEMPORARY) and place not in _SAFE_DEVICES:
        found.add(RiskKind.OUTSIDE_WORKSPACE, f"{verb} {place}, outside the workspace")


def _check_all(
    found: _Findings, operands: list[str], cwd: str | None, roots: tuple[str, ...], home: str | None, verb: str
) -> None:
    for operand in operands:
        place = _resolve(operand, cwd, home)
        if place is not None:
            _check_written(found, place, roots, verb)


def _check_redirect(found: _Findings, target: str, cwd: str | None, roots: tuple[str, ...], home: str | None) -> None:
    place = _resolve(target, cwd, home)
    if place is None:
        return
    if place.startswith("/dev/") and place not in _SAFE_DEVICES and not place.startswith("/dev/fd/"):
        found.add(RiskKind.RAW_DEVICE, f"writes straight to the device {place}")
        return
    _check_written(found, place, roots, "writes")


def _regenerable(operand: str, cwd: str | None, roots: tuple[str, ...]) -> bool:
    """A plainly named build output or cache folder, relative, inside the workspace (removing it is routine)."""
    if not operand or operand.startswith(("/", "~", "-")) or any(char in operand for char in "*?[]{}$`\\"):
        return False
    parts = [part for part in operand.split("/") if part not in ("", ".")]
    if not parts or ".." in parts or (parts[-1] not in _REGENERABLE and not parts[-1].endswith(".egg-info")):
        return False
    if cwd is None:
        return False
    return not roots or _inside(cwd, roots[:1])


def _quote(operands: list[str]) -> str:
    shown = [shlex.quote(operand) for operand in operands[:4]]
    more = f" and {len(operands) - 4} more" if len(operands) > 4 else ""
    return (", ".join(shown) + more) if shown else "the paths it is given"
