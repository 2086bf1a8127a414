"""The built-in ``bg`` tool (reference notes §6.6): background processes of the workspace.

Actions: ``start`` (needs ``command``), ``list`` (``status`` filter ``running|exited|stopped|stale|all``, default
``running``), ``status`` / ``logs`` / ``stop`` (need ``id``, the pid as digits; ``tail`` lines, default 40 for
status and 80 for logs, at most 2,000). Metadata lives in ``<workspace>/.tiny-agent/bg/<pid>.json`` with the
reference's keys ``{id, command, cwd, pid, pgid, ownerPid, startedAt, processStartedAt, log, status, exitCode?,
signal?, exitedAt?}``; the log in ``<pid>.log`` starts with the lines ``$ cmd``, ``cwd:``, ``pid:``, ``started:``.

A process runs ``/bin/sh -c <command>`` in a new session (its own process group), with stdout and stderr written
straight to the log file, so it keeps logging even if this program dies. It is held at a gate until the log
header is written, so the header always comes first. ``start`` waits 500 ms and returns the metadata, or the
metadata and an 80-line log tail when the process already ended.

A process whose current start time (``ps -o lstart``) differs from the recorded one is ``stale``: its pid was
reused, and no signal is ever sent to it. ``stop`` sends SIGTERM to the group, waits up to 2 s, then SIGKILLs the
group, and marks the process ``stopped``.

A metadata file is only a claim: the workspace is writable by the user, by ``bash``, by other programs. So for a
process this tool did not start (one from an earlier run), ``stop`` signals nothing unless the file says
``id == pid == pgid > 1`` *and*, right before each signal, ``getpgid(pid) == pid`` and the process's start time is
the recorded one; otherwise it fails with a tool error and sends nothing. (Without this, a forged ``"pgid": 1``
would make ``killpg(1)``, i.e. ``kill(-1)``: every process of the user.) Its group's members are pinned by pidfds
before that check (:class:`~tiny_agent_core.tools.process_tree.PinnedGroup`); ``stop`` waits for them, and its
SIGKILL goes to the group while the leader is still that process and, in any case, to the pinned members that
still run (members that outlive their leader and ignore SIGTERM, e.g. a sandbox's, whose leader ``bwrap`` exits
on SIGTERM); members forked after the check are left alone once the leader is gone. Signals go to a group or
through a pidfd, never to a bare pid, and never to a pid or pgid of 1 or less. The leader check and the group
signal are separate system calls, so a pid reused in between is not excluded; Python exposes no way to signal a
process group through a pidfd. :meth:`BgTool.close` stops the processes this tool started (call it when
the app exits); cancelling a run does not stop them, as in the reference. POSIX only.

A process gets the secret-free environment of :mod:`~tiny_agent_core.tools.environment` and, where bubblewrap
works (unless built with ``sandbox=False``), runs in the sandbox of :mod:`~tiny_agent_core.tools.sandbox`
(without ``--die-with-parent``: like an unsandboxed one, it outlives this program); its ``pid`` is then
``bwrap``'s, and stopping the group ends the sandbox's PID namespace with everything in it. Unsandboxed, ``stop``
of a process this tool started also kills its children that left the group
(:func:`~tiny_agent_core.tools.process_tree.kill_tree`).

The folder ``.tiny-agent/bg`` is 0700 and its files 0600; they are written, and logs read, without following
symlinks: a log that is a symlink, a hard link or not a regular file is refused (``logs``, ``status``) rather
than read. (A metadata file is read as any claim is: see above.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tiny_agent_core.tools.base import (
    MAX_TOOL_LINES,
    MAX_TOOL_OUTPUT,
    BuiltinTool,
    Preview,
    ToolError,
    optional_positive_integer,
    required_string,
)
from tiny_agent_core.tools.private_files import create_private, open_private_folder, open_regular
from tiny_agent_core.tools.process_tree import PinnedGroup, group_alive, kill_tree
from tiny_agent_core.tools.sandbox import Confinement, SandboxStatus

__all__ = ["READ_ONLY_ACTIONS", "BgTool", "bg_directory"]

STATUSES = ("running", "exited", "stopped", "stale")
READ_ONLY_ACTIONS = frozenset({"list", "status", "logs"})
"""Actions that only look; the approval policy lets them run without asking."""

STOP_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL on ``stop``."""

_GATE = 'read -r _ ; exec "$0" -c "$1" </dev/null'
"""Held until the parent has written the log header and closed stdin; then it becomes the real shell."""


