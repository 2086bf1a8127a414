"""Sessions out of and into this app: Markdown for people, the v2 file for tools, and importing a v2 file.

* :func:`session_markdown` renders a session for reading: its title (the user's, else the first message), model,
  workspace and totals, then every message in order — each tool call with its arguments, outcome and result
  summary (:mod:`tiny_agent_core.tool_outcomes`, through the :class:`~tiny_agent_core.timeline.Timeline`) — and a
  table of every model request with its tokens, cost and the cost's source. Costs are the ledger's, never
  recomputed here: pass the index connection (the steps are enriched from it); without one, or for a request the
  index does not price, the cost says ``unknown``.
* :func:`export_session` writes that Markdown, or the v2 file copied as it is, to a target path atomically.
* :func:`import_session` brings a v2 file from elsewhere into a workspace's sessions folder. The strict reducer
  judges it first (``SessionCorruption`` with the reducer's code and line: nothing is written). An accepted file
  is copied byte for byte under its canonical name (``<stamp>_<id>.jsonl``) when its session id is new here;
  when that id is already here (the same session, or a copy of it), it comes in as a copy with every id new
  (:func:`~tiny_agent_core.fork.fork_whole`), because two files with one id, or two sessions sharing request
  ids, would collide in the index. Then it is indexed when a connection is given.

Everything here reads and writes files: callers on a GUI thread run it in a worker thread.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tiny_agent_core.atomic_files import write_atomically
from tiny_agent_core.errors import SessionError
from tiny_agent_core.fork import fork_whole
from tiny_agent_core.ledger.costs import cost_text, money_text
from tiny_agent_core.ledger.extract import make_title
from tiny_agent_core.ledger.index import add_workspace, index_session_file
from tiny_agent_core.session import reduce_session
from tiny_agent_core.session.store import read_session_file, require_header_line, session_file_name, sessions_directory
from tiny_agent_core.session_meta import read_meta
from tiny_agent_core.timeline import AssistantItem, CompactionItem, NoticeItem, StepInfo, Timeline, ToolItem, UserItem
from tiny_agent_core.timestamps import utc_datetime
from tiny_agent_core.tool_outcomes import output_excerpt
from tiny_agent_core.trace import build_trace
from tiny_agent_core.usage import Usage

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_MAX_BYTES",
    "ExportFormat",
    "ImportedSession",
    "export_session",
    "import_session",
    "session_markdown",
]

ExportFormat = Literal["md", "jsonl"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("md", "jsonl")
"""``md``: Markdown for people; ``jsonl``: the v2 session file as it is."""

IMPORT_MAX_BYTES = 512 * 1024 * 1024
"""A larger file is refused before it is read (the largest session this app writes is far smaller)."""

_SOURCES = {
    "provider": "provider",
    "price_table": "price table",
    "override": "your price",
    "not_billed": "not billed",
    "local": "local — no API charge",
}
"""The words for a cost's source (the ledger's ``cost_source``)."""


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """Where an imported session went."""

    path: Path
    """The new session file in the workspace's sessions folder."""
    session_id: str
    copied_as_new: bool
    """The file's session id was already here, so it came in as a copy with new ids."""


