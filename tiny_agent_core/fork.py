"""Fork a session before one of its user messages: a new v2 session holding the same earlier transcript.

"Re-run on…" a user message runs that prompt again on another model without touching the original session.
:func:`fork_before` writes a new session (same workspace, the new model in its header) and appends, through the
store, every transaction of the origin that came before the transaction of that user message, so the fork reduces
to the same transcript, active context and usage the origin had at that point. Then the caller sends the prompt.

Decisions:

* **Every id is new.** Fact, operation, step, attempt and result ids are re-allocated (consistently: each old id
  maps to one new id), so the index's per-request and per-tool rows of the fork never collide with the origin's.
  Provider tool-call ids (``call_…``) are the model's own and are kept. A compaction's ``sourceDigest`` is
  recomputed over the new entry ids. Timestamps are the fork's (the store sets them), so durations of the copied
  history are not meaningful in the fork; the origin keeps them.
* **Usage is copied** with its steps: the fork is a complete session, and comparing the origin with its re-run
  compares the same history plus each run.
* **Copied requests are counted once.** The fork's copied step attempts are the origin's physical requests, not
  new ones: a second sidecar, ``<fork file stem>.copies.json`` (``{"version": 1, "copiedAttempts": {<fork
  attempt id>: <origin attempt id>}}``, :func:`read_copies`), maps each to the attempt it copies, so the ledger
  counts each physical request once across origin and fork (see :mod:`tiny_agent_core.ledger.costs`).
  :func:`fork_whole` writes it too.
* **The link to the origin** cannot go in the header (exactly the reference's 8 keys, notes §5.2), so it is a
  sidecar beside the fork, ``<fork file stem>.origin.json``: ``{"version": 1, "originSessionId",
  "originFile", "beforeEntryId", "copiedTransactions"}`` (:func:`read_origin`).
* The origin must be idle where it is cut (a user message can only start a run when it is), and is only read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiny_agent_core.atomic_files import write_atomically
from tiny_agent_core.errors import SessionError
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore, read_session_file
from tiny_agent_core.small_files import read_small_file

__all__ = [
    "COPIES_SUFFIX",
    "ORIGIN_SUFFIX",
    "ForkError",
    "ForkOrigin",
    "copies_path",
    "fork_before",
    "fork_whole",
    "origin_path",
    "read_copies",
    "read_origin",
]

ORIGIN_SUFFIX = ".origin.json"
"""The sidecar beside a forked session file that names its origin."""
COPIES_SUFFIX = ".copies.json"
"""The sidecar beside a forked or copied session file that maps its copied step attempts to the originals."""
_SIDECAR_LIMIT = 16 * 1024 * 1024
"""Bytes of a copies sidecar read at most (a bigger one is ignored)."""

_ID_KEYS = frozenset(
    {
        "id",
        "operationId",
        "inputEntryId",
        "stepId",
        "attemptId",
        "contextThroughEntryId",
        "assistantEntryId",
        "toolStartedId",
        "resultEntryId",
        "finalEntryId",
        "inputThroughEntryId",
        "compactedThroughEntryId",
        "sourceEntryId",
    }
)
"""Keys of a fact, record or entry whose value is one of the session's own ids."""
_ID_LIST_KEYS = frozenset({"compactedEntryIds", "retainedEntryIds"})
_OPAQUE_KEYS = frozenset({"message", "arguments", "configurationSnapshot", "usage", "error", "result"})
"""Values copied as they are: model messages, tool arguments, snapshots — nothing in them is a session id."""


class ForkError(SessionError):
    """A session cannot be forked at the requested message (not a user message of it, or not at an idle point)."""


@dataclass(frozen=True, slots=True)
class ForkOrigin:
    """Where a forked session came from (its sidecar)."""

    origin_session_id: str
    origin_file: str
    """The origin's file name (in the same workspace's sessions folder)."""
    before_entry_id: str
    """The origin's user message the fork was cut before."""
    copied_transactions: int