BG_FOLDER = ".tiny-agent/bg"
"""The metadata and log folder, relative to the workspace."""

MAX_META_BYTES = 64 * 1024
"""Most bytes of one process's metadata file that are read (ours are well under 4 KiB)."""


def bg_directory(workspace: Path) -> Path:
    """Where the metadata and log files live."""
    return workspace / BG_FOLDER


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _running(pid: int) -> bool:
    if pid <= 1:  # never probe our own group (0), every process (-1) or init: no bg process has such a pid
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_started_at(pid: int) -> str:
    """The process's start time as ``ps -o lstart`` prints it (as the reference records it); ``""`` if gone."""
    if not _running(pid):
        return ""
    if shutil.which("ps") is not None:
        result = subprocess.run(
            ["ps", "-p", str(pid), "-o", "lstart="],
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            check=False,
            timeout=10,
        )
        return result.stdout.strip() if result.returncode == 0 else ""
    try:  # no ps: the kernel's start time in clock ticks since boot
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return "proc:" + stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _kill_group(pgid: int, signum: signal.Signals) -> None:
    """``killpg(pgid, signum)``; a group that is already gone is fine.

    Never falls back to ``kill(pgid)``: once the group is gone its number may belong to an unrelated process.
    A pgid of 1 or less is refused outright (``killpg(1)`` would be ``kill(-1)``: every process of the user).
    """
    if isinstance(pgid, bool) or not isinstance(pgid, int) or pgid <= 1:
        raise ToolError(f"refusing to signal process group {pgid!r}")
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


@contextlib.contextmanager
def _log_file(workspace: Path, pid: str, flags: int = os.O_RDONLY) -> Iterator[int]:
    """The log of ``pid``, a regular file of the workspace opened without following symlinks; else OSError."""
    with open_private_folder(workspace, BG_FOLDER) as folder:
        descriptor = open_regular(folder, f"{pid}.log", flags)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _tail(workspace: Path, pid: str, lines: int) -> str:
    """The last ``lines`` lines (at most 2,000 and 50 KiB) of a log, CRLF read as LF; ``""`` when it is missing.

    A log that is a symlink, a hard link or not a regular file raises ToolError: it is never read.
    """
    count = min(lines, MAX_TOOL_LINES)
    try:
        with _log_file(workspace, pid) as descriptor, os.fdopen(os.dup(descriptor), "rb") as file:
            file.seek(0, os.SEEK_END)
            size = file.tell()
            start = max(0, size - MAX_TOOL_OUTPUT)
            file.seek(start)
            data = file.read()
    except FileNotFoundError:
        return ""
    except OSError as error:
        raise ToolError(
            f"refusing to read the log of bg {pid}: {BG_FOLDER}/{pid}.log is not a regular file inside the "
            f"workspace (a symlink or link was put there?): {error.strerror or error}"
        ) from None
    if start > 0:  # drop the partial first line, unless the tail is one long line
        newline = data.find(b"\n")
        if 0 <= newline < len(data) - 1:
            data = data[newline + 1 :]
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return "\n".join(parts[-count:])


@dataclass
class _Owned:
    """A process this tool started: its handle and the metadata its exit watcher completes."""

    process: subprocess.Popen[bytes]
    meta: dict[str, Any]
    token: str
    """The run marker in its environment (for :func:`~tiny_agent_core.tools.process_tree.kill_tree`)."""
    stopping: bool = False
    settled: threading.Event = field(default_factory=threading.Event)


