"""The commands a prompt may be instead of a message, as the reference CLI reads them (notes §7.5, §7.4).

Rules (:func:`parse_command`):

- Only the whole prompt is a command; whitespace around it does not count.
- ``/compact`` alone compacts the session (as Session › Compact). With anything after it, it is a prompt.
- ``/skill:<name> <text>``: ``<name>`` runs to the first whitespace, ``<text>`` is the rest (stripped; it may be
  empty or span lines). The skill's ``SKILL.md`` is read by the host, not by the model (no read permission is
  asked), and ``<file content>\\n\\nUser: <text>`` is sent as the user message (:func:`skill_prompt`).
- Anything else, an unknown ``/word`` included, is a prompt sent as typed (as the reference does). ``/exit`` is not
  a command here: the window has Quit.

A skill is found by the ``name:`` of its frontmatter (else its folder's name), among the workspace's skills as the
system prompt lists them (:func:`~tiny_agent_core.agent.context.discover_skills`, which bounds the search); the first
in path order wins. Its file is read whole up to :data:`SKILL_BODY_LIMIT` bytes through the same guarded read as
``AGENTS.md`` (a link leading out of the workspace, a FIFO, a file that is not UTF-8 are refused); a longer file
gives its start and says so. An unknown name raises :class:`UnknownSkillError` with the reference's message
(``Unknown skill: <name>``) and the names there are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tiny_agent_core.agent.context import discover_skills
from tiny_agent_core.agent.project_files import SKILLS_FOLDER, read_project_file
from tiny_agent_core.errors import UnknownSkillError

__all__ = [
    "SKILL_BODY_LIMIT",
    "Command",
    "Compact",
    "UnknownSkillError",
    "UseSkill",
    "parse_command",
    "skill_prompt",
    "starts_a_session",
]

SKILL_BODY_LIMIT = 64 * 1024
"""Most bytes of a ``SKILL.md`` sent by ``/skill:<name>`` (as for ``AGENTS.md``: about 16,000 tokens)."""

_SKILL = re.compile(r"/skill:(\S*)(.*)", re.DOTALL)


@dataclass(frozen=True)
class Compact:
    """``/compact``: compact the session."""


@dataclass(frozen=True)
class UseSkill:
    """``/skill:<name> <text>``: send the skill's file with ``text``."""

    name: str
    text: str


Command = Compact | UseSkill
"""What a prompt may ask for instead of being sent as typed."""


def starts_a_session(prompt: str) -> bool:
    """Whether sending ``prompt`` with no session open starts one: every prompt but ``/compact`` (a new session has
    nothing to compact)."""
    return not isinstance(parse_command(prompt), Compact)


def parse_command(prompt: str) -> Command | None:
    """The command ``prompt`` is, or ``None`` when it is a message to send as typed (rules in the module
    docstring)."""
    stripped = prompt.strip()
    if stripped == "/compact":
        return Compact()
    found = _SKILL.fullmatch(stripped)
    if found is None:
        return None
    return UseSkill(found.group(1), found.group(2).strip())


def skill_prompt(workspace: Path, command: UseSkill) -> str:
    """The user message ``command`` sends: the skill's file, a blank line, ``User: <text>``. Reads the workspace
    (call it off the GUI thread); raises :class:`UnknownSkillError` when there is no such skill."""
    skills = discover_skills(workspace)
    found = next((skill for skill in skills if skill.name == command.name), None)
    if found is None:
        names = ", ".join(sorted({skill.name for skill in skills}))
        hint = f"the skills here are {names}" if names else f"this workspace has no {SKILLS_FOLDER}/*/SKILL.md"
        raise UnknownSkillError(f"Unknown skill: {command.name} ({hint}).")
    try:
        relative = found.location.relative_to(workspace.resolve())
    except ValueError:
        relative = None
    read = read_project_file(workspace, str(relative), SKILL_BODY_LIMIT) if relative is not None else None
    if read is None:
        raise UnknownSkillError(f"Unknown skill: {command.name} ({found.location} can no longer be read).")
    text = read.text
    if read.cut:
        text = f"{text}\n[{found.location.name} is longer than {SKILL_BODY_LIMIT:,} bytes: the rest is left out]"
    return f"{text}\n\nUser: {command.text}"
