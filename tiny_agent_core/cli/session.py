"""``tiny-agent session check|plan|abandon|show|export|import``: the strict reducer, the recovery planner, the way
out of a blocked session, and sessions out of and into a workspace, from the command line.

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

* ``session export [--format md|jsonl] FILE [-o OUT]`` → the session as Markdown (messages, tool calls, costs
  from the index database when it exists; ``unknown`` otherwise) or the v2 file as it is
  (:mod:`tiny_agent_core.export`). Without ``-o`` the document itself is printed on stdout; with ``-o`` it is
  written atomically and the line is ``{"ok": true, "path", "format", "bytes"}``.
* ``session import FILE [--workspace DIR]`` → validates FILE with the strict reducer, copies it into DIR's
  sessions folder (default: the current folder; under a new id when its id is already there) and indexes it:
  ``{"ok": true, "sessionId", "path", "copiedAsNew"}``. A rejected file prints the reducer's error and nothing is
  written.

Exit status: 0 when the file reduced (and was planned, or abandoned), 2 on corruption, an unreadable file, a bad
``--current``, a session another process is writing, or a refused write — then the error object has ``code``
``FILE_UNREADABLE``, ``FILE_UNWRITABLE``, ``INVALID_CURRENT``, ``SESSION_LOCKED`` or ``SESSION_ERROR`` and a
``message``. A
corruption has the reducer's ``code``/``line``/``seq``, plus a ``message`` when the file has no complete header
line: a creation that never finished (versions before atomic creation left such files on a full disk), which
holds no data and can be deleted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tiny_agent_core.cli.show import add_show_command
from tiny_agent_core.errors import LedgerError, SessionCorruption, SessionError, SessionLockedError
from tiny_agent_core.session import SessionState, reduce_session, state_to_json
from tiny_agent_core.session.canonical_json import js_numbers
from tiny_agent_core.session.framing import require_header_line

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
    export = commands.add_parser("export", help="write a session as Markdown or as its v2 file")
    export.add_argument("--format", choices=("md", "jsonl"), default="md", help="md (default) or jsonl (the v2 file)")
    export.add_argument("file", type=Path, help="a .jsonl session file")
    export.add_argument("-o", "--output", type=Path, help="write here (atomically) instead of to stdout")
    export.set_defaults(handler=_guarded(_export))
    import_ = commands.add_parser("import", help="validate a v2 session file and copy it into a workspace")
    import_.add_argument("file", type=Path, help="a .jsonl session file from elsewhere")
    import_.add_argument(
        "--workspace", type=Path, default=None, help="the workspace to import into (default: this folder)"
    )
    import_.set_defaults(handler=_guarded(_import))


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
    from tiny_agent_core.session.planner import plan_recovery, validate_current  # only here: keeps check's start

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
    from tiny_agent_core.session.abandon import abandon_operation  # only here: keeps check's start
    from tiny_agent_core.session.store import SessionStore

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


def _index_database_if_any() -> Any:
    """The index connection when its database exists (never created here), else ``None``."""
    from tiny_agent_core.ledger import connect
    from tiny_agent_core.paths import database_path

    return connect() if database_path().exists() else None


def _os_failure(error: OSError, source: Path) -> dict[str, Any]:
    """``FILE_UNREADABLE`` when reading ``source`` failed, else ``FILE_UNWRITABLE`` (the file being written)."""
    failed = Path(error.filename) if error.filename is not None else source
    reason = error.strerror or str(error)
    if failed == source:
        return _failure("FILE_UNREADABLE", f"cannot read {source}: {reason}", source)
    return _failure("FILE_UNWRITABLE", f"cannot write {failed}: {reason}; choose another place.", failed)


def _export(args: argparse.Namespace) -> int:
    from tiny_agent_core.export import export_session, session_markdown

    path: Path = args.file
    try:
        conn = _index_database_if_any() if args.format == "md" else None
    except LedgerError as error:
        print(f"tiny-agent: costs not shown: {error}", file=sys.stderr)
        conn = None
    try:
        if args.output is None:
            if args.format == "md":
                sys.stdout.write(session_markdown(path, conn))
            else:
                data = path.read_bytes()
                _reduce(path, data)
                sys.stdout.buffer.write(data)
            return EXIT_OK
        export_session(path, args.output, args.format, conn)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    except OSError as error:
        _emit(_os_failure(error, path))
        return EXIT_FAILED
    finally:
        if conn is not None:
            conn.close()
    size = args.output.stat().st_size
    _emit({"ok": True, "path": str(args.output), "format": args.format, "bytes": size})
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    from tiny_agent_core.export import import_session
    from tiny_agent_core.ledger import connect

    path: Path = args.file
    workspace: Path = args.workspace or Path.cwd()
    if not workspace.is_dir():
        _emit(_failure("FILE_UNWRITABLE", f"{workspace} is not a folder; create it or name another.", workspace))
        return EXIT_FAILED
    try:
        conn = connect()
    except LedgerError as error:
        print(f"tiny-agent: the session is imported but not indexed: {error}", file=sys.stderr)
        conn = None
    try:
        imported = import_session(path, workspace, conn)
    except SessionCorruption as error:
        _emit(_corruption(error))
        return EXIT_FAILED
    except OSError as error:
        _emit(_os_failure(error, path))
        return EXIT_FAILED
    except SessionError as error:
        _emit(_failure("SESSION_ERROR", str(error), path))
        return EXIT_FAILED
    finally:
        if conn is not None:
            conn.close()
    _emit(
        {
            "ok": True,
            "sessionId": imported.session_id,
            "path": str(imported.path),
            "copiedAsNew": imported.copied_as_new,
        }
    )
    return EXIT_OK