# -- Markdown ------------------------------------------------------------------------------------------------------


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def _cell(text: str) -> str:
    """One Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _tokens(usage: Usage | None) -> str:
    if usage is None:
        return "tokens unknown"
    text = f"{usage.prompt:,} in / {usage.output:,} out"
    if usage.cache_read:
        text += f" ({usage.cache_read:,} from cache)"
    return text


def _step_cost(step: StepInfo) -> str:
    if step.cost is None:
        return "cost unknown"
    return f"{money_text(step.cost)} ({_SOURCES.get(step.cost_source or '', step.cost_source or 'unknown source')})"


def _when(timestamp_ms: int) -> str:
    return utc_datetime(timestamp_ms).strftime("%Y-%m-%d %H:%M UTC")


def _tool_markdown(item: ToolItem) -> list[str]:
    outcome = item.outcome.description if item.outcome is not None else item.status
    lines = [f"#### Tool call `{item.name}` — {outcome}", "", _cell(item.summary), "", "Arguments:", ""]
    lines += [_fence(item.arguments_text or "{}", "json"), ""]
    if item.result_text is not None:
        lines += ["Result:", "", _fence(output_excerpt(item.result_text), "text"), ""]
    return lines


def session_markdown(path: Path, conn: sqlite3.Connection | None = None) -> str:
    """The session file ``path`` as Markdown (see the module docstring); ``conn``: the index, for costs and times.

    Raises ``SessionCorruption`` for an invalid file, ``OSError`` when it cannot be read.
    """
    data = read_session_file(path)
    require_header_line(data, path.name)
    timeline = Timeline.from_bytes(data)
    if conn is not None:
        timeline.enrich(conn)
    trace = build_trace(timeline)
    header = timeline.header
    steps = trace.steps()
    first_prompt = next((item.text for item in timeline.items if isinstance(item, UserItem)), "")
    title = read_meta(path).title or make_title(first_prompt) or "(untitled session)"
    models = list(dict.fromkeys(span.step.model for span in steps)) or [header.model]
    sources = Counter(span.step.cost_source for span in steps if span.step.cost_source is not None)
    cost = cost_text(trace.cost, trace.unknown_costs, unknown="unknown")
    if sources:
        cost += " — " + ", ".join(f"{_SOURCES.get(name, name)}: {count}" for name, count in sorted(sources.items()))
    lines = [
        f"# {_cell(title)}",
        "",
        "| | |",
        "|---|---|",
        f"| Session | `{header.id}` |",
        f"| Provider · model | {_cell(header.provider)} · {_cell(', '.join(models))} |",
        f"| Workspace | {_cell(header.cwd)} |",
        f"| Started | {_when(header.created_at)} |",
        f"| Requests | {len(steps)} |",
        f"| Tokens | {_tokens(trace.usage)} |",
        f"| Cost | {_cell(cost)} |",
        "",
    ]
    for item in timeline.items:
        if isinstance(item, UserItem):
            lines += [f"## User · {_when(item.timestamp)}", "", item.text, ""]
        elif isinstance(item, AssistantItem):
            step = item.step
            lines += [f"## Assistant · {_cell(step.model)} · {_tokens(step.usage)} · {_step_cost(step)}", ""]
            if item.text:
                lines += [item.text, ""]
        elif isinstance(item, ToolItem):
            lines += _tool_markdown(item)
        elif isinstance(item, CompactionItem):
            lines += [f"## Compaction · {item.compacted} messages summarised, {item.retained} kept", ""]
            lines += [item.summary, ""]
        elif isinstance(item, NoticeItem):
            lines += [f"> **{_cell(item.kind)}**: {_cell(item.text)}", ""]
    lines += [
        "## Requests and cost",
        "",
        "| # | Model | Outcome | Tokens | Cost | Source |",
        "|---|---|---|---|---|---|",
    ]
    for number, span in enumerate(steps, 1):
        step = span.step
        outcome = step.stop_reason or step.status
        if step.error is not None:
            outcome += f" ({step.error.code})"
        amount = money_text(step.cost) if step.cost is not None else "unknown"
        source = _SOURCES.get(step.cost_source or "", step.cost_source or "—")
        lines.append(
            f"| {number} | {_cell(step.model)} | {_cell(outcome)} | {_tokens(step.usage)} | {amount} | {source} |"
        )
    lines += [f"| | **Total** | | {_tokens(trace.usage)} | **{_cell(cost_text(trace.cost, trace.unknown_costs))}** | |"]
    return "\n".join(lines) + "\n"


# -- export --------------------------------------------------------------------------------------------------------


def export_session(path: Path, target: Path, fmt: ExportFormat, conn: sqlite3.Connection | None = None) -> None:
    """Write session file ``path`` to ``target`` (replacing it) atomically: Markdown (``md``), or the v2 file
    (``jsonl``) copied byte for byte after the strict reducer accepted it.

    Raises ``SessionCorruption``, ``OSError``.
    """
    if fmt == "md":
        data = session_markdown(path, conn).encode("utf-8")
    else:
        data = read_session_file(path)
        require_header_line(data, path.name)
        reduce_session(data)
    write_atomically(target, data, mode=0o600)


# -- import --------------------------------------------------------------------------------------------------------


def _read_bounded(source: Path) -> bytes:
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the import
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SessionError(f"{source.name} is not a regular file; only session files (.jsonl) can be imported.")
    with os.fdopen(fd, "rb") as handle:
        size = info.st_size
        if size > IMPORT_MAX_BYTES:
            raise SessionError(
                f"{source.name} is {size:,} bytes; sessions larger than {IMPORT_MAX_BYTES:,} bytes are not imported."
            )
        data = handle.read(IMPORT_MAX_BYTES + 1)
    if len(data) > IMPORT_MAX_BYTES:
        raise SessionError(f"{source.name} grew past {IMPORT_MAX_BYTES:,} bytes while it was read; not imported.")
    return data


def _id_is_here(folder: Path, session_id: str, conn: sqlite3.Connection | None) -> bool:
    if conn is not None and conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
        return True
    try:
        return any(entry.name.endswith(f"_{session_id}.jsonl") for entry in os.scandir(folder))
    except FileNotFoundError:
        return False


def import_session(source: Path, workspace: Path, conn: sqlite3.Connection | None = None) -> ImportedSession:
    """Import the v2 session file ``source`` into ``workspace`` (see the module docstring) and index it when
    ``conn`` is given.

    Raises ``SessionCorruption`` (the reducer's code and line) for a file the reducer rejects, ``SessionError``
    for a file too large or one whose id is here and that cannot be copied (an unfinished operation), ``OSError``
    when it cannot be read or written. Nothing is written in any of these cases.
    """
    data = _read_bounded(source)
    require_header_line(data, source.name)
    state = reduce_session(data)
    data = data[: state.repaired_length]  # a torn last line (a crash while writing) is not part of the session
    header = state.header
    folder = sessions_directory(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    name = session_file_name(utc_datetime(header.created_at), header.id)
    if not _id_is_here(folder, header.id, conn):
        target = folder / name
        write_atomically(target, data, overwrite=False)
        imported = ImportedSession(target, header.id, copied_as_new=False)
    else:
        with tempfile.TemporaryDirectory(prefix="tiny-agent-import-") as scratch:
            staged = Path(scratch) / name
            write_atomically(staged, data)
            store = fork_whole(staged, workspace=workspace)
            store.close()
        imported = ImportedSession(store.path, store.session_id, copied_as_new=True)
    if conn is not None:
        add_workspace(conn, workspace)
        index_session_file(conn, imported.path, workspace)
    return imported
