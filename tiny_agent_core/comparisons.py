"""Saved comparisons: one JSON record per compare run in the data folder, listed and reopened (no Qt here).

Every compare run (:class:`~tiny_agent_core.compare.CompareRun`) lives in its own folder,
``<data folder>/compare/<comparison id>/``, beside the copies of the workspace its runs work in, and writes
``comparison.json`` there when it starts and when it ends: the prompt, the workspace, the tools allowed, when it
started and ended, and per run the model, its session file, its copy, the figures of its
:class:`~tiny_agent_core.compare_reports.RunReport` and the changes it made (with their diffs), and which run was
kept. :func:`list_comparisons` lists them newest first; :func:`load_comparison` reopens one from its record alone,
so a comparison whose copies are gone still shows every run's figures and diff.

Rules:

* **Atomic writes**: temporary file, fsync, rename; mode 0600. A record that cannot be read or parsed is left
  out of the list (never half-read) and :func:`load_comparison` names the file in a :class:`ComparisonError`.
* **Bounded**: a record is read only up to :data:`MAX_RECORD_BYTES`; each run's saved diffs stop at
  :data:`MAX_SAVED_DIFF_CHARS` (later files are saved without a line diff, with the reason), its answer and error
  at :data:`MAX_SAVED_TEXT` characters; :func:`list_comparisons` reads at most :data:`MAX_LISTED` records.
* **Copies are removed, sessions kept**: :func:`discard_copies` (also after :func:`keep_run`) first moves each
  run's session file and its companion files (:func:`~tiny_agent_core.session_meta.companion_files`) out of its
  copy into the comparison's own sessions folder, ``<comparison folder>/.tiny-agent/sessions/``, then removes the
  copy (:func:`~tiny_agent_core.worktrees.remove_copy`), so every session can still be opened; the moved sessions
  are indexed again at their new place (the app's index database, with the comparison's folder as their
  workspace), so the runs' costs stay in the cost history when the next scan finds their copies gone.
* A saved copy holds only the manifest entries of the files its run changed: enough for
  :func:`~tiny_agent_core.worktrees.keep_changes` to check them, not to list changes again.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import stat
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal, cast

from tiny_agent_core.atomic_files import write_atomically
from tiny_agent_core.compare_reports import Contender, RunReport, RunStatus
from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.ledger.database import opened
from tiny_agent_core.ledger.index import index_session_file
from tiny_agent_core.paths import comparisons_folder
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.session.store import sessions_directory
from tiny_agent_core.session_meta import companion_files
from tiny_agent_core.usage import Usage
from tiny_agent_core.worktrees import FileChange, WorkspaceCopy, keep_changes, remove_copy

__all__ = [
    "MAX_LISTED",
    "MAX_RECORD_BYTES",
    "MAX_SAVED_DIFF_CHARS",
    "MAX_SAVED_TEXT",
    "RECORD_NAME",
    "Comparison",
    "ComparisonError",
    "discard_copies",
    "keep_run",
    "list_comparisons",
    "load_comparison",
    "record_bytes",
    "save_comparison",
    "write_record",
]

_log = logging.getLogger(__name__)

RECORD_NAME = "comparison.json"
"""A comparison's record, in its folder."""
VERSION = 1
MAX_RECORD_BYTES = 16 * 1024 * 1024
MAX_SAVED_DIFF_CHARS = 512 * 1024
MAX_SAVED_TEXT = 20_000
MAX_LISTED = 500
_STATUSES = frozenset({"preparing", "running", "completed", "failed", "aborted"})


