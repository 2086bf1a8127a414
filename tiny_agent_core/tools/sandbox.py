"""The bubblewrap sandbox of the process tools (``bash``, ``bg``), Linux only.

A sandboxed command runs as ``bwrap <options> -- /bin/sh -c <command>`` with:

- the whole file system read-only (``--ro-bind / /``), a fresh ``/dev`` and a private, empty ``/tmp``;
- the workspace and the guard's allowed roots bound writable *at their own paths*, so every path a tool
  reports (the workspace, spill files, bg logs) is the same inside and outside;
- the user's runtime folder (``$XDG_RUNTIME_DIR``, ``/run/user/<uid>``: the D-Bus socket of the keyring) hidden
  behind an empty folder;
- a new PID namespace with its own ``/proc`` (``--unshare-pid --proc /proc``), so the agent's
  ``/proc/<pid>/environ`` cannot be read and killing the namespace's first process kills every process in it,
  including those that called ``setsid`` or daemonised; ``--die-with-parent`` does that when ``bwrap``'s
  parent (this program) dies, for ``bash`` (``bg`` processes outlive this program, as unsandboxed ones do);
- optionally no network (``--unshare-net``: only a private loopback);
- only the secret-free environment of :mod:`~tiny_agent_core.tools.environment` (``bwrap`` itself is started
  with it, and ``--clearenv`` drops anything else).

Whether ``bwrap`` can run is probed once per process (:func:`sandbox_status`): the binary must exist *and* a
trivial sandbox must start (user namespaces may be disabled). Where it cannot, the tools run unsandboxed and
:attr:`SandboxStatus.reason` says why in words a user can act on.

Not covered: files the user can read stay readable (read-only is not hidden), and with the network on a command
can reach whatever the machine can (abstract Unix sockets included).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tiny_agent_core.tools.environment import child_environment
from tiny_agent_core.tools.process_tree import RUN_MARKER, become_subreaper

__all__ = [
    "PROBE_TIMEOUT",
    "SANDBOX_OFF",
    "SANDBOX_TMPDIR",
    "Confinement",
    "SandboxStatus",
    "sandbox_command",
    "sandbox_status",
]

PROBE_TIMEOUT = 10.0
"""Seconds the one-time probe (``bwrap ... true``) may take before the sandbox is declared unavailable."""

SANDBOX_TMPDIR = "/tmp"
"""``TMPDIR`` inside the sandbox: its private, writable ``/tmp``."""

_INSTALL_HINT = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap (or your distribution's package)"


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether the process tools' commands run in the bubblewrap sandbox."""

    available: bool
    """``True`` when commands run sandboxed."""
    reason: str | None
    """Why not, in words a user can act on; ``None`` when available."""


SANDBOX_OFF = SandboxStatus(False, "the sandbox is turned off for this workspace")
"""The status of a tool constructed with ``sandbox=False``."""


def _base_options() -> list[str]:
    return ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Whether ``bwrap`` can sandbox commands on this machine (probed once, then cached)."""
    if sys.platform != "linux":
        return SandboxStatus(False, f"the sandbox needs Linux with bubblewrap; this is {sys.platform}")
    binary = shutil.which("bwrap")
    if binary is None:
        return SandboxStatus(False, _INSTALL_HINT)
    try:
        result = subprocess.run(
            [binary, *_base_options(), "--die-with-parent", "--clearenv", "--", "/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={"PATH": os.defpath},
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return SandboxStatus(False, f"bubblewrap did not start a sandbox within {PROBE_TIMEOUT:g} seconds")
    except OSError as error:
        return SandboxStatus(False, f"bubblewrap ({binary}) cannot be run: {error.strerror or error}")
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return SandboxStatus(
            False,
            "bubblewrap cannot create a sandbox here"
            + (f" ({detail[-1]})" if detail else f" (exit code {result.returncode})")
            + "; unprivileged user namespaces may be disabled "
            "(e.g. sysctl kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0)",
        )
    return SandboxStatus(True, None)


def sandbox_command(
    argv: Sequence[str],
    *,
    writable: Iterable[Path],
    env: Mapping[str, str],
    network: bool,
    die_with_parent: bool = True,
) -> list[str]:
    """``argv`` wrapped in ``bwrap`` (see the module docstring); call only when :func:`sandbox_status` is available.

    ``writable`` are the folders bound read-write at their own paths (the workspace first); ``env`` is the whole
    environment of the command. Spawn the result with ``env`` as well, so ``bwrap``'s own ``/proc/<pid>/environ``
    holds nothing else.
    """
    binary = shutil.which("bwrap") or "bwrap"
    options = [binary, *_base_options(), "--tmpfs", "/tmp"]
    if die_with_parent:
        options.append("--die-with-parent")
    runtime = _runtime_folder()
    if runtime is not None:
        options += ["--tmpfs", str(runtime)]
    if not network:
        options.append("--unshare-net")
    for folder in dict.fromkeys(Path(os.path.realpath(path)) for path in writable):
        if folder.is_dir():
            options += ["--bind", str(folder), str(folder)]
    options.append("--clearenv")
    for name, value in env.items():
        options += ["--setenv", name, value]
    return [*options, "--", *argv]


def _runtime_folder() -> Path | None:
    """The user's runtime folder (sockets of the session bus and the keyring), when there is one."""
    candidate = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    path = Path(os.path.realpath(candidate))
    return path if path.is_absolute() and path.is_dir() and path != Path("/") else None


@dataclass(frozen=True, slots=True)
class Confinement:
    """How a process tool starts its commands: the environment, the sandbox and the network of one workspace."""

    writable: tuple[Path, ...]
    """The workspace first, then the guard's other allowed roots: writable inside the sandbox."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Variables the user configured for the workspace (secret-looking names are dropped)."""
    sandboxed: bool = True
    """``False`` turns the sandbox off (commands run as plain children)."""
    network: bool = True
    """``False`` gives sandboxed commands no network (only their own loopback); unsandboxed ones are not limited."""

    @property
    def status(self) -> SandboxStatus:
        """Whether commands run sandboxed, and why not."""
        return sandbox_status() if self.sandboxed else SANDBOX_OFF

    def prepare(
        self, argv: Sequence[str], *, run_token: str, die_with_parent: bool = True
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment to spawn ``argv`` with.

        Sandboxed, the argv is ``bwrap ... -- argv``; otherwise ``argv`` itself, with ``run_token`` in the
        environment for :func:`~tiny_agent_core.tools.process_tree.kill_tree`, and this process made a child
        subreaper (:func:`~tiny_agent_core.tools.process_tree.become_subreaper`) so the command's children that
        leave its group stay in our tree for it.
        """
        environment = child_environment(self.extra_env)
        if self.status.available:
            environment["TMPDIR"] = SANDBOX_TMPDIR
            wrapped = sandbox_command(
                argv, writable=self.writable, env=environment, network=self.network, die_with_parent=die_with_parent
            )
            return wrapped, environment
        become_subreaper()
        environment[RUN_MARKER] = run_token
        return list(argv), environment
