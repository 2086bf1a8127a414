"""Reading the workspace's own context files (``AGENTS.md``, ``SKILL.md``) for the system prompt, as the hostile
repository contents they are.

A repository decides what is at ``AGENTS.md`` and under ``.tiny-agent/skills/``, and whatever is read there is sent
to the provider with every request. So, unlike the reference (which reads any path the names lead to):

- every file is opened through the file tools' :class:`~tiny_agent_core.tools.guard.WorkspaceGuard`: a symlink
  whose target leaves the workspace (``AGENTS.md`` → ``~/.aws/credentials``) is refused, and the final open never
  follows a link swapped in after the check;
- only a regular file is read, without blocking: a FIFO or a device in a file's place is skipped, never waited on;
- sizes are bounded: ``AGENTS.md`` is cut at :data:`AGENTS_MD_LIMIT` bytes (the prompt then says so), a skill is
  read only as far as its frontmatter can reach (:data:`SKILL_HEAD_LIMIT`), and the search for skills visits at
  most :data:`MAX_SKILL_ENTRIES` folder entries to a depth of :data:`MAX_SKILL_DEPTH`, never following a link to a
  folder, and lists at most :data:`MAX_SKILLS` of them.

A file that cannot be read this way is left out, as a missing one is.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from tiny_agent_core.small_files import read_at_most
from tiny_agent_core.tools.base import ToolError
from tiny_agent_core.tools.guard import WorkspaceGuard

__all__ = [
    "AGENTS_MD_LIMIT",
    "MAX_SKILLS",
    "MAX_SKILL_DEPTH",
    "MAX_SKILL_ENTRIES",
    "SKILLS_FOLDER",
    "SKILL_HEAD_LIMIT",
    "ProjectFile",
    "read_project_file",
    "skill_files",
]

_log = logging.getLogger(__name__)

AGENTS_MD_LIMIT = 64 * 1024
"""Most bytes of ``AGENTS.md`` put in the system prompt (about 16,000 tokens, sent with every request)."""
SKILL_HEAD_LIMIT = 16 * 1024
"""Most bytes of a ``SKILL.md`` read: its frontmatter (name and description) must lie within them."""
MAX_SKILLS = 200
"""Most skills listed in the system prompt."""
MAX_SKILL_ENTRIES = 10_000
"""Most folder entries the search for skills looks at."""
MAX_SKILL_DEPTH = 8
"""How deep under the skills folder a ``SKILL.md`` is looked for."""
SKILLS_FOLDER = ".tiny-agent/skills"
"""Where skills live, relative to the workspace."""


class ProjectFile:
    """The start of a workspace file: its real path, its text, and whether it was cut at the limit."""

    __slots__ = ("cut", "path", "text")

    def __init__(self, path: Path, text: str, cut: bool) -> None:
        self.path = path
        """The file's real path (inside the workspace)."""
        self.text = text
        self.cut = cut
        """Whether the file is longer than the limit it was read with (the text is its start)."""


def _decode_start(data: bytes) -> str:
    """The UTF-8 text of a file's first bytes, without a character the cut split (any other bad byte raises)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason != "unexpected end of data":
            raise
        return data[: error.start].decode("utf-8")


def read_project_file(workspace: Path, relative: str, limit: int) -> ProjectFile | None:
    """The first ``limit`` bytes of the workspace file ``relative`` as UTF-8 text (see the module docstring for what
    is refused); ``None`` when it is missing, not a regular file, outside the workspace or not UTF-8."""
    try:
        with WorkspaceGuard(workspace).locate(relative) as located:
            path = located.path
            fd = located.open(os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _log.info("%s is not a regular file; left out of the system prompt", path)
            return None
        data = read_at_most(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    cut = len(data) > limit
    try:
        text = _decode_start(data[:limit]) if cut else data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if cut:
        _log.warning("%s is longer than %d bytes; only its start goes into the system prompt", path, limit)
    return ProjectFile(path, text, cut)


def skill_files(workspace: Path) -> list[str]:
    """The workspace-relative paths of the ``SKILL.md`` files under :data:`SKILLS_FOLDER`, sorted, within the limits
    of the module docstring (a skills folder that is a link leading out of the workspace has none)."""
    try:
        root = WorkspaceGuard(workspace).resolve(SKILLS_FOLDER)
    except (ToolError, OSError):
        return []
    found: list[str] = []
    budget = MAX_SKILL_ENTRIES
    pending = [(root, SKILLS_FOLDER, 0)]
    while pending and budget > 0 and len(found) < MAX_SKILLS:
        folder, relative, depth = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    budget -= 1
                    if budget < 0:
                        break
                    if entry.is_dir(follow_symlinks=False):
                        if depth < MAX_SKILL_DEPTH:
                            pending.append((Path(entry.path), f"{relative}/{entry.name}", depth + 1))
                    elif entry.name == "SKILL.md":
                        found.append(f"{relative}/{entry.name}")
        except OSError:
            continue
    return sorted(found)[:MAX_SKILLS]