class BgTool(BuiltinTool):
    """``bg(action, command?, id?, tail?, status?)``."""

    name = "bg"
    replay_key = "builtin:bg:v1"
    description = (
        "Manage background processes in the working directory. The id is the process pid; metadata and logs live "
        "in .tiny-agent/bg/<pid>.json and .log. Use for servers and other long-running commands. List shows "
        "running processes by default; use status=all or a specific status to inspect history in the same cwd."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["start", "list", "status", "logs", "stop"]},
            "command": {"type": "string", "description": "Shell command to start. Required for action=start."},
            "id": {"type": "string", "description": "Background process pid. Required for status/logs/stop."},
            "tail": {
                "type": "integer",
                "minimum": 1,
                "description": "Number of log lines for logs, status, or failed start.",
            },
            "status": {
                "type": "string",
                "enum": ["running", "exited", "stopped", "stale", "all"],
                "description": "Filter for action=list. Defaults to running.",
            },
        },
        "required": ["action"],
    }

    def __init__(
        self,
        workspace: Path,
        *,
        start_wait: float = 0.5,
        stop_grace: float = STOP_GRACE,
        shell: str = "/bin/sh",
        extra_env: Mapping[str, str] | None = None,
        sandbox: bool = True,
        network: bool = True,
        writable_roots: Iterable[Path] = (),
    ) -> None:
        """``extra_env``, ``sandbox``, ``network`` and ``writable_roots`` as for
        :class:`~tiny_agent_core.tools.bash.BashTool`."""
        self.workspace = workspace
        self.start_wait = start_wait
        self.stop_grace = stop_grace
        self.shell = shell
        self.confinement = Confinement((workspace, *writable_roots), dict(extra_env or {}), sandbox, network)
        self._owned: dict[str, _Owned] = {}
        self._lock = threading.Lock()

    @property
    def sandbox(self) -> SandboxStatus:
        """Whether this tool's processes run sandboxed, and why not."""
        return self.confinement.status

    # -- the tool ------------------------------------------------------------------------------------------

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        """Start, list, inspect (status, logs) or stop background processes, as ``action`` says."""
        action = required_string(args.get("action"), "action")
        if action == "start":
            return await self._start(required_string(args.get("command"), "command"))
        if action == "list":
            status = args.get("status")
            wanted = "running" if status is None else required_string(status, "status")
            if wanted not in (*STATUSES, "all"):
                raise ToolError(f"unknown bg status filter: {wanted}")
            return await asyncio.to_thread(self._list, wanted)
        if action not in ("status", "logs", "stop"):
            raise ToolError(f"unknown bg action: {action}")
        pid = required_string(args.get("id"), "id")
        if not pid.isascii() or not pid.isdigit():
            raise ToolError("id must be a pid")
        tail = optional_positive_integer(args.get("tail"), "tail")
        if action == "status":
            return await asyncio.to_thread(self._status, pid, tail or 40)
        if action == "logs":
            return await asyncio.to_thread(self._logs, pid, tail or 80)
        return await asyncio.to_thread(self._stop, pid)

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        """What the action will do, as the approval dialog shows it."""
        action = args.get("action")
        if action == "start":
            command = args.get("command")
            return Preview("command", command if isinstance(command, str) else "")
        return Preview("arguments", json.dumps(dict(args), ensure_ascii=False))

    async def close(self) -> None:
        """Stop every process this tool started that is still running (at app exit)."""
        with self._lock:
            pids = [pid for pid, owned in self._owned.items() if not owned.settled.is_set()]
        for pid in pids:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._stop, pid)

    # -- files ---------------------------------------------------------------------------------------------

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        name = f"{meta['id']}.json"
        temporary = f".{name}.{uuid.uuid4().hex}.tmp"
        with open_private_folder(self.workspace, BG_FOLDER) as folder:
            with open(create_private(folder, temporary), "w", encoding="utf-8") as file:
                file.write(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)

    def _read_meta(self, pid: str) -> dict[str, Any]:
        try:
            # The workspace is the repository's: a FIFO, a link or a huge file may sit where the metadata goes.
            with open_private_folder(self.workspace, BG_FOLDER) as folder:
                descriptor = open_regular(folder, f"{pid}.json")
            with os.fdopen(descriptor, "rb") as file:
                data = file.read(MAX_META_BYTES + 1)
            if len(data) > MAX_META_BYTES:
                raise ValueError(f"larger than {MAX_META_BYTES:,} bytes")
            meta = json.loads(data)
        except FileNotFoundError:
            raise ToolError(f"no background process {pid} in this workspace") from None
        except (OSError, ValueError) as error:
            raise ToolError(f"bg {pid} metadata is unreadable: {error}") from None
        if not isinstance(meta, dict) or meta.get("cwd") != str(self.workspace):
            raise ToolError(f"bg {pid} belongs to a different cwd")
        with self._lock:
            owned = self._owned.get(pid)
            if owned is not None:
                return dict(owned.meta)
        return meta

    @staticmethod
    def _current_status(meta: Mapping[str, Any]) -> str:
        status = meta.get("status")
        if status != "running":
            return str(status) if status in STATUSES else "exited"
        pid = meta.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
            return "stale"
        started = _process_started_at(pid)
        if not started:
            return "exited"
        return "running" if started == meta.get("processStartedAt") else "stale"

    @classmethod
    def _format(cls, meta: Mapping[str, Any], status: str | None = None) -> str:
        shown = {**meta, "status": status if status is not None else cls._current_status(meta)}
        return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))

    # -- actions -------------------------------------------------------------------------------------------

    async def _start(self, command: str) -> str:
        owned = await asyncio.to_thread(self._spawn, command)
        await asyncio.sleep(self.start_wait)
        with self._lock:
            meta = dict(owned.meta)
        status = await asyncio.to_thread(self._current_status, meta)
        if status == "running":
            return self._format(meta, status)
        await asyncio.to_thread(owned.settled.wait, 1.0)
        with self._lock:
            meta = dict(owned.meta)
        if meta.get("status") == "running":  # ended, but the watcher has not recorded it yet
            meta.update(self._exit_fields(owned.process))
        tail = await asyncio.to_thread(_tail, self.workspace, str(meta["id"]), 80)
        return f"{self._format(meta, status)}\n{tail}"

    def _spawn(self, command: str) -> _Owned:
        with open_private_folder(self.workspace, BG_FOLDER) as folder:
            return self._spawn_in(folder, command)

    def _spawn_in(self, folder: int, command: str) -> _Owned:
        started_at = _now()
        starting = f".starting-{uuid.uuid4().hex}.log"
        log_fd = create_private(folder, starting, append=True)
        token = uuid.uuid4().hex
        argv, environment = self.confinement.prepare(
            [self.shell, "-c", _GATE, self.shell, command], run_token=token, die_with_parent=False
        )
        gate_read, gate_write = os.pipe()
        try:
            process = subprocess.Popen(
                argv,
                cwd=self.workspace,
                env=environment,
                stdin=gate_read,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(log_fd)
            os.close(gate_write)
            with contextlib.suppress(OSError):
                os.unlink(starting, dir_fd=folder)
            raise
        finally:
            os.close(gate_read)
        pid = str(process.pid)
        try:
            os.replace(starting, f"{pid}.log", src_dir_fd=folder, dst_dir_fd=folder)
            header = f"$ {command}\ncwd: {self.workspace}\npid: {pid}\nstarted: {started_at}\n\n"
            os.write(log_fd, header.encode("utf-8"))
            meta: dict[str, Any] = {
                "id": pid,
                "command": command,
                "cwd": str(self.workspace),
                "pid": process.pid,
                "pgid": process.pid,
                "ownerPid": os.getpid(),
                "startedAt": started_at,
                "processStartedAt": _process_started_at(process.pid),
                "log": f".tiny-agent/bg/{pid}.log",
                "status": "running",
            }
            owned = _Owned(process, meta, token)
            with self._lock:
                self._owned[pid] = owned
                self._write_meta(meta)
        finally:
            os.close(log_fd)
            os.close(gate_write)  # opens the gate
        threading.Thread(target=self._watch, args=(owned,), name=f"bg-{pid}", daemon=True).start()
        return owned

    @staticmethod
    def _exit_fields(process: subprocess.Popen[bytes]) -> dict[str, Any]:
        code = process.returncode
        if code is not None and code < 0:
            try:
                name: str | None = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"exitCode": None, "signal": name, "exitedAt": _now()}
        return {"exitCode": code, "signal": None, "exitedAt": _now()}

    def _watch(self, owned: _Owned) -> None:
        owned.process.wait()
        fields = self._exit_fields(owned.process)
        code = "" if fields["exitCode"] is None else fields["exitCode"]
        trailer = f"\nexited: {fields['exitedAt']}\nexitCode: {code}\nsignal: {fields['signal'] or ''}\n"
        with (
            contextlib.suppress(OSError),
            _log_file(self.workspace, str(owned.process.pid), os.O_WRONLY | os.O_APPEND) as log,
        ):
            os.write(log, trailer.encode("utf-8"))
        with self._lock:
            owned.meta.update(status="stopped" if owned.stopping else "exited", **fields)
            with contextlib.suppress(OSError):
                self._write_meta(owned.meta)
        owned.settled.set()

    def _list(self, wanted: str) -> str:
        directory = bg_directory(self.workspace)
        metas = []
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            if not path.stem.isdigit():
                continue
            try:
                meta = self._read_meta(path.stem)
            except ToolError:
                continue
            status = self._current_status(meta)
            if wanted in ("all", status):
                metas.append({**meta, "status": status})
        metas.sort(key=lambda meta: (str(meta.get("startedAt", "")), int(meta.get("pid", 0) or 0)))
        return json.dumps(metas, ensure_ascii=False, separators=(",", ":"))

    def _status(self, pid: str, tail: int) -> str:
        meta = self._read_meta(pid)
        return f"{self._format(meta)}\n{_tail(self.workspace, pid, tail)}"

    def _logs(self, pid: str, tail: int) -> str:
        self._read_meta(pid)
        return _tail(self.workspace, pid, tail) or "(no output)"

    @staticmethod
    def _foreign_group(pid: str, meta: Mapping[str, Any]) -> int:
        """The process group to signal for a process this tool did not start; raises ToolError unless it is safe.

        Its metadata file is only a claim (anything that can write the workspace can forge it), so the claim must
        describe exactly what ``start`` records: ``id``, ``pid`` and ``pgid`` all the same number, above 1.
        """
        process_id = meta.get("pid")
        group = meta.get("pgid")
        if (
            isinstance(process_id, bool)
            or not isinstance(process_id, int)
            or isinstance(group, bool)
            or not isinstance(group, int)
            or str(meta.get("id")) != pid
            or process_id != int(pid)
            or group != process_id
            or process_id <= 1
        ):
            raise ToolError(
                f"refusing to stop bg {pid}: its metadata does not describe a process group bg started "
                f"(id {meta.get('id')!r}, pid {process_id!r}, pgid {group!r}); no signal was sent"
            )
        return group

    @staticmethod
    def _verify_leader(pid: str, meta: Mapping[str, Any], group: int) -> str | None:
        """Why ``group`` may not be signalled now, or ``None``: its leader must still be the recorded process."""
        try:
            current_group = os.getpgid(group)
        except ProcessLookupError:
            return "its process has exited"
        except OSError as error:
            return f"its process group cannot be checked ({error.strerror})"
        if current_group != group:
            return f"process {group} is not the leader of its process group (its group is {current_group})"
        recorded = meta.get("processStartedAt")
        started = _process_started_at(group)
        if not isinstance(recorded, str) or not recorded or started != recorded:
            return f"process {group} is not the process bg recorded (its start time differs)"
        return None

    def _stop(self, pid: str) -> str:
        meta = self._read_meta(pid)
        with self._lock:
            owned = self._owned.get(pid)
        # our own child's group is the one we made, whatever the file says; anyone else's must prove itself
        group = owned.process.pid if owned is not None else self._foreign_group(pid, meta)
        status = self._current_status(meta)
        if status != "running":
            return self._format(meta, status)
        if owned is not None:
            return self._stop_owned(owned, group)
        return self._stop_foreign(pid, meta, group)

    def _wait_until(self, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self.stop_grace
        while time.monotonic() < deadline and not done():
            time.sleep(0.05)

    def _stop_owned(self, owned: _Owned, group: int) -> str:
        with self._lock:
            owned.stopping = True
        _kill_group(group, signal.SIGTERM)
        # the group is waited for as a whole: sandboxed, its leader (bwrap) exits on SIGTERM at once
        self._wait_until(lambda: owned.settled.is_set() and not group_alive(group))
        _kill_group(group, signal.SIGKILL)
        if not self.confinement.status.available:
            # its children that left the group (sandboxed, the PID namespace took them)
            kill_tree(owned.token, spawned=owned.process.pid)
        owned.settled.wait(2.0)
        with self._lock:
            stopped = dict(owned.meta)
        if stopped.get("status") == "running":  # the watcher is late; record the stop ourselves
            stopped.update(status="stopped", exitedAt=_now())
        return self._format(stopped, "stopped")

    def _stop_foreign(self, pid: str, meta: Mapping[str, Any], group: int) -> str:
        # pinned before the check, so the check proves the pinned processes are the recorded process's group
        with PinnedGroup(group) as members:
            refused = self._verify_leader(pid, meta, group)
            if refused is not None:
                raise ToolError(f"refusing to stop bg {pid}: {refused}; no signal was sent")
            _kill_group(group, signal.SIGTERM)
            self._wait_until(lambda: not members.alive())
            # SIGKILL whatever outlived SIGTERM: the group while its leader is still provably the recorded process
            # (once it is gone, its number proves nothing), and in any case the members pinned at the check
            if self._verify_leader(pid, meta, group) is None:
                _kill_group(group, signal.SIGKILL)
            members.kill()
        stopped = {**meta, "status": "stopped", "exitedAt": _now()}
        with self._lock:
            self._write_meta(stopped)
        return self._format(stopped, "stopped")
