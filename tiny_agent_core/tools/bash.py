"""The built-in ``bash`` tool (reference notes §6.5): one shell command in the workspace, bounded.

``/bin/sh -c <command>`` runs in the workspace, in a new session and so its own process group, with stdin from
``/dev/null``. stdout and stderr are captured separately (at most 10,000,000 bytes each, so memory stays
bounded) and returned stdout first, as the reference does. Results are returned, never raised:

- no output: ``(no output)``;
- non-zero exit: ``<output>\\n\\nCommand exited with code N`` (only the note when there is no output);
- timeout (default 120 s, counted from when the command starts, sandbox set-up excluded):
  ``<output>\\n\\nCommand timed out after <t> seconds.``;
- capture cap: ``<output>\\n\\nBash output exceeded the 10MB safety cap; complete output was not captured.``.

Output over 2,000 lines or 50 KiB keeps a tail of at most 50 KiB (from a UTF-8 boundary) and 2,000 lines; the
whole captured output goes to ``<workspace>/.tiny-agent/tool-output/<uuid4>.log`` and the note
``\\n\\n[Showing lines S-N of N. Full output: <absolute path>]`` follows.
(When the file cannot be written, the path is replaced by ``not saved (<reason>)``.)

Spilled files are created 0600 in 0700 folders without following symlinks, and writing one prunes the folder:
files older than :data:`SPILL_MAX_AGE` go, then the oldest until at most :data:`SPILL_MAX_FILES` files and
:data:`SPILL_MAX_BYTES` bytes remain.

The child gets only the secret-free environment of :mod:`~tiny_agent_core.tools.environment`. Where bubblewrap
works (and unless the tool is built with ``sandbox=False``) it runs in the sandbox of
:mod:`~tiny_agent_core.tools.sandbox`: read-only system, writable workspace, its own PID namespace, and no
network with ``network=False``; :attr:`BashTool.sandbox` says whether, and why not. bwrap reports a command
killed by signal N as exit code 128+N, so sandboxed that reads ``Command exited with code 137``, not a signal name.

The whole process group is SIGKILLed on cancel, timeout and cap, *and* after a normal exit, so a command's
leftover background children (``sleep 1000 &``) die with it; use ``bg`` for servers. The group is killed while
its leader is still an unreaped zombie (it is waited for with ``WNOWAIT``), so the group id cannot have been
reused by an unrelated process. Children that left the group (``setsid``, daemons) die too: sandboxed, with the
PID namespace (its first process dies with ``bwrap``); unsandboxed, through
:func:`~tiny_agent_core.tools.process_tree.kill_tree`. Cancelling the task (``asyncio.CancelledError``) or
setting the ``cancel`` event kills them at once and re-raises; either returns within milliseconds.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import math
import os
import signal
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from tiny_agent_core.tools.base import (
    MAX_TOOL_LINES,
    MAX_TOOL_OUTPUT,
    TOOL_OUTPUT,
    BuiltinTool,
    Preview,
    ToolAborted,
    ToolError,
    js_number,
    required_string,
)
from tiny_agent_core.tools.private_files import create_private, open_private_folder
from tiny_agent_core.tools.process_tree import kill_tree
from tiny_agent_core.tools.sandbox import Confinement, SandboxStatus

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_CAPTURE",
    "SPILL_MAX_AGE",
    "SPILL_MAX_BYTES",
    "SPILL_MAX_FILES",
    "BashTool",
    "limit_output",
    "spill_directory",
]

DEFAULT_TIMEOUT = 120.0
"""Seconds a command may run when the call gives no ``timeout``."""

SANDBOX_START_TIMEOUT = 10.0
"""Seconds ``bwrap`` may take to set a sandbox up before the command's own timeout starts counting anyway."""

MAX_CAPTURE = 10_000_000
"""Bytes captured per stream (stdout, stderr); past that the group is killed."""

DRAIN_GRACE = 0.5
"""Seconds to wait for the pipes to close after the group was killed (a daemon that left the group can hold
them open forever; what was read by then is the output)."""

SPILL_FOLDER = ".tiny-agent/tool-output"
"""The spill folder, relative to the workspace."""