def origin_path(session_file: Path) -> Path:
    """The origin sidecar of ``session_file``."""
    return session_file.with_name(session_file.stem + ORIGIN_SUFFIX)


def copies_path(session_file: Path) -> Path:
    """The copies sidecar of ``session_file``."""
    return session_file.with_name(session_file.stem + COPIES_SUFFIX)


def read_copies(session_file: Path) -> dict[str, str]:
    """The step attempts of ``session_file`` copied from another session: attempt id → the attempt id it copies.
    Empty when the session copied none (or its sidecar is unreadable, malformed or larger than 16 MB)."""
    data = read_small_file(copies_path(session_file), _SIDECAR_LIMIT)
    if data is None:
        return {}
    try:
        value = json.loads(data)
        copied = value["copiedAttempts"] if isinstance(value, dict) and value.get("version") == 1 else {}
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(copied, dict):
        return {}
    return {key: item for key, item in copied.items() if isinstance(key, str) and isinstance(item, str)}


def read_origin(session_file: Path) -> ForkOrigin | None:
    """The origin of a forked session, or ``None`` when it is not a fork (or its sidecar is unreadable)."""
    data = read_small_file(origin_path(session_file), _SIDECAR_LIMIT)
    if data is None:
        return None
    try:
        value = json.loads(data)
        return ForkOrigin(
            str(value["originSessionId"]),
            str(value["originFile"]),
            str(value["beforeEntryId"]),
            int(value["copiedTransactions"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


class _Renamer:
    """Old id → new id, allocated on first sight."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, old: str) -> str:
        new = self.ids.get(old)
        if new is None:
            new = self.ids[old] = facts.new_id()
        return new

    def rewrite(self, value: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _OPAQUE_KEYS:
                out[key] = item
            elif key in _ID_KEYS and isinstance(item, str):
                out[key] = self(item)
            elif key in _ID_LIST_KEYS and isinstance(item, list):
                out[key] = [self(entry) for entry in item]
            elif isinstance(item, Mapping):
                out[key] = self.rewrite(item)
            elif isinstance(item, list):
                out[key] = [self.rewrite(entry) if isinstance(entry, Mapping) else entry for entry in item]
            else:
                out[key] = item
        return out


def _transactions(store: SessionStore) -> list[list[dict[str, Any]]]:
    """The committed transactions of a (validated) session file, header excluded."""
    data = read_session_file(store.path, limit=store.state.repaired_length)
    out: list[list[dict[str, Any]]] = []
    for line in data.split(b"\n")[1:-1]:
        value = json.loads(line)
        out.append(value if isinstance(value, list) else [value])
    return out


def _is_user_entry(fact: Mapping[str, Any], entry_id: str) -> bool:
    entry = fact.get("entry")
    return (
        fact.get("kind") == "entry"
        and fact.get("id") == entry_id
        and isinstance(entry, Mapping)
        and isinstance(entry.get("message"), Mapping)
        and entry["message"].get("role") == "user"
    )


def _copy_transactions(transactions: list[list[dict[str, Any]]], fork: SessionStore) -> None:
    """Append ``transactions`` to ``fork`` with every id new, and write the fork's copies sidecar."""
    renamer = _Renamer()
    copied: dict[str, str] = {}
    for transaction in transactions:
        fork.append([_copy(fact, renamer, fork) for fact in transaction])
        for fact in transaction:
            record = fact.get("record")
            if isinstance(record, Mapping) and record.get("type") == "stepAttempt":
                copied[renamer(record["attemptId"])] = record["attemptId"]
    if copied:
        _write_json(copies_path(fork.path), {"version": 1, "copiedAttempts": copied})


def _copy(fact: Mapping[str, Any], renamer: _Renamer, fork: SessionStore) -> dict[str, Any]:
    copied = renamer.rewrite({key: value for key, value in fact.items() if key not in ("seq", "timestamp")})
    record = copied.get("record")
    if isinstance(record, dict) and record.get("type") == "compactionStarted":
        source = [*record["compactedEntryIds"], *record["retainedEntryIds"]]
        record["sourceDigest"] = facts.source_digest((eid, fork.state.entry_message(eid) or {}) for eid in source)
    return copied


def fork_before(
    origin: Path, entry_id: str, *, model: str, provider: str, workspace: Path | None = None
) -> tuple[SessionStore, str]:
    """Fork session file ``origin`` before its user message ``entry_id``: a new session, open for writing, for
    ``provider`` and ``model``, holding everything the origin held before that message, and the message's text
    (the prompt to run). The fork is created in ``workspace`` (default: the origin's header ``cwd`` when it exists,
    else the folder holding the origin's ``.tiny-agent/``).

    Raises :class:`ForkError` when ``entry_id`` is not a user message of ``origin`` or the origin was not idle
    there, :class:`~tiny_agent_core.errors.SessionCorruption` for a corrupt origin, :class:`SessionError` when the
    fork cannot be written (nothing is left behind then).
    """
    source = SessionStore.open(origin, read_only=True)
    prompt = source.state.entry_message(entry_id)
    if prompt is None or prompt.get("role") != "user" or not isinstance(prompt.get("content"), str):
        raise ForkError(f"{entry_id} is not a user message of session {source.session_id}.")
    transactions = _transactions(source)
    cut = next((i for i, tx in enumerate(transactions) if any(_is_user_entry(fact, entry_id) for fact in tx)), None)
    if cut is None:
        raise ForkError(f"{entry_id} is not a committed user message of session {source.session_id}.")
    if workspace is None:
        workspace = source.workspace
    fork = SessionStore.create(workspace, model=model, provider=provider)
    try:
        _copy_transactions(transactions[:cut], fork)
        if fork.state.operation.kind != "idle":
            raise ForkError(f"Session {source.session_id} was not idle before that message; it cannot be cut there.")
        _write_origin(fork.path, ForkOrigin(source.session_id, origin.name, entry_id, cut))
    except BaseException:
        fork.close()
        for leftover in (fork.path, origin_path(fork.path), copies_path(fork.path)):
            leftover.unlink(missing_ok=True)
        raise
    return fork, str(prompt["content"])


def fork_whole(origin: Path, *, workspace: Path | None = None) -> SessionStore:
    """A copy of the whole session file ``origin`` as a new session (every id new, as for :func:`fork_before`),
    open for writing, with the origin's provider and model; in ``workspace`` (default as for :func:`fork_before`).
    A copy ("Duplicate", an import of a session already here) is not a re-run: it gets no origin sidecar, only
    the copies sidecar (its requests are the origin's, counted once).

    Raises :class:`ForkError` when the origin has an open operation (finish or abandon it first),
    :class:`~tiny_agent_core.errors.SessionCorruption` for a corrupt origin, :class:`SessionError` when the copy
    cannot be written (nothing is left behind then).
    """
    source = SessionStore.open(origin, read_only=True)
    if source.state.operation.kind != "idle":
        raise ForkError(
            f"Session {source.session_id} has an unfinished operation; recover or abandon it, then copy it."
        )
    transactions = _transactions(source)
    header = source.state.header
    fork = SessionStore.create(workspace or source.workspace, model=header.model, provider=header.provider)
    try:
        _copy_transactions(transactions, fork)
    except BaseException:
        fork.close()
        for leftover in (fork.path, copies_path(fork.path)):
            leftover.unlink(missing_ok=True)
        raise
    return fork


def _write_origin(session_file: Path, origin: ForkOrigin) -> None:
    """Write the origin sidecar."""
    value = {
        "version": 1,
        "originSessionId": origin.origin_session_id,
        "originFile": origin.origin_file,
        "beforeEntryId": origin.before_entry_id,
        "copiedTransactions": origin.copied_transactions,
    }
    _write_json(origin_path(session_file), value)


def _write_json(target: Path, value: Any) -> None:
    """Write a sidecar atomically (temporary file, fsync, rename), mode 0600."""
    write_atomically(target, json.dumps(value).encode("utf-8"))
