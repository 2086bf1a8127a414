"""The session store: create, open, append to and close v2 session files (reference notes §5.1, §5.13).

Compared with the reference store this one

* appends in O(size of the transaction): the candidate line is validated against the in-memory state
  (:func:`stage_transaction`), then written, flushed and ``fsync``\\ ed; the file is never re-read or re-reduced.
  A rejected transaction raises :class:`TransactionRejectedError` and changes neither the file nor the state;
  a failed write or fsync truncates the partial bytes away, undoes the state and raises :class:`SessionError`
  (any other exception there, e.g. :class:`KeyboardInterrupt`, is undone the same way and re-raised); if the
  truncation itself fails the store closes, and the next writable open repairs the torn tail;
* holds an exclusive OS lock (``flock``) on the file while it is open for writing, so a second writer, in this
  process or another, gets :class:`SessionLockedError`; ``read_only`` opening takes no lock and always works;
* is durable against power loss as well as process crashes (``fsync`` of the file after every append, of the
  directory after creating a file);
* creates a file atomically: it appears with its complete header or not at all (a full disk leaves nothing);
* can be reopened without reducing the file again: :meth:`SessionStore.close_keeping` gives the closed store's state
  with a SHA-256 digest of the bytes it covers (a :class:`SessionSnapshot`), and :meth:`SessionStore.open` with
  ``resume=`` reuses that state when the file's committed prefix is still exactly those bytes — the state was
  validated from them — and reduces the file as usual otherwise (it changed, grew or shrank);
* refuses, before writing anything, a transaction that has no valid JSON line (a lone surrogate, NaN/±inf),
  with :class:`TransactionRejectedError` ``MALFORMED_JSON``, as the reducer would reject it.

Files live in ``<workspace>/.tiny-agent/sessions/<UTC stamp with ':' and '.' → '-'>_<uuidv7>.jsonl``, are
created exclusively with mode 0600 and re-chmodded to 0600 on every writable open. Opening for writing truncates
a torn tail (bytes after the last LF) before anything else, and requires the header id to match the file name.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from tiny_agent_core.errors import (
    SessionChangedError,
    SessionCorruption,
    SessionError,
    SessionLockedError,
    SessionTooLargeError,
    TransactionRejectedError,
)
from tiny_agent_core.session.fact_types import SessionFact
from tiny_agent_core.session.facts import new_id
from tiny_agent_core.session.framing import committed_length, require_header_line
from tiny_agent_core.session.reducer import TransactionObserver, apply_transaction, reduce_session, stage_transaction
from tiny_agent_core.session.state import SessionState
from tiny_agent_core.small_files import read_at_most

if TYPE_CHECKING:
    from hashlib import _Hash
__all__ = [
    "CLOSING_RESERVE",
    "ENVIRONMENT_IDENTITY_VARIABLE",
    "SESSION_FILE_MAX",
    "SessionSnapshot",
    "SessionStore",
    "environment_identity",
    "find_session",
    "read_session_file",
    "require_header_line",
    "session_file_name",
    "session_workspace",
    "sessions_directory",
]

ENVIRONMENT_IDENTITY_VARIABLE = "TINY_AGENT_ENVIRONMENT_IDENTITY"
SESSION_FILE_MAX = 512 * 1024 * 1024
"""The largest session file the app reads whole (and lets a session grow to). A file is held in memory while it
is validated, several times its size, and a repository decides what lies in its sessions folder; a 5,000-message
session is about 7 MB."""
_UUID7_ANY_CASE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE)
_FILE_NAME = re.compile(r".+_([0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.jsonl")
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
CommitObserver = TransactionObserver
"""Hears each committed transaction's facts, typed (:mod:`tiny_agent_core.session.fact_types`)."""
# link() errors of file systems without hard links (FAT, exFAT, some network shares): rename() instead.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK})