SPILL_MAX_AGE = 7 * 24 * 3600
"""Seconds a spilled output is kept: older ``*.log`` files are deleted when a new one is written (7 days)."""

SPILL_MAX_FILES = 100
"""Spilled outputs kept at most (the new one included); the oldest go first."""

SPILL_MAX_BYTES = 200_000_000
"""Total bytes of spilled outputs kept at most, 200 MB (the new one included); the oldest go first."""

CAP_NOTE = "Bash output exceeded the 10MB safety cap; complete output was not captured."
CAP_LABEL = "Captured output; command exceeded the 10MB safety cap"

Ending = Literal["exit", "timeout", "capped", "aborted"]


def spill_directory(workspace: Path) -> Path:
    """Where truncated outputs are stored in full."""
    return workspace / SPILL_FOLDER


class BashTool(BuiltinTool):
    """``bash(command, timeout?)``."""

    name = "bash"
    replay_key = "builtin:bash:v1"
    description = (
        "Run commands, builds, tests, and file discovery in the working directory. Use read, write, or edit for "
        "ordinary text file operations. Output is limited to the last 2,000 lines or 50KB; truncated output "
        "includes a full-output path."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command to execute in the working directory."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Optional timeout in seconds. Defaults to 120.",
            },
        },
        "required": ["command"],
    }

    def __init__(
        self,
        workspace: Path,
        *,
        shell: str = "/bin/sh",
        max_capture: int = MAX_CAPTURE,
        extra_env: Mapping[str, str] | None = None,
        sandbox: bool = True,
        network: bool = True,
        writable_roots: Iterable[Path] = (),
    ) -> None:
        """``extra_env``: the workspace's configured variables; ``sandbox``/``network``: see the module docstring;
        ``writable_roots``: further folders (the guard's allowed roots) writable inside the sandbox."""
        self.workspace = workspace
        self.shell = shell
        self.max_capture = max_capture
        self.confinement = Confinement((workspace, *writable_roots), dict(extra_env or {}), sandbox, network)

    @property
    def sandbox(self) -> SandboxStatus:
        """Whether this tool's commands run sandboxed, and why not."""
        return self.confinement.status

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        """Run ``command`` in the workspace (confined when the sandbox is on) and return its output."""
        command = required_string(args.get("command"), "command")
        timeout = _timeout(args.get("timeout"))
        return await self.execute_command(command, timeout, cancel)

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        """The command (and its timeout) as the approval dialog shows it."""
        command = args.get("command")
        text = command if isinstance(command, str) else ""
        timeout = args.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            text += f"\n(timeout {js_number(timeout)} s)"
        return Preview("command", text)

    async def execute_command(self, command: str, seconds: float, cancel: asyncio.Event | None) -> str:
        """Run ``command`` and return the model-facing text (see the module docstring)."""
        # the first call probes bwrap (a subprocess, cached afterwards): not on the event loop
        await asyncio.to_thread(lambda: self.confinement.status)
        run = _Run([self.shell, "-c", command], self.confinement, self.workspace, self.max_capture)
        try:
            ending = await run.wait(seconds, cancel)
        except BaseException:  # cancelled: kill and go, without waiting for the pipes
            await run.close(drain=False)
            raise
        await run.close(drain=ending != "aborted")
        if ending == "aborted":
            raise ToolAborted()
        if ending == "exit" and run.capped:  # the cap was passed while the last output drained
            ending = "capped"
        stdout, stderr = run.output()
        output = (stdout + stderr).decode("utf-8", errors="replace")
        if ending == "capped":
            return await limit_output(_append(output, CAP_NOTE), self.workspace, complete=False)
        if ending == "timeout":
            note = f"Command timed out after {js_number(seconds)} seconds."
            return await limit_output(_append(output, note), self.workspace)
        code = run.returncode
        if code:
            if code < 0:
                note = f"Command was killed by signal {_signal_name(-code)}"
            else:
                note = f"Command exited with code {code}"
            output = _append(output, note)
        elif not output:
            output = "(no output)"
        return await limit_output(output, self.workspace)


def _timeout(value: object) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ToolError("timeout must be a positive number of seconds")
    return float(value) if isinstance(value, float) else value  # keep an int as given, for the message


def _append(output: str, note: str) -> str:
    return f"{output}\n\n{note}" if output else note


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


