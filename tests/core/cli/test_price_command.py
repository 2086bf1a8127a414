"""``tiny-agent price``: the output contract and exit codes, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from decimal import Decimal

import pytest
from genai_prices.data import providers as table_providers
from genai_prices.data_snapshot import find_provider_by_id

from tiny_agent_core.cli import main
from tiny_agent_core.pricing import PRICE_TABLE_VERSION

AT = "2026-11-01T12:00:00Z"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["price", *args])
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return code, json.loads(out)


def gpt_4o_rate(key: str) -> Decimal:
    provider = find_provider_by_id(table_providers, "openai")
    assert provider is not None
    model = provider.find_model("gpt-4o")
    assert model is not None
    value = getattr(model.get_prices(datetime.fromisoformat(AT)), key)
    assert isinstance(value, Decimal)
    return value


def test_known_model(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--provider", "openai", "--model", "gpt-4o", "--input", "1000", "--output", "20", "--cache-read", "500"]
    code, out = run(capsys, *args, "--at", AT)
    expected = 1000 * gpt_4o_rate("input_mtok") + 500 * gpt_4o_rate("cache_read_mtok") + 20 * gpt_4o_rate("output_mtok")
    assert code == 0
    assert out["cost"] == format(expected / Decimal(1_000_000), "f")
    assert out["source"] == "price_table"
    assert out["dataVersion"] == PRICE_TABLE_VERSION
    assert isinstance(out["detail"], str)
    assert "openai gpt-4o" in out["detail"]
    assert set(out) == {"cost", "source", "dataVersion", "detail"}


def test_tiny_cost_is_printed_without_an_exponent(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run(capsys, "--provider", "openai", "--model", "gpt-4o-mini", "--input", "1", "--output", "0", "--at", AT)
    assert isinstance(out["cost"], str)
    assert "E" not in out["cost"].upper()
    assert Decimal(out["cost"]) > 0


@pytest.mark.parametrize(("provider", "model"), [("openai", "no-such-model"), ("custom", "x")])
def test_unknown_is_null_not_zero(capsys: pytest.CaptureFixture[str], provider: str, model: str) -> None:
    code, out = run(capsys, "--provider", provider, "--model", model, "--input", "10", "--output", "10")
    assert code == 0
    assert out["cost"] is None
    assert out["source"] is None
    assert out["detail"]


def test_a_local_server_is_no_api_charge_not_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "--provider", "ollama", "--model", "llama3", "--input", "10", "--output", "10")
    assert code == 0
    assert (out["cost"], out["source"]) == ("0", "local")
    assert "local — no API charge" in out["detail"]


def test_cache_write_and_time(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--provider", "deepseek", "--model", "deepseek-chat", "--input", "1000000", "--output", "0"]
    _, peak = run(capsys, *args, "--at", "2026-11-01T12:00:00+00:00")
    _, off_peak = run(capsys, *args, "--at", "2026-11-01T20:00:00")
    assert peak["cost"] != off_peak["cost"]
    _, written = run(capsys, *args, "--cache-write", "10", "--at", AT)
    assert written["cost"] != peak["cost"]


@pytest.mark.parametrize("bad", [["--input", "-1"], ["--input", "1.5"], ["--at", "yesterday"], []])
def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str], bad: list[str]) -> None:
    args = {"--input": "1", "--output": "1", "--at": AT}
    if bad:
        args[bad[0]] = bad[1]
    flat = [part for pair in args.items() for part in pair] if bad else ["--input", "1"]
    with pytest.raises(SystemExit) as exc:
        main(["price", "--provider", "openai", "--model", "gpt-4o", *flat])
    assert exc.value.code == 2
    assert capsys.readouterr().out == ""


def test_subprocess() -> None:
    args = ["price", "--provider", "openai", "--model", "gpt-4o", "--input", "100", "--output", "10", "--at", AT]
    proc = subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", *args],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["source"] == "price_table"