class ComparisonError(TinyAgentError):
    """A saved comparison cannot be read, written or changed."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Comparison:
    """One compare run as saved: what was asked and how each run went."""

    id: str
    folder: Path
    """The comparison's folder (its record, its copies, its archived sessions)."""
    workspace: Path
    prompt: str
    allowed: tuple[str, ...]
    reports: list[RunReport]
    started_at: int = field(default_factory=_now_ms)
    """Milliseconds since the epoch."""
    ended_at: int | None = None
    kept: int | None = None
    """The index of the run whose changes were applied to the workspace ("keep this one")."""
    copies_removed: bool = False

    @property
    def record_path(self) -> Path:
        """The comparison's ``comparison.json``."""
        return self.folder / RECORD_NAME

    @property
    def title(self) -> str:
        """The prompt's first line, shortened, for lists."""
        line = " ".join(self.prompt.split())
        return line if len(line) <= 80 else line[:79] + "…"

    def to_json(self) -> dict[str, Any]:
        """The record's JSON value."""
        return {
            "version": VERSION,
            "id": self.id,
            "workspace": str(self.workspace),
            "prompt": self.prompt,
            "allowed": list(self.allowed),
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "kept": self.kept,
            "copiesRemoved": self.copies_removed,
            "runs": [_report_json(report) for report in self.reports],
        }


def _text(value: str | None) -> str | None:
    return value if value is None or len(value) <= MAX_SAVED_TEXT else value[: MAX_SAVED_TEXT - 1] + "…"


def _changes_json(changes: list[FileChange]) -> list[dict[str, Any]]:
    budget = MAX_SAVED_DIFF_CHARS
    out: list[dict[str, Any]] = []
    for change in changes:
        diff, note = change.diff, change.note
        if diff is not None and len(diff) > budget:
            diff, note = None, "the diff was too large to save with the comparison"
        budget -= len(diff or "")
        out.append(
            {
                "path": change.path,
                "status": change.status,
                "diff": diff,
                "added": change.added,
                "removed": change.removed,
                "note": note,
            }
        )
    return out


def _copy_json(copy: WorkspaceCopy, changes: list[FileChange]) -> dict[str, Any]:
    changed = {change.path for change in changes}
    return {
        "path": str(copy.path),
        "original": str(copy.original),
        "kind": copy.kind,
        "root": str(copy.root) if copy.root is not None else None,
        "manifest": {path: digest for path, digest in copy.manifest.items() if path in changed},
        "skipped": list(copy.skipped),
    }


def _report_json(report: RunReport) -> dict[str, Any]:
    profile = report.contender.profile
    return {
        "profile": {"id": profile.id, "name": profile.name, "baseUrl": profile.base_url},
        "model": report.contender.model,
        "status": report.status,
        "sessionFile": str(report.session_path) if report.session_path is not None else None,
        "sessionId": report.session_id,
        "copy": _copy_json(report.copy, report.changes) if report.copy is not None else None,
        "wallMs": report.wall_ms,
        "requests": report.requests,
        "stepIds": sorted(report.step_ids),
        "tools": dict(report.tools),
        "usage": report.usage.as_dict() if report.usage is not None else None,
        "unknownUsage": report.unknown_usage,
        "cost": format(report.cost, "f") if report.cost is not None else None,
        "unknownCost": report.unknown_cost,
        "costSources": sorted(report.cost_sources),
        "answer": _text(report.answer),
        "error": _text(report.error),
        "changes": _changes_json(report.changes),
    }


def _path(value: Any) -> Path | None:
    return Path(value) if isinstance(value, str) and value else None


def _inside(value: Any, folder: Path) -> Path:
    """``value`` as a path that is inside ``folder``, following links: every copy of a comparison is made in its own
    folder, and discarding the copies deletes these paths, so a record must not name anything else."""
    path = Path(value)
    if not path.is_absolute() or not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
        raise ValueError(f"the copy {str(path)!r} is not inside the comparison's folder")
    return path


def _copy_from(value: Mapping[str, Any], folder: Path) -> WorkspaceCopy:
    kind = value["kind"]
    if kind not in ("worktree", "copy"):
        raise ValueError(f"unknown copy kind {kind!r}")
    root = _path(value.get("root"))
    return WorkspaceCopy(
        _inside(value["path"], folder),
        Path(value["original"]),
        cast(Literal["worktree", "copy"], kind),
        {str(k): str(v) for k, v in dict(value["manifest"]).items()},
        tuple(str(item) for item in value["skipped"]),
        _inside(root, folder) if root is not None else None,
    )


