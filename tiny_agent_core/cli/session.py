"""``tiny-agent session check|plan|abandon|show``: the strict reducer, the recovery planner and the way out of a
blocked session, from the command line.

Output is always exactly one line of strict JSON on stdout, never a traceback. A number that does not fit a
double (``1e400`` in tool arguments) prints as ``null``, as the reference prints it.

* ``session check FILE`` → the reference's golden format, ``{"ok": true, "state": {...}}`` or
  ``{"ok": false, "error": {"code", "line", "seq"?}}``; with ``--summary`` the state is replaced by
  ``"facts": n, "operation": "<idle|run|compaction>", "usage": {input, output, cacheRead, cacheWrite}``.
* ``session plan FILE --current CURRENT.json`` → the plan (``{"type": ...}``, recovery-plan schema). CURRENT is
  a current configuration (``{configurationDigest, environmentIdentity, tools}``) or a planner fixture input
  holding one under ``"current"``.
* ``session abandon FILE`` → closes the file's open operation as aborted without a provider (the planner's abort
  branch, through the store, under the writer lock): ``{"ok": true, "closed": {"operationId", "operationKind",
  "abortRequested", "attemptsClosed", "syntheticResults"}}``, or ``"closed": null`` when nothing was open.

Exit status: 0 when the file reduced (and was planned, or abandoned), 2 on corruption, an unreadable file, a bad
``--current``, a session another process is writing, or a refused write — then the error object has ``code``
``FILE_UNREADABLE``, ``INVALID_CURRENT``, ``SESSION_LOCKED`` or ``SESSION_ERROR`` and a ``message``. A
corruption has the reducer's ``code``/``line``/``seq``, plus a ``message`` when the file has no complete header
line: a creation that never finished (versions before atomic creation left such files on a full disk), which
holds no data and can be deleted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tiny_agent_core.cli.show import add_show_command
from tiny_agent_core.errors import SessionCorruption, SessionError, SessionLockedError
from tiny_agent_core.session import SessionState, reduce_session, state_to_json
from tiny_agent_core.session.abandon import abandon_operation
from tiny_agent_core.session.canonical_json import js_numbers
from tiny_agent_core.session.planner import plan_recovery, validate_current
from tiny_agent_core.session.store import SessionStore, require_header_line

EXIT_OK = 0
EXIT_FAILED = 2


def register(subparsers: Any) -> None:
    """Add the ``session`` subcommand with ``check``, ``plan``, ``abandon`` and ``show``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "session", help="check a session file, plan its recovery or abandon its open operation", description=__doc__
    )
    commands = parser.add_subparsers(dest="session_command", required=True)
    check = commands.add_parser("check", help="reduce a session file strictly; print the state or the error")
    check.add_argument("--summary", action="store_true", help="print fact count, operation and usage only")
    check.add_argument("file", type=Path, help="a .jsonl session file")
    check.set_defaults(handler=_guarded(_check))
    plan = commands.add_parser("plan", help="print the recovery plan of a session file")
    plan.add_argument("file", type=Path, help="a .jsonl session file")
    plan.add_argument("--current", type=Path, required=True, help="the current configuration (JSON file)")
    plan.set_defaults(handler=_guarded(_plan))
    abandon = commands.add_parser(
        "abandon", help="close the open operation as aborted (no provider needed) so the session is usable again"
    )
    abandon.add_argument("file", type=Path, help="a .jsonl session file")
    abandon.set_defaults(handler=_guarded(_abandon))
    add_show_command(commands)


def _emit(value: dict[str, Any]) -> None:
    print(json.dumps(js_numbers(value), ensure_ascii=True, allow_nan=False))


def _failure(code: str, message: str, path: Path) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "path": str(path)}}


def _corruption(error: SessionCorruption) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": error.code, "line": error.line}
    if error.seq is not None:
        detail["seq"] = error.seq
    if str(error) != error.code:
        detail["message"] = str(error)
    return {"ok": False, "error": detail}


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError as error:
        _emit(_failure("FILE_UNREADABLE", f"cannot read {path}: {error.strerror or error}", path))
        return None


def _guarded(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            code: int = handler(args)
        except Exception as error:  # a bug: still one JSON object, no traceback
            _emit({"ok": False, "error": {"code": "INTERNAL_ERROR", "message": f"{type(error).__name__}: {error}"}})
            return EXIT_FAILED
        return code

    return run


def _reduce(path: Path, data: bytes) -> SessionState:
    require_header_line(data, path.name)
    return reduce_session(data)


def _check(args: argparse.Namespace) -> int:
    data = _read(args.file)
    if data is None:
        return EXIT_FAILED
    try:
        state = _reduce(args.file, data)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    if args.summary:
        _emit(
            {
                "ok": True,
                "facts": state.fact_count,
                "operation": state.operation.kind,
                "usage": state.usage.as_dict(),
            }
        )
    else:
        _emit({"ok": True, "state": state_to_json(state)})
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    raw = _read(args.current)
    if raw is None:
        return EXIT_FAILED
    try:
        value = json.loads(raw)
        if type(value) is dict and "current" in value and "configurationDigest" not in value:
            value = value["current"]  # a planner fixture input: {"sessionFile", "current"}
        current = validate_current(value)
    except ValueError as error:
        _emit(_failure("INVALID_CURRENT", f"{args.current}: {error}", args.current))
        return EXIT_FAILED
    data = _read(args.file)
    if data is None:
        return EXIT_FAILED
    try:
        state = _reduce(args.file, data)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    _emit(plan_recovery(state, current))
    return EXIT_OK


def _abandon(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        store = SessionStore.open(path)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    except SessionLockedError:
        message = f"{path.name} is open for writing in another window or process; close it there, then try again."
        _emit(_failure("SESSION_LOCKED", message, path))
        return EXIT_FAILED
    except OSError as error:
        _emit(_failure("FILE_UNREADABLE", f"cannot open {path}: {error.strerror or error}", path))
        return EXIT_FAILED
    except SessionError as error:
        _emit(_failure("SESSION_ERROR", str(error), path))
        return EXIT_FAILED
    with store:
        try:
            closed = abandon_operation(store)
        except SessionError as error:
            _emit(_failure("SESSION_ERROR", str(error), path))
            return EXIT_FAILED
    _emit({"ok": True, "closed": closed.as_json() if closed is not None else None})
    return EXIT_OK