async def limit_output(output: str, workspace: Path, *, complete: bool = True) -> str:
    """``output`` itself when it fits 2,000 lines and 50 KiB, else its tail plus a note naming the full copy."""
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    encoded = output.encode("utf-8")
    if len(lines) <= MAX_TOOL_LINES and len(encoded) <= MAX_TOOL_OUTPUT:
        return output
    start_byte = max(0, len(encoded) - MAX_TOOL_OUTPUT)
    while start_byte < len(encoded) and encoded[start_byte] & 0xC0 == 0x80:
        start_byte += 1
    tail_lines = encoded[start_byte:].decode("utf-8").split("\n")
    if len(tail_lines) > MAX_TOOL_LINES:
        tail_lines = tail_lines[-MAX_TOOL_LINES:]
    first = max(1, len(lines) - len(tail_lines) + 1)
    label = "Full output" if complete else CAP_LABEL
    try:
        where = str(await asyncio.to_thread(_spill, workspace, encoded))
    except OSError as error:  # e.g. a symlink planted at the spill folder: keep the tail, say why there is no copy
        where = f"not saved ({SPILL_FOLDER}: {error.strerror or error})"
    tail = "\n".join(tail_lines)
    return f"{tail}\n\n[Showing lines {first}-{len(lines)} of {len(lines)}. {label}: {where}]"


def _spill(workspace: Path, data: bytes) -> Path:
    name = f"{uuid.uuid4()}.log"
    with open_private_folder(workspace, SPILL_FOLDER) as folder:
        with open(create_private(folder, name), "wb") as file:
            file.write(data)
        _prune(folder, keep=name)
    return spill_directory(workspace) / name


