"""Differential test: the strict reducer agrees with the TypeScript reference (../shared ts-oracle, run with node)
on randomly mutated copies of the reference's valid golden sessions — same verdict, same error code and line, same
reduced state.

Mutations stay clear of the places the oracle's README lists as deliberate differences (a BOM, arrays where the
reference coerces them to strings, numbers beyond a double, extreme nesting).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.reference import FIXTURES, REDUCER_CASES, error_json, load_json
from tests.shared_data import shared_path
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import reduce_session, state_to_json
from tiny_agent_core.session.canonical_json import js_numbers

MUTANTS_ENV = "TINY_AGENT_DIFFERENTIAL_MUTANTS"
"""Environment variable: mutants per valid fixture for a longer run (e.g. 2550: 51,000 mutants, about a minute)."""
MUTANTS_PER_FIXTURE = int(os.environ.get(MUTANTS_ENV) or 40)
"""Mutated copies of each valid fixture (40 by default: a few seconds for node and for us together)."""

SCALARS: list[Any] = [None, True, False, 0, 1, -1, 2**31, 1.5, "", "x", "user", "assistant", "tool", "run", {}]
"""Replacement values: no arrays (the reference coerces some) and no numbers beyond a double."""


def _mutate_value(value: Any, rng: random.Random) -> Any:
    """``value`` with one key dropped, renamed or given another scalar, somewhere inside it."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        roll = rng.random()
        copy = dict(value)
        if roll < 0.2:
            del copy[key]
        elif roll < 0.3:
            copy[key + "X"] = copy.pop(key)
        elif roll < 0.6 and isinstance(copy[key], dict | list):
            copy[key] = _mutate_value(copy[key], rng)
        else:
            copy[key] = rng.choice(SCALARS)
        return copy
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        copy_list = list(value)
        copy_list[index] = _mutate_value(copy_list[index], rng)
        return copy_list
    return rng.choice(SCALARS)


def _mutant(lines: list[bytes], rng: random.Random) -> bytes:
    """One random change to a session's lines: drop, duplicate, swap, truncate, or mutate a JSON value."""
    lines = list(lines)
    index = rng.randrange(len(lines))
    roll = rng.random()
    if roll < 0.12 and len(lines) > 1:
        del lines[index]
    elif roll < 0.22:
        lines.insert(index, lines[index])
    elif roll < 0.32 and len(lines) > 1:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]
    elif roll < 0.38:
        lines[index] = lines[index][: rng.randrange(max(1, len(lines[index])))]
    else:
        value = json.loads(lines[index])
        lines[index] = json.dumps(_mutate_value(value, rng), ensure_ascii=False, separators=(",", ":")).encode()
    return b"".join(line + b"\n" for line in lines)


def _ours(data: bytes) -> Any:
    try:
        result: dict[str, Any] = {"ok": True, "state": state_to_json(reduce_session(data))}
    except SessionCorruption as error:
        result = error_json(error)
    return json.loads(json.dumps(js_numbers(result)))


def test_the_reducer_agrees_with_the_reference_on_mutated_sessions(tmp_path: Path) -> None:
    runner = shared_path("reference", "ts-oracle", "runner.mjs")
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript reference cannot run")
    valid = [case for case in REDUCER_CASES if load_json(FIXTURES / case["expected"]).get("ok")]
    rng = random.Random(20261201)
    files: list[Path] = []
    for case in valid:
        lines = (FIXTURES / case["file"]).read_bytes().splitlines()
        for n in range(MUTANTS_PER_FIXTURE):
            path = tmp_path / f"{case['name']}-{n}.jsonl"
            path.write_bytes(_mutant(lines, rng))
            files.append(path)
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{path}\n" for path in files), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    timeout = 300 + len(files) // 10  # node checks a few thousand mutants a second
    subprocess.run(["node", str(runner), "batch-check", str(listing), str(out)], check=True, timeout=timeout)
    theirs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(theirs) == len(files)
    disagreements = [
        (path.name, ours, reference)
        for path, reference in zip(files, theirs, strict=True)
        if (ours := _ours(path.read_bytes())) != reference
    ]
    assert disagreements == [], f"{len(disagreements)} of {len(files)} disagree; first: {disagreements[:3]}"
    rejected = sum(1 for result in theirs if not result["ok"])
    assert 0 < rejected < len(files)  # the mutants exercise both verdicts
