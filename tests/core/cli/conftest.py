"""``tiny-agent`` in the test process: the ``cli`` fixture calls ``main(argv)`` as the console script would.

A child process costs ~0.5 CPU-s before the command runs (the interpreter, then the agent, httpx and pydantic), so a
test whose subject is what a command prints, exits with and writes calls ``main`` here, with the environment,
working folder and stdin it would have had as a child. What only a real process shows stays a subprocess test
(``sys.executable -m tiny_agent_core``): SIGINT and SIGKILL, a closed stdout, what the process imports, what its
children inherit from its environment; and every command keeps at least one real-subprocess test, so the console
entry point itself stays covered.

``main`` configures the root logger (a stderr handler, the level when debugging): the fixture restores it after
each call. A ``SystemExit`` (argparse's ``--help``, ``--version`` and usage errors) is the exit code, as it is for
the process.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from tiny_agent_core.cli import main

ROOT = Path(__file__).resolve().parents[3]
"""The repository: the working folder of the commands (as the subprocess tests start them)."""


@dataclass(frozen=True, slots=True)
class CliResult:
    """What one in-process ``tiny-agent`` call returned and printed (named as ``subprocess.CompletedProcess``)."""

    returncode: int
    stdout: str
    stderr: str


class Cli(Protocol):
    """The ``cli`` fixture: run ``tiny-agent *args`` in this process."""

    def __call__(
        self, *args: str, env: Mapping[str, str | None] | None = None, stdin: str = "", cwd: Path = ROOT
    ) -> CliResult:
        """``env``: variables to set for the call (``None``: unset); ``stdin``: what the command reads."""
        ...


def _exit_code(error: SystemExit) -> int:
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)  # as the interpreter does for sys.exit("message")
    return 1


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run ``tiny-agent`` in-process (see the module docstring)."""

    def run(*args: str, env: Mapping[str, str | None] | None = None, stdin: str = "", cwd: Path = ROOT) -> CliResult:
        capsys.readouterr()  # what the test printed before is not the command's
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        with monkeypatch.context() as patch:
            for name, value in (env or {}).items():
                if value is None:
                    patch.delenv(name, raising=False)
                else:
                    patch.setenv(name, value)
            patch.chdir(cwd)
            patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
            try:
                code = main(list(args))
            except SystemExit as error:
                code = _exit_code(error)
            finally:
                root.setLevel(level)
                root.handlers[:] = handlers
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