def environment_identity(workspace: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> str:
    """``TINY_AGENT_ENVIRONMENT_IDENTITY`` (trimmed) if non-empty, else the realpath of ``workspace`` (§5.9)."""
    override = (os.environ if environ is None else environ).get(ENVIRONMENT_IDENTITY_VARIABLE, "").strip()
    return override or os.path.realpath(workspace)


def sessions_directory(workspace: str | os.PathLike[str]) -> Path:
    """``<workspace>/.tiny-agent/sessions`` (not resolved, not created)."""
    return Path(workspace) / ".tiny-agent" / "sessions"


def session_workspace(session_file: str | os.PathLike[str]) -> Path:
    """The workspace whose :func:`sessions_directory` holds ``session_file`` (its folder's grandparent)."""
    return Path(session_file).parent.parent.parent


def session_file_name(created: datetime, session_id: str) -> str:
    """``<ISO-8601 UTC with ms, ':' and '.' → '-'>_<id>.jsonl``, e.g. ``2026-08-03T03-55-50-062Z_<id>.jsonl``."""
    created = created.astimezone(UTC)
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S") + f"-{created.microsecond // 1000:03d}Z"
    return f"{stamp}_{session_id}.jsonl"


def find_session(workspace: str | os.PathLike[str], session_id: str) -> Path:
    """The file of session ``session_id`` in ``workspace``, found as the reference does (``--session <id>``).

    Exactly one regular, non-symlink file must end with ``_<id>.jsonl`` and its realpath must be inside the
    sessions directory; otherwise :class:`SessionError` (``Invalid session ID``, ``Session not found``,
    ``Duplicate session ID``, ``Unsafe session path``).
    """
    if not _UUID7_ANY_CASE.fullmatch(session_id):
        raise SessionError(f"Invalid session ID: {session_id}")
    try:
        directory = Path(os.path.realpath(sessions_directory(workspace), strict=True))
        names = [
            entry.name
            for entry in os.scandir(directory)
            if entry.name.endswith(f"_{session_id}.jsonl") and entry.is_file(follow_symlinks=False)
        ]
    except OSError:
        raise SessionError(f"Session not found: {session_id}") from None
    if len(names) != 1:
        raise SessionError(f"{'Duplicate session ID' if names else 'Session not found'}: {session_id}")
    path = directory / names[0]
    if Path(os.path.realpath(path)).parent != directory:
        raise SessionError(f"Unsafe session path: {session_id}")
    return path


def read_session_file(path: str | os.PathLike[str], *, start: int = 0, limit: int = -1) -> bytes:
    """The bytes of session file ``path`` from offset ``start`` to its end (``limit`` bytes at most, when not
    negative), opened without blocking and without following a symbolic link. Read to its end, more than
    :data:`SESSION_FILE_MAX` bytes raise :class:`SessionTooLargeError` (checked on the size first).

    Session files are found in workspace folders, which a repository controls: a FIFO put in a session's place would
    block a plain ``open``/``read`` forever, and a link would read a file elsewhere. A link raises ``OSError``
    (``ELOOP``); anything but a regular file raises :class:`SessionError`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        return _read_regular(fd, path, start, limit)
    finally:
        os.close(fd)


def _read_regular(fd: int, path: str | os.PathLike[str], start: int = 0, limit: int = -1) -> bytes:
    """:func:`read_session_file` on an open descriptor (which must be a regular file)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise SessionError(f"Not a regular file: {os.fspath(path)}")
    if limit < 0 and info.st_size - start > SESSION_FILE_MAX:
        raise _too_large(path, info.st_size)
    if start:
        os.lseek(fd, start, os.SEEK_SET)
    data = read_at_most(fd, SESSION_FILE_MAX + 1 if limit < 0 else limit)
    if limit < 0 and len(data) > SESSION_FILE_MAX:  # it grew while being read
        raise _too_large(path, start + len(data))
    return data


CLOSING_RESERVE = 16 * 1024 * 1024
"""The last bytes below :data:`SESSION_FILE_MAX` only facts that wind an operation down may use (:func:`_winds_down`):
a session that reaches the limit mid-run can still be stopped, recovered or abandoned, never left open for good.
16 MiB holds the results of a message's 128 pending tool calls at 50 KiB each, twice over."""

_WINDING_DOWN_RECORDS = frozenset({"abortRequested", "stepFailed", "operationFinished"})


def _winds_down(transaction: list[dict[str, Any]]) -> bool:
    """Whether every fact of ``transaction`` only settles what is already running: usage, a tool's result, an abort,
    a failed step or an operation's end (nothing that starts a step, a tool or an operation)."""
    for fact in transaction:
        kind = fact.get("kind")
        if kind == "usage":
            continue
        body = fact.get(kind) if kind in ("record", "entry") else None
        if not isinstance(body, Mapping):
            return False
        if kind == "record" and body.get("type") in _WINDING_DOWN_RECORDS:
            continue
        message = body.get("message")
        if kind == "entry" and isinstance(message, Mapping) and message.get("role") == "tool":
            continue
        return False
    return True


def _too_large(path: str | os.PathLike[str], size: int) -> SessionTooLargeError:
    return SessionTooLargeError(
        f"Session file {os.fspath(path)} is {size / 2**20:,.0f} MiB; files over {SESSION_FILE_MAX // 2**20} MiB are "
        "not opened (reading one would take several times that in memory). Move it out of the sessions folder."
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _require_inside(sessions: Path, workspace: str) -> Path:
    """The real path of a workspace's sessions folder; :class:`SessionError` when links lead it out of the
    workspace (the folder is part of the repository: a link planted there would make every new session a file
    written somewhere else, ``~/.config/autostart`` say)."""
    real = Path(os.path.realpath(sessions))
    if not real.is_relative_to(workspace):
        raise SessionError(
            f"The sessions folder {sessions} leads to {real}, outside the workspace {workspace}, through a link: "
            "tiny-agent does not write sessions outside the workspace. Remove the link, or make it a folder."
        )
    return real


def _create_complete(directory: Path, path: Path, header_line: bytes, session_id: str) -> int:
    """Create ``path`` holding ``header_line``, atomically; returns its fd, open for appending and locked.

    The header goes to ``.<name>.<random>.tmp`` (mode 0600, exclusive) and is fsynced; then the temporary name is
    hard-linked to ``path`` (``FileExistsError`` if it exists) and removed, and the folder is fsynced. Where the
    file system has no hard links, ``rename`` is used after checking that ``path`` does not exist. On any
    failure both names are removed and the error is re-raised.
    """
    temporary = directory / f".{path.name}.{os.urandom(6).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    created: list[Path] = [temporary]
    try:
        os.fchmod(fd, 0o600)
        _lock(fd, temporary, session_id)
        _write_all(fd, header_line)
        os.fsync(fd)
        try:
            os.link(temporary, path, follow_symlinks=False)
        except OSError as error:
            if error.errno not in _NO_HARD_LINKS or os.path.lexists(path):
                raise
            os.rename(temporary, path)
        created.append(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        _fsync_directory(directory)
    except BaseException:
        os.close(fd)
        for name in created:
            with contextlib.suppress(OSError):
                os.unlink(name)
        raise
    return fd


def _lock(fd: int, path: Path, session_id: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLockedError(
                f"Session {session_id} is open for writing elsewhere (another window or process): close it there, "
                "then try again."
            ) from None
        raise SessionError(f"Cannot lock session file {path}: {error.strerror}") from error


@dataclass(frozen=True, slots=True, eq=False)
class SessionSnapshot:
    """A closed store's reduced state and the SHA-256 digest of the committed bytes it was reduced from (see
    :meth:`SessionStore.close_keeping`); :meth:`SessionStore.open` ``resume=`` reuses it at most once."""

    path: Path
    state: SessionState
    digest: bytes
    """SHA-256 of the file's first ``state.repaired_length`` bytes (header and every committed transaction)."""


def _reduce(
    data: bytes, observer: CommitObserver | None, resumable: bool, resume: SessionSnapshot | None
) -> tuple[SessionState, _Hash | None, bool]:
    """The state of a session file's bytes, the digest of its committed bytes when ``resumable`` (or resuming), and
    whether the state is ``resume``'s: reused when the committed prefix is exactly the bytes ``resume`` was reduced
    from (then ``observer`` hears nothing: there is no new transaction)."""
    digest = None
    if resume is not None:
        end = committed_length(data)
        if end == resume.state.repaired_length:
            digest = hashlib.sha256(memoryview(data)[:end])
            if digest.digest() == resume.digest:
                return resume.state, digest, True
    state = reduce_session(data, observer)
    if (resumable or resume is not None) and digest is None:
        digest = hashlib.sha256(memoryview(data)[: state.repaired_length])
    return state, digest, False  # a digest computed above covers the same committed bytes


class SessionStore:
    """One open session file: its reduced :attr:`state` and, unless read-only, the exclusive right to append.

    Use :meth:`create` or :meth:`open`; close with :meth:`close` (or ``with``), which releases the lock.
    Appends are serialized by a lock, so one store may be shared between threads.
    """

    def __init__(self, path: Path, state: SessionState, fd: int | None) -> None:
        """Internal: use :meth:`create` or :meth:`open`."""
        self.path = path
        self._state = state
        self._fd = fd
        self._mutex = threading.Lock()
        self._observers: list[CommitObserver] = []
        self._closed = False
        self._digest: _Hash | None = None
        self.resumed = False
        """Whether :meth:`open` reused a :class:`SessionSnapshot`'s state instead of reducing the file."""

    # --- opening -------------------------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        workspace: str | os.PathLike[str],
        *,
        model: str,
        provider: str = "openrouter",
        cwd: str | None = None,
        environment: str | None = None,
        now: datetime | None = None,
        session_id: str | None = None,
        resumable: bool = False,
    ) -> Self:
        """Create a new session file in ``workspace`` and open it for writing (``resumable`` as for :meth:`open`).

        The header has exactly the reference's 8 keys; ``cwd`` defaults to the workspace's realpath and
        ``environment`` to :func:`environment_identity`. The file appears complete or not at all: the header is
        written and fsynced under a temporary name, then hard-linked to the session's name (which never replaces
        an existing file). Any failure (a full disk, a read-only folder) leaves no file behind and raises
        :class:`SessionError`.
        """
        created = now or datetime.now(UTC)
        identifier = session_id or new_id()
        workspace_path = os.path.realpath(workspace)
        header = {
            "kind": "header",
            "version": 2,
            "id": identifier,
            "createdAt": int(created.timestamp() * 1000),
            "cwd": cwd or workspace_path,
            "provider": provider,
            "model": model,
            "environmentIdentity": environment or environment_identity(workspace),
        }
        line = (_DUMPS(header) + "\n").encode("utf-8", "surrogatepass")  # the reducer refuses a lone surrogate
        try:
            state = reduce_session(line)
        except SessionCorruption as error:
            raise ValueError(f"invalid session header ({error.code}): {header}") from error
        requested = sessions_directory(workspace)
        try:
            _require_inside(requested, workspace_path)
            requested.mkdir(parents=True, exist_ok=True, mode=0o700)
            directory = _require_inside(requested, workspace_path)
            path = directory / session_file_name(created, identifier)
            fd = _create_complete(directory, path, line, identifier)
        except OSError as error:
            raise SessionError(
                f"Could not create session {identifier} in {requested}: {error.strerror or error}"
            ) from error
        return cls._opened(path, state, fd, None, hashlib.sha256(line) if resumable else None)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        observer: CommitObserver | None = None,
        resumable: bool = False,
        resume: SessionSnapshot | None = None,
    ) -> Self:
        """Open an existing session file.

        For writing (the default): take the exclusive lock (:class:`SessionLockedError` if another writer has
        it), reduce the file (:class:`SessionCorruption` if it is corrupt), check that the header id is the id
        in the file name, truncate a torn tail and re-chmod to 0600. ``read_only=True`` only reads and reduces
        (a regular file, not through a symbolic link, as for writing); a torn tail is ignored, not repaired. A file
        without a complete header line is ``MISSING_HEADER`` with a message that says it can be deleted
        (:func:`require_header_line`).

        ``observer`` hears every committed transaction of the file as it is reduced (the one walk over the
        file, see :func:`reduce_session`), then every later append, as if given to :meth:`observe_commits`.

        ``resumable=True`` keeps a digest of the committed bytes (hashing them once, then each append) so that
        :meth:`close_keeping` can give a :class:`SessionSnapshot`. ``resume=`` (implies ``resumable``) reuses that
        snapshot's state when this file's committed prefix is byte for byte what it was reduced from
        (:attr:`resumed`; the observer then hears only later appends); otherwise the file is reduced as usual.
        """
        path = Path(path)
        if resume is not None and resume.path != path:
            resume = None
        match = _FILE_NAME.fullmatch(path.name)
        if match is None:
            raise SessionError(f"Not a session file name (expected <stamp>_<uuidv7>.jsonl): {path.name}")
        if read_only:
            data = read_session_file(path)
            require_header_line(data, path.name)
            state, digest, resumed = _reduce(data, observer, resumable, resume)
            cls._check_name(state, match.group(1))
            return cls._opened(path, state, None, observer, digest, resumed)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SessionError(f"Not a regular file: {path}")
            _lock(fd, path, match.group(1))
            data = _read_regular(fd, path)
            require_header_line(data, path.name)
            state, digest, resumed = _reduce(data, observer, resumable, resume)
            cls._check_name(state, match.group(1))
            if state.repaired_length != len(data):
                if os.fstat(fd).st_size != len(data):  # grown meanwhile: another program (a CLI) is writing it
                    raise SessionChangedError(
                        f"Session {match.group(1)} grew while it was being opened: another program (a tiny-agent "
                        "command line?) is writing it. Open it again once that has finished."
                    )
                os.ftruncate(fd, state.repaired_length)
                os.fsync(fd)
            os.fchmod(fd, 0o600)
        except BaseException:
            os.close(fd)
            raise
        return cls._opened(path, state, fd, observer, digest, resumed)

    @classmethod
    def _opened(
        cls,
        path: Path,
        state: SessionState,
        fd: int | None,
        observer: CommitObserver | None,
        digest: _Hash | None = None,
        resumed: bool = False,
    ) -> Self:
        store = cls(path, state, fd)
        store._digest, store.resumed = digest, resumed
        if observer is not None:
            store.observe_commits(observer)
        return store

    @staticmethod
    def _check_name(state: SessionState, name_id: str) -> None:
        if state.header.id != name_id:
            raise SessionError("session filename does not match header")

    # --- reading -------------------------------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The reduced state after the last committed transaction (read-only by convention)."""
        return self._state

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._state.header.id

    @property
    def read_only(self) -> bool:
        """Whether this store was opened without the right to append."""
        return self._fd is None

    @property
    def workspace(self) -> Path:
        """The workspace the session works in: its header's ``cwd`` (what the writer ran in) when that folder
        exists here, else the folder holding its ``.tiny-agent/sessions/`` (:func:`session_workspace`)."""
        cwd = Path(self._state.header.cwd)
        return cwd if cwd.is_dir() else session_workspace(self.path)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def refresh(self) -> int:
        """Read-only stores: apply the transactions another process appended since; returns how many.

        O(new bytes). A corrupt new line raises :class:`SessionCorruption` and leaves the state as it was (the
        lines before it stay applied). Observers hear each applied transaction, as they hear appends.
        """
        if not self.read_only:
            return 0  # a writer already has every committed transaction
        with self._mutex:  # two threads refreshing at once would apply the same lines twice
            data = read_session_file(self.path, start=self._state.repaired_length)
            end = data.rfind(b"\n")
            count = 0
            start = 0
            while start <= end:
                stop = data.index(b"\n", start)
                accepted = apply_transaction(self._state, data[start:stop])
                if self._digest is not None:
                    self._digest.update(memoryview(data)[start : stop + 1])
                self._notify(accepted)
                count += 1
                start = stop + 1
            return count

    # --- writing -------------------------------------------------------------------------------------------------

    def observe_commits(self, observer: CommitObserver) -> None:
        """Call ``observer(facts)`` with the typed facts of every later committed append (and, for a read-only
        store, of every transaction :meth:`refresh` applies); its exceptions are ignored (as the reference)."""
        self._observers.append(observer)

    def _notify(self, accepted: list[SessionFact]) -> None:
        for observer in list(self._observers):
            # Observers are lossy projections (the ledger, the window); they cannot undo a commit.
            with contextlib.suppress(Exception):
                observer(accepted)

    def append(self, facts: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Append one transaction: a fact or a non-empty sequence of facts. Returns the committed facts.

        Each fact gets ``seq`` (consecutive), ``timestamp`` (now, ms, the same for the whole transaction) and an
        ``id`` (a new UUIDv7 unless it has one). The line is validated against the state first: a rejected
        transaction raises :class:`TransactionRejectedError` and nothing changes. Then it is written as one
        LF-terminated line (an object for one fact, an array for several), flushed and fsynced.
        """
        values = [facts] if isinstance(facts, Mapping) else list(facts)
        if not values:
            raise TransactionRejectedError("EMPTY_TRANSACTION", self._state.line_count + 1)
        if not all(isinstance(value, Mapping) for value in values):
            raise TransactionRejectedError("INVALID_FACT", self._state.line_count + 1)
        with self._mutex:
            fd = self._writable_fd()
            state = self._state
            self._require_unchanged(fd, state.repaired_length)
            timestamp = int(time.time() * 1000)
            committed: list[dict[str, Any]] = []
            for index, value in enumerate(values):
                fact: dict[str, Any] = {
                    "kind": value.get("kind"),
                    "seq": state.next_seq + index,
                    "id": value.get("id") or new_id(),
                    "timestamp": timestamp,
                }
                fact.update((key, item) for key, item in value.items() if key not in fact)
                committed.append(fact)
            line_no = state.line_count + 1
            try:
                # A non-JSON value, NaN/±inf, too deep a nesting, or a lone surrogate (UnicodeEncodeError): the
                # line could not be written as valid JSON, so it is refused before anything is written.
                line = _DUMPS(committed[0] if len(committed) == 1 else committed).encode("utf-8")
            except (TypeError, ValueError, RecursionError) as error:
                raise TransactionRejectedError("MALFORMED_JSON", line_no) from error
            old_length = state.repaired_length
            length = old_length + len(line) + 1
            if length > SESSION_FILE_MAX - CLOSING_RESERVE and (
                length > SESSION_FILE_MAX or not _winds_down(committed)
            ):
                raise SessionTooLargeError(
                    f"Session {self.session_id} has reached {SESSION_FILE_MAX // 2**20} MiB, the most the app opens; "
                    "nothing was written. Continue in a new session."
                )
            try:
                staged = stage_transaction(state, line, line_no)
            except SessionCorruption as error:
                raise TransactionRejectedError(error.code, error.line, error.seq) from error
            try:
                _write_all(fd, line + b"\n")
                os.fsync(fd)
            except BaseException as error:  # KeyboardInterrupt too: the file and the state must still agree
                staged.rollback()
                self._undo_partial_write(fd, old_length)
                if isinstance(error, OSError):
                    raise SessionError(f"Could not write session {self.session_id}: {error.strerror}") from error
                raise
            staged.commit()
            if self._digest is not None:
                self._digest.update(line + b"\n")
        self._notify(staged.facts)
        return committed

    def _require_unchanged(self, fd: int, length: int) -> None:
        """The file must still end where this store's last commit left it. The reference CLIs take no lock, so one
        of them appending meanwhile would make the next line here repeat a ``seq`` and the file unreadable, so nothing
        is written while the file is longer than this store's state (one ``fstat`` per append)."""
        if os.fstat(fd).st_size != length:
            raise SessionChangedError(
                f"Session {self.session_id} was changed by another program (a tiny-agent command line?) while it "
                "was open here; nothing was written. Open the session again to continue it."
            )

    def _writable_fd(self) -> int:
        if self._closed:
            raise SessionError(f"Session {self.session_id} is closed")
        if self._fd is None:
            raise SessionError(f"Session {self.session_id} was opened read-only")
        return self._fd

    def _undo_partial_write(self, fd: int, length: int) -> None:
        """Truncate the file back to ``length`` (the append lock is held). If that fails, stop appending here."""
        try:
            os.ftruncate(fd, length)
            os.fsync(fd)
        except BaseException as error:
            # The file may now end with a torn line; the next writable open truncates it.
            self._close_locked()
            if not isinstance(error, OSError):
                raise

    # --- closing -------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the lock and the file. Idempotent; waits for an append in progress in another thread."""
        with self._mutex:
            self._close_locked()

    def close_keeping(self) -> SessionSnapshot | None:
        """Close (as :meth:`close`) and return the state with the digest of the bytes it covers, for a later
        ``open(resume=...)``; ``None`` when the store was not opened ``resumable`` or was already closed (e.g. by
        a write that could not be undone)."""
        with self._mutex:
            if self._closed or self._digest is None:
                self._close_locked()
                return None
            snapshot = SessionSnapshot(self.path, self._state, self._digest.digest())
            self._close_locked()
            return snapshot

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "closed" if self._closed else ("read-only" if self.read_only else "writable")
        return f"<SessionStore {self.session_id} {mode} facts={self._state.fact_count}>"
