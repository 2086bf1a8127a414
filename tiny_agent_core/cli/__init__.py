"""The ``tiny-agent`` command line: the core usable without the window (SPEC §10).

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds its parser and sets
``handler`` to a function ``(args) -> exit code``. Output contracts are documented in each module.

Common to every command: an error is one line on stderr and exit 2, never a traceback. A usage error is
``tiny-agent <command>: error: <message>``; a failure the command does not expect (a bug) is
``{"error": {"kind": "internal", "message": ...}}``, with the traceback logged only when the environment
variable ``TINY_AGENT_DEBUG`` is set (then everything logged goes to stderr). When stdout is a pipe that closes
early (``| head``), the command stops quietly. Ctrl-C outside a run prints ``tiny-agent: interrupted`` and exits
130. ``tiny-agent --version`` prints the installed version.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from tiny_agent_core.cli.output import discard_stdout, one_line

DEBUG_ENV = "TINY_AGENT_DEBUG"
"""Environment variable: when set (and not ``0``), log everything to stderr, tracebacks included."""

DISTRIBUTION = "tiny-agent-desktop"
"""The installed distribution whose version ``--version`` prints."""

COMMANDS: dict[str, tuple[str, ...]] = {
    "wire": ("wire",),
    "index": ("sessions", "index"),
    "chat": ("chat",),
    "session": ("session",),
    "price": ("price",),
    "cost": ("cost",),
    "run": ("run",),
    "compare": ("compare",),
    "comparisons": ("comparisons",),
}
"""Each subcommand module of this package and the commands it registers, in ``--help`` order. Only the module of
the command being run is imported (a small ``session check`` must not pay for httpx, pydantic and the agent)."""

_log = logging.getLogger(__name__)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, ``tiny-agent <command>: error: <message>`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` as one line and exit 2 (argparse would print the whole usage first)."""
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def _version() -> str:
    import importlib.metadata  # only for --version: it costs a start-up 15-20 ms

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``: print ``tiny-agent <version>`` and exit (the version is looked up only when asked for)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: with only the module of the command ``argv`` names (default ``sys.argv[1:]``) when it
    names one; with none when it starts with ``--version`` (argparse prints the version and exits as soon as it
    reads that option, before it looks for a command); else (``--help``, a typo) with every subcommand
    registered."""
    parser = _Parser(prog="tiny-agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True)
    words = list(sys.argv[1:] if argv is None else argv)
    named = [module for module, commands in COMMANDS.items() if words and words[0] in commands]
    for module in [] if words[:1] == ["--version"] else named or COMMANDS:
        importlib.import_module(f"{__name__}.{module}").register(subparsers)
    return parser


class _StderrHandler(logging.Handler):
    """Writes log records to the current ``sys.stderr``: in full when debugging, else errors only, one line each."""

    def __init__(self, debug: bool) -> None:
        super().__init__(logging.DEBUG if debug else logging.ERROR)
        self.debug = debug
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record`` (with its traceback only when debugging)."""
        try:
            if self.debug:
                text = self.format(record)
            else:
                text = f"tiny-agent: {record.levelname.lower()}: {one_line(record.getMessage())}"
            sys.stderr.write(text + "\n")
        except Exception:
            self.handleError(record)


def _configure_logging(debug: bool) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    root.addHandler(_StderrHandler(debug))
    if debug:
        root.setLevel(logging.DEBUG)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiny-agent`` console script; returns the process exit code."""
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    _configure_logging(debug)
    try:
        try:
            args = build_parser(argv).parse_args(argv)
        except SystemExit:  # --help, --version or a usage error: deliver what argparse printed first
            sys.stdout.flush()
            raise
        code: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
        return 2
    except KeyboardInterrupt:
        print("tiny-agent: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        _log.debug("unexpected error", exc_info=True)  # shown with TINY_AGENT_DEBUG=1
        message = f"unexpected {type(error).__name__}: {one_line(error)}"
        hint = f"this is a bug; run again with {DEBUG_ENV}=1 to see where it happened"
        print(json.dumps({"error": {"kind": "internal", "message": f"{message} ({hint})"}}), file=sys.stderr)
        return 2
    return code