def _prune(folder: int, *, keep: str) -> None:
    """Delete spilled outputs past :data:`SPILL_MAX_AGE`, then the oldest past the count and size budgets."""
    spilled: list[tuple[float, int, str]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if entry.name.endswith(".log") and stat.S_ISREG(info.st_mode):
                    spilled.append((info.st_mtime, info.st_size, entry.name))
    spilled.sort()
    oldest_kept = time.time() - SPILL_MAX_AGE
    count, total = len(spilled), sum(size for _, size, _ in spilled)
    for modified, size, name in spilled:
        if name == keep:
            continue
        if modified >= oldest_kept and count <= SPILL_MAX_FILES and total <= SPILL_MAX_BYTES:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
        count, total = count - 1, total - size


class _Capture(asyncio.Protocol):
    """Reads one pipe into memory, up to ``limit`` bytes; signals when the limit is passed."""

    def __init__(self, limit: int, capped: asyncio.Future[None]) -> None:
        self.limit = limit
        self.capped = capped
        self.data = bytearray()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sink = TOOL_OUTPUT.get()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def data_received(self, data: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += data[:room]
            if self._sink is not None:
                text = self._decoder.decode(data[:room])
                if text:
                    self._sink(text)
        if len(data) > room and not self.capped.done():
            self.capped.set_result(None)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class _Run:
    """One spawned command: its process, its pipes, its exit watcher."""

    def __init__(self, argv: list[str], confinement: Confinement, cwd: Path, limit: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._capped: asyncio.Future[None] = self._loop.create_future()
        self._exited: asyncio.Future[None] = self._loop.create_future()
        self._captures = (_Capture(limit, self._capped), _Capture(limit, self._capped))
        self._transports: list[asyncio.ReadTransport] = []
        self._killed = False
        self._token = uuid.uuid4().hex
        self._sandboxed = confinement.status.available
        self._started = _Started()
        self.returncode: int | None = None
        reads: list[int] = []
        writes: list[int] = []
        try:
            for _ in range(3 if self._sandboxed else 2):  # stdout, stderr and, sandboxed, the start signal
                read, write = os.pipe()
                reads.append(read)
                writes.append(write)
            command = _announcing(argv) if self._sandboxed else argv
            spawned, environment = confinement.prepare(command, run_token=self._token)
            self._process = subprocess.Popen(
                spawned,
                cwd=cwd,
                env=environment,
                stdin=writes[2] if self._sandboxed else subprocess.DEVNULL,
                stdout=writes[0],
                stderr=writes[1],
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            for fd in reads:
                os.close(fd)
            raise
        finally:
            for fd in writes:
                os.close(fd)
        self._pipes = [os.fdopen(fd, "rb", buffering=0) for fd in reads]
        threading.Thread(target=self._watch_exit, name=f"bash-{self._process.pid}", daemon=True).start()

    @property
    def pgid(self) -> int:
        return self._process.pid

    @property
    def capped(self) -> bool:
        return self._capped.done()

    def _watch_exit(self) -> None:
        # WNOWAIT: the leader stays a zombie until close() reaps it, so its pid (= the group id) stays taken
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitid(os.P_PID, self._process.pid, os.WEXITED | os.WNOWAIT)
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            self._loop.call_soon_threadsafe(_settle, self._exited)

    async def wait(self, seconds: float, cancel: asyncio.Event | None) -> Ending:
        """How the command ended. Its ``seconds`` count from when it starts: sandboxed, once the shell inside the
        finished sandbox says so (within :data:`SANDBOX_START_TIMEOUT`), so a busy machine's set-up of the
        sandbox is not charged to it."""
        protocols: list[asyncio.Protocol] = [*self._captures, self._started][: len(self._pipes)]
        for pipe, protocol in zip(self._pipes, protocols, strict=True):
            transport, _ = await self._loop.connect_read_pipe(_factory(protocol), pipe)
            self._transports.append(transport)
        waits: set[asyncio.Future[Any]] = {self._exited, self._capped}
        aborted: asyncio.Task[Literal[True]] | None = None
        if cancel is not None:
            aborted = asyncio.ensure_future(cancel.wait())
            waits.add(aborted)
        try:
            if self._sandboxed:
                await asyncio.wait(
                    {*waits, self._started.started}, timeout=SANDBOX_START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
                )
            done, _ = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if aborted is not None:
                aborted.cancel()
        if cancel is not None and cancel.is_set():
            return "aborted"
        if self._capped in done:
            return "capped"
        if self._exited in done:
            return "exit"
        return "timeout"

    def output(self) -> tuple[bytes, bytes]:
        return bytes(self._captures[0].data), bytes(self._captures[1].data)

    def kill_group(self) -> None:
        if self._killed:
            return
        self._killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        if not self._sandboxed:  # sandboxed, the PID namespace dies with bwrap
            kill_tree(self._token, leader=self._process.pid)

    async def close(self, *, drain: bool) -> None:
        """Kill the group, reap the leader, then (with ``drain``) read what is left in the pipes, and close them.

        Without ``drain`` (cancellation) it returns within milliseconds: the output is not wanted.
        """
        self.kill_group()
        try:
            await asyncio.wait({self._exited}, timeout=2.0 if drain else 0.1)
            self.returncode = self._process.poll()
            open_pipes = [capture.closed for capture in self._captures if not capture.closed.done()]
            if drain and open_pipes and self._transports:
                await asyncio.wait(open_pipes, timeout=DRAIN_GRACE)
        finally:
            for transport in self._transports:
                transport.close()
            for pipe in self._pipes[len(self._transports) :]:  # never handed to a transport
                with contextlib.suppress(OSError):
                    pipe.close()
            if self.returncode is None:
                self.returncode = self._process.poll()


def _announcing(argv: list[str]) -> list[str]:
    """``argv`` run by a shell that first writes a byte to its standard input (the start signal's pipe; ``sh`` only
    redirects descriptors 0–9), then makes ``/dev/null`` its standard input as the command's always is, and becomes
    ``argv`` (``exec "$0" "$@"``): inside the sandbox, that byte means every mount is in place and the command is
    starting."""
    return [argv[0], "-c", 'printf . >&0; exec 0</dev/null; exec "$0" "$@"', *argv]


class _Started(asyncio.Protocol):
    """Reads the start signal's pipe: :attr:`started` is done once the command starts (or the pipe closed)."""

    def __init__(self) -> None:
        self.started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        _settle(self.started)

    def connection_lost(self, exc: Exception | None) -> None:
        _settle(self.started)


def _factory(protocol: asyncio.Protocol) -> Callable[[], asyncio.Protocol]:
    return lambda: protocol


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
