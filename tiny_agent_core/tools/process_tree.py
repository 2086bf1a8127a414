"""Killing everything an unsandboxed command started, including children that left its process group (Linux).

A command's child that calls ``setsid`` (or double-forks into a daemon) leaves the command's process group, so
``killpg`` misses it. To find such children without ever signalling a process that is not ours:

- this process becomes a *child subreaper* (:func:`become_subreaper`, ``prctl(PR_SET_CHILD_SUBREAPER)``), so an
  orphaned descendant is re-parented to it instead of to init and stays inside its process tree;
- each command carries a run marker in its environment (``TINY_AGENT_RUN=<token>``), inherited by what it
  starts;
- :func:`kill_tree` walks ``/proc`` and SIGKILLs, among this process's descendants only, the command's leader,
  every process carrying the marker, and everything below them; it repeats until none is left alive (bounded),
  and reaps those that were re-parented to us.

Each signal goes through a pidfd opened *before* the process's start time is checked again, so a pid reused in
between is never signalled. A descendant that cleared its environment after its parent died is not found; the
sandbox (a PID namespace) has no such gap. Elsewhere than Linux this is a no-op.

Being a subreaper is process-wide: an orphan of *any* child (a double-forking helper the GUI started) becomes
ours too, and stays a zombie after it exits unless it was one of a command's processes reaped here.

Also here, for ``bg``: :func:`group_alive` (a group with a member that is not a zombie) and :class:`PinnedGroup`
(a group's members held by pidfds, to signal them later without confusing them with newer processes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KILL_ROUNDS",
    "REAP_WITHIN",
    "RUN_MARKER",
    "PinnedGroup",
    "become_subreaper",
    "group_alive",
    "kill_tree",
]

RUN_MARKER = "TINY_AGENT_RUN"
"""The environment variable carrying a command's run token."""

KILL_ROUNDS = 20
"""Scans of ``/proc`` per :func:`kill_tree` at most (a fork loop racing the kill gets this many chances)."""

REAP_WITHIN = 5.0
"""Seconds a background thread waits to reap killed processes that were re-parented to us."""

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); whether it is one now.

    Checked on every call (cheap), since a caller may have turned it off in between.
    """
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        state = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(state), 0, 0, 0) == 0 and state.value:
            return True
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True, slots=True)
class _Process:
    pid: int
    parent: int
    group: int
    session: int
    zombie: bool
    started: str


def _stat(pid: int) -> _Process | None:
    try:
        descriptor = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(descriptor, 4096)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    fields = data.rsplit(b")", 1)[-1].split()
    try:
        zombie = fields[0] in (b"Z", b"X")
        return _Process(pid, int(fields[1]), int(fields[2]), int(fields[3]), zombie, fields[19].decode())
    except (IndexError, ValueError):
        return None


def _processes() -> Iterator[_Process]:
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit() and (process := _stat(int(entry.name))) is not None:
                yield process


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie (Linux; elsewhere: whether it exists).

    A zombie member (one whose reaper is slow, e.g. a sandbox's ``bwrap`` re-parented to init) does not count.
    """
    if sys.platform != "linux":
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return any(process.group == pgid and not process.zombie for process in _processes())


