"""``tiny-agent comparisons``: list what ``tiny-agent compare`` saved, keep one run's changes, discard the copies
(in-process, ``cli`` in conftest.py, against the loopback server with scripted models)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.core.cli.conftest import Cli
from tests.core.cli.test_compare_command import _edit, _environment, _workspace
from tests.loopback import LoopbackServer
from tests.scripted_models import ScriptedModels, answer


def _compared(cli: Cli, tmp_path: Path) -> tuple[dict[str, str], Path, list[dict[str, Any]]]:
    """A finished two-model comparison of an edit to greet.py: the environment, the workspace, the runs' lines."""
    workspace = _workspace(tmp_path)
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-a": [_edit("a1", "hello"), answer("Changed it to hello.")],
                "model-b": [answer("Nothing to change.")],
            }
        )
        env = _environment(tmp_path, server)
        proc = cli(
            "compare", "--workspace", str(workspace), "--model", "loop/model-a", "--model", "loop/model-b",
            "--allow", "edit", "greet better", env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return env, workspace, [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_list_shows_each_comparison_with_its_runs_and_what_they_cost(cli: Cli, tmp_path: Path) -> None:
    env, workspace, lines = _compared(cli, tmp_path)
    comparison_id = lines[0]["comparisonId"]

    text = cli("comparisons", "list", env=env)
    assert text.returncode == 0, text.stderr
    first, *runs = text.stdout.splitlines()
    assert first.startswith(f"{comparison_id}  ")
    assert first.endswith("  copies kept  greet better")
    assert runs == [
        "  1. Loop · model-a · completed · local — no API charge · 1 file changed",
        "  2. Loop · model-b · completed · local — no API charge · 0 files changed",
    ]

    listed = cli("comparisons", "list", "--json", env=env)
    (saved,) = json.loads(listed.stdout)
    assert saved["id"] == comparison_id
    assert saved["workspace"] == str(workspace.resolve())
    assert (saved["prompt"], saved["allowed"], saved["kept"], saved["copiesRemoved"]) == (
        "greet better",
        ["edit"],
        None,
        False,
    )
    assert [run["run"] for run in saved["runs"]] == [1, 2]
    assert [run["label"] for run in saved["runs"]] == ["Loop · model-a", "Loop · model-b"]
    for run, line in zip(saved["runs"], lines, strict=True):  # each run as `tiny-agent compare` printed it
        assert {key: run[key] for key in ("sessionId", "outcome", "cost", "filesChanged", "copy")} == {
            key: line[key] for key in ("sessionId", "outcome", "cost", "filesChanged", "copy")
        }


def test_keep_lists_the_files_first_and_applies_them_only_with_yes(cli: Cli, tmp_path: Path) -> None:
    env, workspace, lines = _compared(cli, tmp_path)
    comparison_id = lines[0]["comparisonId"]

    asked = cli("comparisons", "keep", comparison_id[:8], "1", env=env)  # a prefix names it
    assert asked.returncode == 2
    assert "would change these files" in asked.stderr
    assert "modified greet.py (+1 −1)" in asked.stderr
    assert "Add --yes" in asked.stderr
    assert (workspace / "greet.py").read_text() == "print('hi')\n"  # nothing written yet

    nothing = cli("comparisons", "keep", comparison_id, "2", "--yes", env=env)
    assert nothing.returncode == 2
    assert "changed no files" in nothing.stderr

    kept = cli("comparisons", "keep", comparison_id, "1", "--yes", env=env)
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout) == {
        "ok": True,
        "comparisonId": comparison_id,
        "kept": 1,
        "workspace": str(workspace.resolve()),
        "files": ["greet.py"],
    }
    assert (workspace / "greet.py").read_text() == "print('hello')\n"
    assert not any(Path(line["copy"]).exists() for line in lines)  # every copy removed
    (saved,) = json.loads(cli("comparisons", "list", "--json", env=env).stdout)
    assert (saved["kept"], saved["copiesRemoved"]) == (1, True)
    assert all(run["sessionId"] for run in saved["runs"])  # the sessions are kept

    again = cli("comparisons", "keep", comparison_id, "1", "--yes", env=env)
    assert again.returncode == 2
    assert "can no longer be applied" in again.stderr


def test_discard_removes_the_copies_and_keeps_the_workspace_and_the_sessions(cli: Cli, tmp_path: Path) -> None:
    env, workspace, lines = _compared(cli, tmp_path)
    comparison_id = lines[0]["comparisonId"]
    discarded = cli("comparisons", "discard", comparison_id, env=env)
    assert discarded.returncode == 0, discarded.stderr
    assert json.loads(discarded.stdout) == {"ok": True, "comparisonId": comparison_id, "copiesRemoved": True}
    assert (workspace / "greet.py").read_text() == "print('hi')\n"
    assert not any(Path(line["copy"]).exists() for line in lines)
    text = cli("comparisons", "list", env=env).stdout
    assert "copies removed" in text.splitlines()[0]


def test_an_unknown_id_or_run_is_a_one_line_usage_error(cli: Cli, tmp_path: Path) -> None:
    env, _workspace_path, lines = _compared(cli, tmp_path)
    comparison_id = lines[0]["comparisonId"]
    for args, message in (
        (("discard", "../../etc"), "no saved comparison '../../etc'"),
        (("keep", comparison_id, "3", "--yes"), "has 2 runs, not 3"),
        (("keep", comparison_id, "0"), "must be at least 1, got 0"),
    ):
        proc = cli("comparisons", *args, env=env)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert message in proc.stderr
        assert proc.stderr.startswith("tiny-agent comparisons ")


def test_no_comparisons_says_how_to_make_one(cli: Cli, tmp_path: Path) -> None:
    env = {"TINY_AGENT_DATA_DIR": str(tmp_path / "data"), "TINY_AGENT_CONFIG_DIR": str(tmp_path / "config")}
    proc = cli("comparisons", "list", env=env)
    assert proc.returncode == 0
    assert "No saved comparisons" in proc.stdout
    assert json.loads(cli("comparisons", "list", "--json", env=env).stdout) == []


def test_a_record_in_another_folder_cannot_claim_a_comparison_s_id(cli: Cli, tmp_path: Path) -> None:
    env, workspace, lines = _compared(cli, tmp_path)
    comparison_id = lines[0]["comparisonId"]
    compare = tmp_path / "data" / "compare"
    record = json.loads((compare / comparison_id / "comparison.json").read_text())
    record["startedAt"] += 1000  # it would be listed first
    for run in record["runs"]:
        run["copy"] = None
    other = compare / "another-folder"
    other.mkdir()
    (other / "comparison.json").write_text(json.dumps(record))
    assert [saved["id"] for saved in json.loads(cli("comparisons", "list", "--json", env=env).stdout)] == [
        comparison_id
    ]  # an id is its folder's name: the other record is damaged and left out

    discarded = cli("comparisons", "discard", comparison_id, env=env)
    assert discarded.returncode == 0, discarded.stderr
    assert not any(Path(line["copy"]).exists() for line in lines)  # the real one was acted on
    assert (workspace / "greet.py").read_text() == "print('hi')\n"


def test_a_record_with_line_breaks_in_its_names_is_listed_one_line_per_thing(cli: Cli, tmp_path: Path) -> None:
    env, _workspace_path, lines = _compared(cli, tmp_path)
    compare = tmp_path / "data" / "compare"
    record = json.loads((compare / lines[0]["comparisonId"] / "comparison.json").read_text())
    record["id"] = "forged\n  1. Loop · model-a · completed · $0.00 · 9 files changed"  # a folder name may say that
    for run in record["runs"]:
        run["copy"] = None
        run["profile"]["name"] = "Lo\nop"
    other = compare / record["id"]
    other.mkdir()
    (other / "comparison.json").write_text(json.dumps(record))

    listed = cli("comparisons", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 6  # two comparisons of two runs each
    assert "9 files changed" not in listed.stdout.splitlines()[1]
    refused = cli("comparisons", "keep", "forged", "1", "--yes", env=env)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "were removed" in refused.stderr