def _change_from(value: Mapping[str, Any]) -> FileChange:
    status = value["status"]
    if status not in ("added", "modified", "deleted"):
        raise ValueError(f"unknown change status {status!r}")
    diff = value.get("diff")
    return FileChange(
        str(value["path"]),
        status,
        diff if isinstance(diff, str) else None,
        int(value["added"]),
        int(value["removed"]),
        str(value.get("note") or ""),
    )


def _report_from(value: Mapping[str, Any], folder: Path) -> RunReport:
    profile = value["profile"]
    contender = Contender(
        ProviderProfile(str(profile["id"]), str(profile["name"]), str(profile["baseUrl"])), value["model"]
    )
    status = value["status"]
    if status not in _STATUSES:
        raise ValueError(f"unknown run status {status!r}")
    cost = value.get("cost")
    usage = value.get("usage")
    return RunReport(
        contender,
        status=cast(RunStatus, status),
        copy=_copy_from(value["copy"], folder) if value.get("copy") else None,
        session_path=_path(value.get("sessionFile")),
        session_id=value.get("sessionId"),
        wall_ms=float(value["wallMs"]) if value.get("wallMs") is not None else None,
        requests=int(value["requests"]),
        step_ids={str(step) for step in value.get("stepIds", [])},
        tools=Counter({str(k): int(v) for k, v in dict(value["tools"]).items()}),
        usage=Usage.from_dict(usage) if usage is not None else None,
        unknown_usage=int(value["unknownUsage"]),
        cost=Decimal(cost) if cost is not None else None,
        unknown_cost=int(value["unknownCost"]),
        cost_sources={str(source) for source in value.get("costSources", [])},
        answer=value.get("answer"),
        error=value.get("error"),
        changes=[_change_from(change) for change in value.get("changes", [])],
    )


def _comparison_from(folder: Path, value: Any) -> Comparison:
    if not isinstance(value, dict) or value.get("version") != VERSION:
        raise ValueError(f"not a version {VERSION} comparison record")
    if value["id"] != folder.name:  # each comparison is saved in a folder named for its id: no two share one
        raise ValueError(f"its id {str(value['id'])!r} is not the name of its folder")
    kept = value.get("kept")
    return Comparison(
        id=folder.name,
        folder=folder,
        workspace=Path(value["workspace"]),
        prompt=str(value["prompt"]),
        allowed=tuple(str(name) for name in value["allowed"]),
        reports=[_report_from(run, folder) for run in value["runs"]],
        started_at=int(value["startedAt"]),
        ended_at=int(value["endedAt"]) if value.get("endedAt") is not None else None,
        kept=int(kept) if kept is not None else None,
        copies_removed=bool(value.get("copiesRemoved")),
    )


def record_bytes(comparison: Comparison) -> bytes:
    """``comparison``'s record as written. Not blocking: take it on the thread that changes the reports, then write
    it elsewhere (:func:`write_record`)."""
    return json.dumps(comparison.to_json(), ensure_ascii=False, indent=1).encode("utf-8")


def save_comparison(comparison: Comparison) -> None:
    """Write ``comparison``'s record atomically (creating its folder). Blocking. Raises :class:`ComparisonError`."""
    write_record(comparison.folder, record_bytes(comparison))


def write_record(folder: Path, data: bytes) -> None:
    """Write a record (:func:`record_bytes`) into ``folder`` atomically, creating the folder. Blocking. Raises
    :class:`ComparisonError`."""
    target = folder / RECORD_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(target, data)
    except OSError as error:
        raise ComparisonError(
            f"The comparison could not be saved to {target}: {error.strerror or error}. Free some space in the "
            "data folder; the runs' sessions are saved apart."
        ) from error


