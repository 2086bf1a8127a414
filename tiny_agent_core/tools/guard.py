"""Workspace containment for the file tools (``read``, ``write``, ``edit``).

The reference resolves any path anywhere (notes §6.1). Here a path is resolved against the workspace and then
checked on its *real* path (``os.path.realpath``: every symlink resolved, ``..`` applied after resolution), so
``..``, absolute paths outside the workspace, and symlinks whose target leaves it are all refused. A file that
does not exist yet is checked through its resolved parent (realpath resolves the existing prefix and keeps the
rest), so a dangling symlink pointing outside is refused too.

The allowed roots are the workspace plus the roots the caller passes in: widening is an explicit
per-workspace setting (see :class:`~tiny_agent_core.tools.approval.ToolSettings`), never something a model can
ask for. The tools operate on the *resolved* path afterwards, so a symlink swapped in between the check and the
use of the final component is not followed out of the workspace. A concurrent process that swaps an
intermediate directory for a symlink can still race the check; closing that needs ``openat2`` with
``RESOLVE_BENEATH``, which Python does not expose. ``bash`` is not contained (a shell can reach anything): its
guard is the approval policy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tiny_agent_core.tools.base import ToolError

__all__ = ["PathOutsideWorkspace", "WorkspaceGuard"]


class PathOutsideWorkspace(ToolError):
    """A file tool's path resolves outside the workspace and every allowed root."""

    def __init__(self, message: str, *, requested: str, resolved: Path) -> None:
        super().__init__(message)
        self.requested = requested
        self.resolved = resolved


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


class WorkspaceGuard:
    """Resolves tool paths and refuses those whose real path leaves the allowed roots."""

    def __init__(self, workspace: str | os.PathLike[str], allowed_roots: Iterable[str | os.PathLike[str]] = ()):
        self._workspace = _real(workspace)
        roots = [self._workspace]
        for root in allowed_roots:
            real = _real(root)
            if real not in roots:
                roots.append(real)
        self._roots = tuple(roots)

    @property
    def workspace(self) -> Path:
        """The workspace's real path; the cwd of ``bash`` and the base of relative paths."""
        return self._workspace

    @property
    def roots(self) -> tuple[Path, ...]:
        """The workspace followed by the extra allowed roots, all real paths."""
        return self._roots

    def contains(self, real_path: Path) -> bool:
        """Whether an already resolved path lies inside one of the roots (a root itself counts)."""
        return any(real_path == root or real_path.is_relative_to(root) for root in self._roots)

    def resolve(self, requested: str) -> Path:
        """The real path a tool should use for ``requested``; raises :class:`PathOutsideWorkspace`.

        Relative paths are taken from the workspace, absolute paths as they are. The result may not exist yet.
        """
        if "\0" in requested:
            raise ToolError("path must not contain a NUL character")
        joined = os.path.join(self._workspace, requested)
        real = _real(joined)
        if self.contains(real):
            return real
        lexical = Path(os.path.normpath(joined))
        where = self._describe_roots()
        if self.contains(lexical):
            message = (
                f"Path {requested} resolves through a symlink to {real}, which is outside {where}; "
                "file tools are limited to the workspace."
            )
        else:
            message = f"Path {requested} is outside {where}; file tools are limited to the workspace."
        raise PathOutsideWorkspace(message, requested=requested, resolved=real)

    def resolve_writable(self, requested: str) -> Path:
        """As :meth:`resolve`, and refuses the session files tiny-agent keeps under ``.tiny-agent/sessions``.

        The model must not be able to rewrite the durable record of what it did (``bash`` still could; its guard
        is the approval policy).
        """
        path = self.resolve(requested)
        for root in self._roots:
            sessions = _real(root / ".tiny-agent" / "sessions")
            if path == sessions or path.is_relative_to(sessions):
                raise ToolError(
                    f"Path {requested} is inside the tiny-agent session folder; file tools may not change it."
                )
        return path

    def _describe_roots(self) -> str:
        if len(self._roots) == 1:
            return f"the workspace {self._workspace}"
        extra = ", ".join(str(root) for root in self._roots[1:])
        return f"the workspace {self._workspace} and the allowed roots ({extra})"