class PinnedGroup:
    """The live members of a process group at one moment, each held by a pidfd (Linux), so a later process that
    reuses a pid or the group id is never mistaken for one of them. Close it (``with``) to release the pidfds."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self._members: list[tuple[_Process, int]] = []
        if sys.platform == "linux":
            for process in _processes():
                if process.group == pgid and not process.zombie and (pidfd := _open(process)) is not None:
                    self._members.append((process, pidfd))

    def __enter__(self) -> PinnedGroup:
        return self

    def __exit__(self, *_: object) -> None:
        for _process, pidfd in self._members:
            os.close(pidfd)
        self._members.clear()

    def _living(self) -> list[int]:
        living = []
        for process, pidfd in self._members:
            current = _stat(process.pid)
            if current is not None and current.started == process.started and not current.zombie:
                living.append(pidfd)
        return living

    def alive(self) -> bool:
        """Whether a pinned member still runs (elsewhere than Linux: whether the group exists)."""
        return bool(self._living()) if sys.platform == "linux" else group_alive(self.pgid)

    def kill(self) -> None:
        """SIGKILL every pinned member that still runs."""
        for pidfd in self._living():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def _descendants(root: int) -> dict[int, _Process]:
    """Every live-or-zombie process below ``root``, by pid."""
    children: dict[int, list[_Process]] = {}
    for process in _processes():
        children.setdefault(process.parent, []).append(process)
    found: dict[int, _Process] = {}
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child.pid not in found:
                found[child.pid] = child
                pending.append(child.pid)
    return found


def _marked(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _depth(pid: int, ours: dict[int, _Process]) -> int:
    depth = 0
    while pid in ours:
        pid, depth = ours[pid].parent, depth + 1
    return depth


def _targets(ours: dict[int, _Process], leader: int | None, marker: bytes) -> list[_Process]:
    """The leader, marked processes, and everything below them (zombies included), among ``ours``, parents first
    (a parent killed after its child could still report the child's death, e.g. a shell printing ``Killed``)."""
    roots = {pid for pid, process in ours.items() if pid == leader or (not process.zombie and _marked(pid, marker))}
    chosen = set(roots)
    changed = True
    while changed:
        below = {pid for pid, process in ours.items() if process.parent in chosen} - chosen
        changed = bool(below)
        chosen |= below
    return [ours[pid] for pid in sorted(chosen, key=lambda pid: _depth(pid, ours))]


def kill_tree(token: str, *, leader: int | None = None, spawned: int | None = None) -> None:
    """SIGKILL every descendant of ours marked with ``token``, and the command led by ``leader`` (our child, still
    unreaped, so its pid cannot have been reused) with everything below it.

    Returns after at most :data:`KILL_ROUNDS` scans; zombies re-parented to us are reaped in a background thread,
    but never ``leader`` or ``spawned`` (the caller's own child, possibly reaped already): their ``Popen`` does.
    """
    if sys.platform != "linux":
        return
    me = os.getpid()
    marker = f"{RUN_MARKER}={token}".encode()
    callers = {leader, spawned}
    to_reap: dict[int, int] = {}
    for _ in range(KILL_ROUNDS):
        ours = _descendants(me)
        # a zombie child of ours in the command's session exited before we looked: ours to reap as well
        exited = [p for p in ours.values() if p.zombie and p.parent == me and p.session == leader]
        alive = 0
        for process in [*_targets(ours, leader, marker), *exited]:
            if process.pid in to_reap or (process.pid in callers and process.zombie):
                continue
            pidfd = _open(process)
            if pidfd is None:
                continue
            if not process.zombie:
                alive += 1
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            if process.parent == me and process.pid not in callers:
                to_reap[process.pid] = pidfd
            else:
                os.close(pidfd)
        if not alive:
            break
    if to_reap:
        threading.Thread(target=_reap, args=(list(to_reap.values()),), name="bash-reaper", daemon=True).start()


def _open(process: _Process) -> int | None:
    """A pidfd for ``process``, only if the pid still belongs to it (same start time after opening)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:
        return None
    current = _stat(process.pid)
    if current is None or current.started != process.started:
        os.close(pidfd)
        return None
    return pidfd


def _reap(pidfds: list[int]) -> None:
    """Reap our killed children (bounded by :data:`REAP_WITHIN`), closing each pidfd."""
    deadline = time.monotonic() + REAP_WITHIN
    pending = list(pidfds)
    while pending:
        for pidfd in list(pending):
            try:
                done = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None
            except ChildProcessError:  # reaped by someone else
                done = True
            if done or time.monotonic() >= deadline:
                pending.remove(pidfd)
                os.close(pidfd)
        if pending:
            time.sleep(0.01)
