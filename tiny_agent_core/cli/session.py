"""``tiny-agent session check|plan``: the strict reducer and the recovery planner from the command line.

Output is always exactly one JSON object on stdout, never a traceback:

* ``session check FILE`` → the reference's golden format, ``{"ok": true, "state": {...}}`` or
  ``{"ok": false, "error": {"code", "line", "seq"?}}``; with ``--summary`` the state is replaced by
  ``"facts": n, "operation": "<idle|run|compaction>", "usage": {input, output, cacheRead, cacheWrite}``.
* ``session plan FILE --current CURRENT.json`` → the plan (``{"type": ...}``, recovery-plan schema). CURRENT is
  a current configuration (``{configurationDigest, environmentIdentity, tools}``) or a planner fixture input
  holding one under ``"current"``.

Exit status: 0 when the file reduced (and was planned), 2 on corruption, an unreadable file or a bad
``--current`` — then the error object has ``code`` ``FILE_UNREADABLE`` or ``INVALID_CURRENT`` and a ``message``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import reduce_session, state_to_json
from tiny_agent_core.session.planner import plan_recovery, validate_current

EXIT_OK = 0
EXIT_FAILED = 2


def register(subparsers: Any) -> None:
    """Add the ``session`` subcommand with ``check`` and ``plan``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "session", help="check a session file or plan its recovery", description=__doc__
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


def _emit(value: dict[str, Any]) -> None:
    print(json.dumps(value, ensure_ascii=True))


def _failure(code: str, message: str, path: Path) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "path": str(path)}}


def _corruption(error: SessionCorruption) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": error.code, "line": error.line}
    if error.seq is not None:
        detail["seq"] = error.seq
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


def _check(args: argparse.Namespace) -> int:
    data = _read(args.file)
    if data is None:
        return EXIT_FAILED
    try:
        state = reduce_session(data)
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
        state = reduce_session(data)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    _emit(plan_recovery(state, current))
    return EXIT_OK