def load_comparison(folder: Path) -> Comparison:
    """The comparison saved in ``folder``. Blocking. Raises :class:`ComparisonError` naming the record."""
    path = folder / RECORD_NAME
    try:
        # Not following a link, not waiting on a FIFO put in the record's place: only a regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ComparisonError(f"The comparison record {path} is not a regular file; not read.")
            data = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as error:
        raise ComparisonError(f"The comparison record {path} cannot be read: {error.strerror or error}.") from error
    if len(data) > MAX_RECORD_BYTES:
        raise ComparisonError(f"The comparison record {path} is larger than {MAX_RECORD_BYTES:,} bytes; not read.")
    try:
        return _comparison_from(folder, json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError, InvalidOperation) as error:
        raise ComparisonError(
            f"The comparison record {path} is damaged ({error}); delete its folder to drop it from the list."
        ) from error


def list_comparisons(folder: Path | None = None) -> list[Comparison]:
    """The comparisons saved under ``folder`` (default :func:`comparisons_folder`), newest first; unreadable
    records are left out (logged). At most :data:`MAX_LISTED`. Blocking."""
    root = folder if folder is not None else comparisons_folder()
    try:
        with os.scandir(root) as entries:
            candidates = [Path(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    except OSError as error:
        raise ComparisonError(f"The comparisons folder {root} cannot be read: {error.strerror or error}.") from error
    out: list[Comparison] = []
    for candidate in sorted(candidates, key=lambda path: path.name, reverse=True)[:MAX_LISTED]:
        if not (candidate / RECORD_NAME).is_file():
            continue
        try:
            out.append(load_comparison(candidate))
        except ComparisonError as error:
            _log.warning("%s", error)
    out.sort(key=lambda comparison: (comparison.started_at, comparison.id), reverse=True)
    return out


def _archive_session(comparison: Comparison, report: RunReport) -> None:
    """Move the run's session file and its companion files out of its copy into the comparison's sessions folder."""
    copy, session = report.copy, report.session_path
    if copy is None or session is None or not session.is_relative_to(copy.path) or not session.is_file():
        return
    home = sessions_directory(comparison.folder)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for path in (*companion_files(session), session):
        shutil.move(path, home / path.name)
    report.session_path = home / session.name


def _reindex(comparison: Comparison) -> None:
    """Index the comparison's sessions at their place in its folder; a failure is logged (a rebuild catches up)."""
    try:
        with opened() as conn:
            for report in comparison.reports:
                path = report.session_path
                if path is not None and path.is_relative_to(comparison.folder) and path.is_file():
                    index_session_file(conn, path, comparison.folder)
    except (TinyAgentError, OSError, sqlite3.Error) as error:
        _log.warning("the moved sessions of comparison %s could not be indexed again: %s", comparison.id, error)


def discard_copies(comparison: Comparison) -> None:
    """Remove every run's copy of the workspace, keeping the session files (moved into the comparison's folder and
    indexed there), and save the record. Blocking. Raises :class:`ComparisonError` (the copies removed so far stay
    removed)."""
    try:
        for report in comparison.reports:
            if report.copy is None:
                continue
            _archive_session(comparison, report)
            remove_copy(report.copy)
            report.copy = None
    except (OSError, TinyAgentError) as error:
        save_comparison(comparison)
        raise ComparisonError(f"A copy of the comparison could not be removed: {error}") from error
    finally:
        _reindex(comparison)
    comparison.copies_removed = True
    save_comparison(comparison)


def keep_run(comparison: Comparison, index: int) -> None:
    """Apply run ``index``'s changes to the workspace (:func:`~tiny_agent_core.worktrees.keep_changes`, which may
    refuse with :class:`~tiny_agent_core.worktrees.KeepConflictError` and write nothing), then remove every copy.
    Blocking."""
    report = comparison.reports[index]
    if report.copy is None:
        raise ComparisonError(
            "The copies of this comparison were removed; its changes can no longer be applied. Apply the diff by "
            "hand, or run the compare again."
        )
    keep_changes(report.copy, report.changes)
    comparison.kept = index
    discard_copies(comparison)
