"""The ``tiny-agent-gui`` command: options that need no window, the system check, the log, then the window.

``tiny-agent-gui [--workspace DIR] [--screenshot PNG]`` starts the window (``--screenshot`` saves a PNG of it once
painted and quits). ``--version``, ``--install-desktop-entry``, ``--remove-desktop-entry``, ``--diagnostics`` and
``--check-system`` answer without starting a window. Before Qt starts a window,
:func:`tiny_agent_gui.system_check.check` makes sure the display and the xcb plugin's libraries are there: if not,
one line names what is missing and the exit status is 2 (instead of Qt's misleading message and an abort).

Someone who double-clicked the app has no terminal, so a problem that stops it is also written to the log file
and shown on screen (:mod:`tiny_agent_gui.startup_notice`: a desktop notification, and a message box where Qt
already runs): the system check's line (which names the packages to install), and an unexpected error of the
window (which says where the log is), after which the error is raised on as before.

This module imports no Qt at import time (``--diagnostics`` loads Qt Core only, for its version), so these options
work, and fail clearly, where Qt's window cannot start.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from tiny_agent_gui import desktop_entry, system_check
from tiny_agent_gui.diagnostics import app_version
from tiny_agent_gui.logs import redact, setup_logging
from tiny_agent_gui.startup_notice import Notifier, show

__all__ = ["main", "parser"]

_log = logging.getLogger(__name__)


def parser() -> argparse.ArgumentParser:
    """The command line of ``tiny-agent-gui``."""
    result = argparse.ArgumentParser(
        prog="tiny-agent-gui", description="tiny-agent desktop: run a coding agent and see what it did and cost."
    )
    result.add_argument("--version", action="store_true", help="print the version and exit")
    result.add_argument("--workspace", type=Path, help="a folder with tiny-agent sessions to open")
    result.add_argument("--screenshot", type=Path, help="save a PNG of the window once painted, then quit")
    result.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="add tiny-agent desktop to the desktop's application launcher (entry, icons, AppStream file) and exit",
    )
    result.add_argument(
        "--remove-desktop-entry", action="store_true", help="remove what --install-desktop-entry added and exit"
    )
    result.add_argument(
        "--diagnostics",
        action="store_true",
        help="print what Help › Copy Diagnostics copies (versions, folders, keyring, sandbox, settings without "
        "secrets) and exit",
    )
    result.add_argument(
        "--check-system",
        action="store_true",
        help="check the display and the system libraries the window needs, print the result and exit (2: missing)",
    )
    return result


def _diagnostics_text() -> str:
    import PySide6
    from PySide6 import QtCore  # Qt Core only: no display needed

    from tiny_agent_core.settings import AppSettings
    from tiny_agent_gui.diagnostics import collect, settings_summary

    toolkit = f"{QtCore.qVersion()} (PySide6 {PySide6.__version__})"
    return collect(settings_summary(AppSettings.load()), toolkit).as_text()


def _log_place(log_path: Path | None) -> str:
    if log_path is None:
        return "No log file could be written: start tiny-agent-gui from a terminal to see the details."
    return f"The log file: {log_path}"


def _cannot_start(problem: str, notify: Notifier) -> int:
    """The system check's ``problem`` on stderr (one line, as before), in the log file and on screen; status 2."""
    print(problem, file=sys.stderr)
    log_path = setup_logging(stderr=False)  # the line above is the one stderr gets
    if log_path is not None:  # else logging's last resort would print the line a second time
        _log.error("tiny-agent desktop %s cannot start: %s", app_version(), problem)
    notify("tiny-agent desktop cannot start", f"{problem.removeprefix('tiny-agent-gui: ')}\n\n{_log_place(log_path)}")
    return 2


def main(argv: Sequence[str] | None = None, *, notify: Notifier = show) -> int:
    """Entry point of the ``tiny-agent-gui`` script and of the bundle. ``notify`` shows a problem that stops the
    app on screen (tests pass their own)."""
    args = parser().parse_args(argv)
    if args.version:
        print(f"tiny-agent-gui {app_version()}")
        return 0
    if args.install_desktop_entry or args.remove_desktop_entry:
        layout = desktop_entry.Layout.for_user()
        if args.remove_desktop_entry:
            removed = desktop_entry.remove(layout)
            print(f"removed {len(removed)} files of the desktop entry from {layout.data_home}")
        else:
            written = desktop_entry.install(layout)
            command = desktop_entry.launch_command()[0]
            print(f"installed {layout.desktop_file} (Exec={command}) and {len(written) - 1} icon and AppStream files")
        return 0
    if args.diagnostics:
        print(_diagnostics_text(), end="")
        return 0
    problem = system_check.check()
    if args.check_system:
        print(problem or "tiny-agent-gui: the display and the libraries the window needs are there")
        return 2 if problem else 0
    if problem is not None:
        return _cannot_start(problem, notify)
    log_path = setup_logging()
    _log.info(
        "tiny-agent desktop %s starting (Python %s, %s%s), log %s",
        app_version(),
        platform.python_version(),
        platform.platform(),
        ", bundle" if getattr(sys, "frozen", False) else "",
        log_path,
    )
    try:
        from tiny_agent_gui.app import run  # Qt is imported only now

        status = run(args)
    except Exception as error:
        _log.critical("tiny-agent desktop stopped on an unexpected error", exc_info=True)
        notify(
            "tiny-agent desktop stopped on an unexpected error",
            redact(f"{type(error).__name__}: {error}") + f"\n\n{_log_place(log_path)}\nTo report it, add what "
            "tiny-agent-gui --diagnostics prints (it never shows keys).",
        )
        raise
    _log.info("tiny-agent desktop exiting with status %s", status)
    return status
