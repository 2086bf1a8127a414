"""read, write and edit: the reference's arguments, bounds and messages, plus atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.tools import EditTool, ReadTool, WorkspaceGuard, WriteTool
from tiny_agent_core.tools.edit import Edit, apply_edits


@pytest.fixture
def guard(tmp_path: Path) -> WorkspaceGuard:
    return WorkspaceGuard(tmp_path)


async def read(guard: WorkspaceGuard, **args: Any) -> str:
    outcome = await ReadTool(guard).execute({"path": "f.txt", **args})
    return outcome.content


# -- argument guards -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read", {}, "path must be a nonempty string"),
        ("read", {"path": ""}, "path must be a nonempty string"),
        ("read", {"path": 3}, "path must be a nonempty string"),
        ("read", {"path": "f.txt", "offset": 0}, "offset must be an integer >= 1"),
        ("read", {"path": "f.txt", "offset": 1.5}, "offset must be an integer >= 1"),
        ("read", {"path": "f.txt", "offset": True}, "offset must be an integer >= 1"),
        ("read", {"path": "f.txt", "limit": "2"}, "limit must be an integer >= 1"),
        ("write", {"path": "f.txt"}, "content must be a string"),
        ("write", {"path": "f.txt", "content": 5}, "content must be a string"),
        ("edit", {"path": "f.txt"}, "edits must be a nonempty array"),
        ("edit", {"path": "f.txt", "edits": []}, "edits must be a nonempty array"),
        ("edit", {"path": "f.txt", "edits": ["x"]}, "edits[0] must be an object"),
        ("edit", {"path": "f.txt", "edits": [{"newText": "x"}]}, "edits[0].oldText must be a string"),
        ("edit", {"path": "f.txt", "edits": [{"oldText": "", "newText": "x"}]}, "edits[0].oldText must not be empty"),
        ("edit", {"path": "f.txt", "edits": [{"oldText": "a", "newText": 1}]}, "edits[0].newText must be a string"),
    ],
)
async def test_argument_guards(tool: str, args: dict[str, Any], message: str, guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_text("a\n")
    tools = {"read": ReadTool(guard), "write": WriteTool(guard), "edit": EditTool(guard)}
    outcome = await tools[tool].execute(args)
    assert outcome.is_error
    assert outcome.content == f"Error: {message}"
    assert (guard.workspace / "f.txt").read_text() == "a\n"


async def test_arguments_must_be_an_object(guard: WorkspaceGuard) -> None:
    outcome = await ReadTool(guard).execute(["f.txt"])  # type: ignore[arg-type]
    assert outcome.content == "Error: arguments must be an object"


# -- read ------------------------------------------------------------------------------------------------


async def test_read_whole_small_file_crlf_and_final_newline(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_bytes(b"one\r\ntwo\r\n")
    assert await read(guard) == "one\ntwo"


async def test_read_keeps_lone_cr_and_empty_lines(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_bytes(b"a\r\r\n\n\nb\r")
    assert await read(guard) == "a\r\n\n\nb\r"


async def test_read_empty_file(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_bytes(b"")
    assert await read(guard) == ""
    assert await read(guard, offset=2) == "Error: Offset 2 is beyond end of file (0 lines total)."


async def test_read_line_cap_and_continuation(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 2502)))
    first = await read(guard)
    body, note = first.split("\n\n")
    assert body.split("\n") == [str(i) for i in range(1, 2001)]
    assert note == "[Showing lines 1-2000 of 2501. Use offset=2001 to continue.]"
    rest = await read(guard, offset=2001)
    assert rest.split("\n") == [str(i) for i in range(2001, 2502)]
    assert await read(guard, offset=2001, limit=5000) == rest  # limit is capped at 2,000 anyway


async def test_read_byte_cap_keeps_whole_lines(guard: WorkspaceGuard) -> None:
    line = "é" * 1000  # 2,000 bytes
    (guard.workspace / "f.txt").write_text("\n".join([line] * 40))
    text = await read(guard)
    body, note = text.split("\n\n")
    assert body.split("\n") == [line] * 25  # 25 * 2000 + 24 = 50,024 bytes; one more would pass 51,200
    assert note == "[Showing lines 1-25 of 40. Use offset=26 to continue.]"


async def test_read_exact_budget(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_text("x" * 51_200 + "\nnext\n")
    text = await read(guard)
    assert text == "x" * 51_200 + "\n\n[Showing lines 1-1 of 2. Use offset=2 to continue.]"


async def test_read_first_line_too_long(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_text("short\n" + "x" * 51_201 + "\n")
    assert await read(guard, offset=2) == (
        "Line 2 exceeds 50KB. Use bash with a byte-oriented command to inspect this line."
    )
    assert await read(guard) == "short\n\n[Showing lines 1-1 of 2. Use offset=2 to continue.]"


async def test_read_very_long_line_split_across_chunks(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_bytes(b"y" * 300_000 + b"\r\n" + b"end")
    assert await read(guard, offset=2) == "end"
    assert (await read(guard)).startswith("Line 1 exceeds 50KB.")


async def test_read_invalid_utf8_and_missing(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_bytes(b"ok\n\xff\xfe\n")
    assert (await read(guard)).startswith("Error: f.txt is not valid UTF-8 text.")
    outcome = await ReadTool(guard).execute({"path": "missing.txt"})
    assert outcome.is_error
    assert outcome.content.startswith("Error: No such file or directory: ")


async def test_special_files_are_refused(guard: WorkspaceGuard) -> None:
    os.mkfifo(guard.workspace / "fifo")
    (guard.workspace / "dir").mkdir()
    for tool, args in [
        (ReadTool(guard), {}),
        (EditTool(guard), {"edits": [{"oldText": "a", "newText": "b"}]}),
        (WriteTool(guard), {"content": "x"}),
    ]:
        fifo = await tool.execute({"path": "fifo", **args})
        assert fifo.content == "Error: fifo is a FIFO (named pipe), not a regular file"
        directory = await tool.execute({"path": "dir", **args})
        assert directory.content == "Error: dir is a directory"


async def test_read_offset_limit_page(guard: WorkspaceGuard) -> None:
    (guard.workspace / "f.txt").write_text("1\n2\n3\n4\n5\n")
    assert await read(guard, offset=2, limit=2) == "2\n3\n\n[Showing lines 2-3 of 5. Use offset=4 to continue.]"
    assert await read(guard, offset=4, limit=10) == "4\n5"
    assert await read(guard, offset=6) == "Error: Offset 6 is beyond end of file (5 lines total)."


# -- write -----------------------------------------------------------------------------------------------


async def test_write_creates_parents_and_counts_utf8_bytes(guard: WorkspaceGuard) -> None:
    outcome = await WriteTool(guard).execute({"path": "a/b/c.txt", "content": "你好\n"})
    assert outcome.content == "Successfully wrote 7 bytes to a/b/c.txt."
    assert (guard.workspace / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "你好\n"


async def test_write_is_atomic_and_keeps_the_mode(guard: WorkspaceGuard) -> None:
    target = guard.workspace / "script.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    before = target.stat().st_ino
    outcome = await WriteTool(guard).execute({"path": "script.sh", "content": "new\n"})
    assert not outcome.is_error
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert target.stat().st_ino != before  # replaced, not rewritten in place
    assert sorted(p.name for p in guard.workspace.iterdir()) == ["script.sh"]  # no temp file left


async def test_write_new_file_mode_follows_umask(guard: WorkspaceGuard) -> None:
    old = os.umask(0o027)
    try:
        await WriteTool(guard).execute({"path": "n.txt", "content": ""})
    finally:
        os.umask(old)
    assert stat.S_IMODE((guard.workspace / "n.txt").stat().st_mode) == 0o640


async def test_write_refuses_a_directory(guard: WorkspaceGuard) -> None:
    (guard.workspace / "d").mkdir()
    outcome = await WriteTool(guard).execute({"path": "d", "content": "x"})
    assert outcome.content == "Error: d is a directory"


async def test_failed_write_leaves_the_old_file(guard: WorkspaceGuard, monkeypatch: pytest.MonkeyPatch) -> None:
    target = guard.workspace / "f.txt"
    target.write_text("old\n")

    def boom(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    outcome = await WriteTool(guard).execute({"path": "f.txt", "content": "new\n"})
    assert outcome.content == "Error: No space left on device"
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in guard.workspace.iterdir()) == ["f.txt"]


# -- edit ------------------------------------------------------------------------------------------------


async def edit(guard: WorkspaceGuard, content: bytes, edits: list[dict[str, str]]) -> tuple[str, bytes]:
    target = guard.workspace / "f.txt"
    target.write_bytes(content)
    outcome = await EditTool(guard).execute({"path": "f.txt", "edits": edits})
    return outcome.content, target.read_bytes()


async def test_edit_keeps_bom_and_crlf(guard: WorkspaceGuard) -> None:
    text, after = await edit(
        guard, "\ufeffone\r\ntwo\r\nthree\r\n".encode(), [{"oldText": "two\nthree", "newText": "2\n3\n4"}]
    )
    assert text == "Successfully replaced 1 block(s) in f.txt."
    assert after == "\ufeffone\r\n2\r\n3\r\n4\r\n".encode()


async def test_edit_mixed_endings_use_the_first(guard: WorkspaceGuard) -> None:
    _, after = await edit(guard, b"a\nb\r\nc\n", [{"oldText": "b\r\nc", "newText": "x\r\ny"}])
    assert after == b"a\nx\ny\n"
    _, after = await edit(guard, b"a\r\nb\nc\r\n", [{"oldText": "b\nc", "newText": "x\ny"}])
    assert after == b"a\r\nx\r\ny\r\n"


async def test_edit_matches_once_against_the_original(guard: WorkspaceGuard) -> None:
    text, after = await edit(guard, b"aa-bb", [{"oldText": "bb", "newText": "aa"}, {"oldText": "aa", "newText": "X"}])
    assert text == "Successfully replaced 2 block(s) in f.txt."
    assert after == b"X-aa"


async def test_edit_failures(guard: WorkspaceGuard) -> None:
    text, after = await edit(guard, b"x x", [{"oldText": "x", "newText": "y"}])
    assert text == "Error: edits[0].oldText occurs more than once in f.txt; add more context."
    assert after == b"x x"
    text, _ = await edit(guard, b"aaa", [{"oldText": "aa", "newText": "y"}])
    assert text == "Error: edits[0].oldText occurs more than once in f.txt; add more context."
    text, after = await edit(guard, b"abcdef", [{"oldText": "ab", "newText": "1"}, {"oldText": "zz", "newText": "2"}])
    assert text == "Error: edits[1].oldText was not found in f.txt."
    assert after == b"abcdef"  # all or nothing
    text, _ = await edit(guard, b"abcdef", [{"oldText": "cde", "newText": "1"}, {"oldText": "bcd", "newText": "2"}])
    assert text == "Error: edits[1] and edits[0] overlap in f.txt."
    missing = await EditTool(guard).execute({"path": "nope.txt", "edits": [{"oldText": "a", "newText": "b"}]})
    assert missing.content.startswith("Error: No such file or directory")


async def test_edit_adjacent_ranges_do_not_overlap(guard: WorkspaceGuard) -> None:
    text, after = await edit(guard, b"abcd", [{"oldText": "cd", "newText": "2"}, {"oldText": "ab", "newText": "1"}])
    assert text == "Successfully replaced 2 block(s) in f.txt."
    assert after == b"12"


async def test_edit_keeps_the_mode(guard: WorkspaceGuard) -> None:
    target = guard.workspace / "f.txt"
    target.write_text("a\n")
    target.chmod(0o600)
    await EditTool(guard).execute({"path": "f.txt", "edits": [{"oldText": "a", "newText": "b"}]})
    assert target.read_text() == "b\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_apply_edits_crlf_positions() -> None:
    original = "l1\r\nl2\r\nl3\r\nl4"
    assert apply_edits(original, [Edit("l2\nl3", "X"), Edit("l4", "Y")], "p") == "l1\r\nX\r\nY"
    assert apply_edits(original, [Edit("\nl2\n", "-")], "p") == "l1-l3\r\nl4"
