"""AppSettings: a versioned JSON file in the config folder, written atomically (0600), never holding a key."""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.errors import SettingsError, SettingsFileError, SettingsVersionError
from tiny_agent_core.paths import CONFIG_DIR_ENV, config_dir
from tiny_agent_core.pricing import PriceOverride, price_request
from tiny_agent_core.settings import (
    SCHEMA_VERSION,
    SETTINGS_FILE,
    AppSettings,
    ProfileConfig,
)
from tiny_agent_core.usage import Usage


def populated(directory: Path) -> AppSettings:
    settings = AppSettings.load(directory)
    settings.add_profile(ProfileConfig.from_preset("openrouter", "openrouter"))
    settings.add_profile(ProfileConfig.custom(settings.new_profile_id("custom"), "http://gpu-box:8000/v1/", name="Box"))
    settings.add_profile(ProfileConfig("vllm", "vllm", "vLLM far", "http://far:9/v1"))
    settings.active_profile = "custom"
    settings.add_workspace(directory / "project")
    settings.price_overrides[("ollama", "*")] = PriceOverride(Decimal(0), Decimal(0))
    settings.price_overrides[("custom", "qwen3")] = PriceOverride(
        Decimal("0.15"), Decimal("0.6"), cache_read=Decimal("0.015")
    )
    return settings


def test_config_dir_honours_the_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    assert config_dir() == tmp_path
    assert AppSettings.load().path == tmp_path / SETTINGS_FILE
    monkeypatch.setenv(CONFIG_DIR_ENV, " ")
    assert config_dir().name == "tiny-agent-desktop"


def test_missing_file_gives_defaults_without_error(tmp_path: Path) -> None:
    settings = AppSettings.load(tmp_path)
    assert (settings.profiles, settings.active(), settings.workspaces, settings.load_error) == ([], None, [], None)


def test_round_trip_is_exact_and_the_file_is_private(tmp_path: Path) -> None:
    settings = populated(tmp_path / "cfg")
    settings.save()
    path = tmp_path / "cfg" / SETTINGS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [SETTINGS_FILE]  # no temporary file left behind
    again = AppSettings.load(tmp_path / "cfg")
    assert again.load_error is None
    assert again.profiles == settings.profiles
    assert again.active_profile == "custom"
    assert again.workspaces == [str(tmp_path / "cfg" / "project")]
    assert again.price_overrides == settings.price_overrides
    data = json.loads(path.read_text())
    assert data["version"] == SCHEMA_VERSION
    assert data["priceOverrides"]["custom"]["qwen3"] == {
        "input": "0.15",
        "output": "0.6",
        "cacheRead": "0.015",
        "cacheWrite": None,
    }
    assert not any("key" in k.lower() and k != "keyEnv" for profile in data["profiles"] for k in profile)


def test_profiles_resolve_to_provider_profiles(tmp_path: Path) -> None:
    settings = populated(tmp_path)
    openrouter = settings.profile("openrouter")
    assert openrouter is not None
    resolved = openrouter.provider_profile()
    assert (resolved.id, resolved.base_url, resolved.key_env) == (
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    )
    assert "X-Title" in resolved.headers(None)
    custom = settings.profile("custom")
    assert custom is not None
    assert (custom.provider_profile().id, custom.provider_profile().base_url) == ("custom", "http://gpu-box:8000/v1")
    far = settings.profile("vllm")
    assert far is not None
    assert far.provider_profile().base_url == "http://far:9/v1"
    assert far.provider_profile().name == "vLLM far"
    with pytest.raises(SettingsError, match="not known"):
        ProfileConfig("x", "no-such-preset", "X").provider_profile()


def test_overrides_feed_pricing(tmp_path: Path) -> None:
    settings = populated(tmp_path)
    cost = price_request(
        provider="ollama",
        model="llama3",
        usage=Usage(10, 5, 0, 0),
        provider_cost=None,
        overrides=settings.price_overrides,
    )
    assert (cost.amount, cost.source) == (Decimal(0), "override")


def test_profile_ids_and_active_profile(tmp_path: Path) -> None:
    settings = AppSettings.load(tmp_path)
    settings.add_profile(ProfileConfig.from_preset("openai", settings.new_profile_id("openai")))
    assert settings.active_profile == "openai"  # the first profile becomes active
    second = ProfileConfig.from_preset("openai", settings.new_profile_id("openai"))
    assert second.id == "openai-2"
    settings.add_profile(second)
    assert settings.active_profile == "openai"
    with pytest.raises(SettingsError, match="already exists"):
        settings.add_profile(second)
    settings.update_profile(ProfileConfig("openai-2", "openai", "Work", model="gpt-4.1"))
    assert settings.profile("openai-2") == ProfileConfig("openai-2", "openai", "Work", model="gpt-4.1")
    with pytest.raises(SettingsError):
        settings.update_profile(ProfileConfig("nope", "openai", "Nope"))
    settings.remove_profile("openai")
    assert settings.active_profile == "openai-2"
    settings.remove_profile("openai-2")
    assert (settings.active_profile, settings.active()) == (None, None)


def test_workspaces_are_absolute_and_unique(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = AppSettings()
    assert settings.add_workspace("proj") == str(tmp_path / "proj")
    settings.add_workspace(tmp_path / "proj")
    assert settings.workspaces == [str(tmp_path / "proj")]
    settings.remove_workspace(str(tmp_path / "proj"))
    assert settings.workspaces == []
    settings.save()  # in memory: nothing to write


def write(directory: Path, data: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SETTINGS_FILE
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ("{not json", "not valid JSON"),
        ([], "top level"),
        ({}, "'version'"),
        ({"version": True}, "'version'"),
        ({"version": 1, "profiles": {}}, "'profiles'"),
        ({"version": 1, "profiles": [{"id": "a", "provider": "openai"}]}, "profiles[0].name"),
        ({"version": 1, "profiles": [{"id": "a", "provider": "custom", "name": "A"}]}, "profiles[0].baseUrl"),
        ({"version": 1, "profiles": [{"id": "a", "provider": "openai", "name": "A", "keyEnv": "A B"}]}, "keyEnv"),
        ({"version": 1, "profiles": [{"id": "a", "provider": "openai", "name": "A"}] * 2}, "repeats"),
        ({"version": 1, "activeProfile": 3}, "activeProfile"),
        ({"version": 1, "workspaces": [""]}, "workspaces[0]"),
        ({"version": 1, "priceOverrides": {"x": {"*": {"input": 1, "output": "1"}}}}, "priceOverrides.x.*.input"),
        ({"version": 1, "priceOverrides": {"x": {"*": {"input": "1"}}}}, "priceOverrides.x.*.output"),
        ({"version": 1, "priceOverrides": {"x": {"*": {"input": "one", "output": "1"}}}}, "not a decimal"),
        ({"version": 1, "priceOverrides": {"x": {"*": {"input": "-1", "output": "1"}}}}, "not a valid price"),
        ({"version": 1, "priceOverrides": {"x": {"*": {"input": "NaN", "output": "1"}}}}, "not a valid price"),
    ],
)
def test_an_invalid_file_gives_a_typed_error_and_defaults(tmp_path: Path, data: Any, where: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(SettingsFileError) as caught:
        AppSettings.read(path)
    assert where in str(caught.value)
    assert caught.value.path == path
    settings = AppSettings.load(tmp_path)
    assert isinstance(settings.load_error, SettingsFileError)
    assert settings.profiles == []


def test_saving_over_a_corrupt_file_keeps_it_aside(tmp_path: Path) -> None:
    write(tmp_path, "{hand edited")
    settings = AppSettings.load(tmp_path)
    settings.add_workspace(tmp_path)
    settings.save()
    assert (tmp_path / (SETTINGS_FILE + ".corrupt")).read_text() == "{hand edited"
    assert AppSettings.load(tmp_path).workspaces == [str(tmp_path)]
    assert settings.load_error is None


def test_a_newer_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, {"version": SCHEMA_VERSION + 1, "profiles": "something new"})
    before = path.read_bytes()
    settings = AppSettings.load(tmp_path)
    error = settings.load_error
    assert isinstance(error, SettingsVersionError)
    assert (error.found, error.supported) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert "newer version" in str(error)
    with pytest.raises(SettingsVersionError):
        settings.save()
    assert path.read_bytes() == before


def test_unknown_fields_are_ignored_and_never_written_back(tmp_path: Path) -> None:
    profile = {"id": "a", "provider": "openai", "name": "A", "apiKey": "sk-plaintext-from-elsewhere"}
    write(tmp_path, {"version": 1, "profiles": [profile], "telemetry": True})
    settings = AppSettings.load(tmp_path)
    assert settings.load_error is None
    settings.save()
    text = (tmp_path / SETTINGS_FILE).read_text()
    assert "sk-plaintext" not in text
    assert "telemetry" not in text


def test_an_unreadable_file_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / SETTINGS_FILE).mkdir()
    assert isinstance(AppSettings.load(tmp_path).load_error, SettingsFileError)


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        (ProfileConfig("c", "custom", "Box"), "needs a base URL"),
        (ProfileConfig("o", "openai", "OpenAI", key_env="MY KEY"), "not an environment variable name"),
        (ProfileConfig("o", "openai", " "), "needs a name"),
    ],
)
def test_save_refuses_what_the_file_could_not_hold(tmp_path: Path, profile: ProfileConfig, problem: str) -> None:
    settings = AppSettings.load(tmp_path)
    settings.profiles.append(profile)
    with pytest.raises(SettingsError, match=problem):
        settings.save()
    assert not (tmp_path / SETTINGS_FILE).exists()
    settings.profiles.append(profile)
    settings.profiles[0] = ProfileConfig("o", "openai", "OpenAI")
    settings.profiles[1] = ProfileConfig("o", "openai", "OpenAI")
    with pytest.raises(SettingsError, match="repeated"):
        settings.validate()


def test_step_limit_and_offline_workspaces_round_trip(tmp_path: Path) -> None:
    settings = AppSettings.load(tmp_path)
    assert settings.max_steps is None
    assert settings.network_allowed(tmp_path / "project")
    settings.max_steps = 50
    settings.set_network_allowed(tmp_path / "project", False)
    settings.save()
    again = AppSettings.load(tmp_path)
    assert again.load_error is None
    assert again.max_steps == 50
    assert not again.network_allowed(tmp_path / "project")
    assert again.network_allowed(tmp_path)
    again.set_network_allowed(tmp_path / "project", True)
    assert again.offline_workspaces == []


@pytest.mark.parametrize("value", [0, -1, True, "10", 1.5, 100_001])
def test_an_invalid_step_limit_is_refused(tmp_path: Path, value: Any) -> None:
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"version": SCHEMA_VERSION, "maxSteps": value}))
    settings = AppSettings.load(tmp_path)
    assert isinstance(settings.load_error, SettingsFileError)
    assert "maxSteps" in str(settings.load_error)
    settings = AppSettings.load(tmp_path / "fresh")
    settings.max_steps = 0
    with pytest.raises(SettingsError, match="step limit"):
        settings.save()


def test_dialect_settings_round_trip_and_reach_the_provider_profile(tmp_path: Path) -> None:
    from dataclasses import replace

    from tiny_agent_core.providers.openai_dialect import LOCAL_DIALECT, Dialect

    settings = AppSettings.load(tmp_path)
    local = replace(ProfileConfig.custom("local", "http://127.0.0.1:8089/v1"), stream_tools=False, context_length=4096)
    cloud = replace(ProfileConfig.from_preset("openai", "openai"), tool_choice_auto=True)
    settings.add_profile(local)
    settings.add_profile(cloud)
    settings.save()
    data = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert data["profiles"][0]["streamTools"] is False
    assert data["profiles"][0]["contextLength"] == 4096
    assert "nullContent" not in data["profiles"][0]  # unset settings are not written
    again = AppSettings.load(tmp_path)
    assert again.load_error is None
    assert again.profiles == [local, cloud]
    resolved = local.provider_profile()
    assert resolved.dialect == replace(LOCAL_DIALECT, stream_tools=False)
    assert resolved.context_length == 4096
    assert cloud.provider_profile().dialect == Dialect(tool_choice_auto=True)
    assert ProfileConfig.from_preset("openai", "x").provider_profile().dialect == Dialect()


@pytest.mark.parametrize(("key", "value"), [("streamTools", "no"), ("contextLength", 0), ("contextLength", True)])
def test_invalid_dialect_settings_are_refused(tmp_path: Path, key: str, value: Any) -> None:
    profile = {"id": "a", "provider": "openai", "name": "A", key: value}
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"version": 1, "profiles": [profile]}))
    loaded = AppSettings.load(tmp_path)
    assert isinstance(loaded.load_error, SettingsFileError)
    assert key in str(loaded.load_error)


def test_a_profile_s_api_kind_is_its_own_else_its_preset_s_else_chat_completions() -> None:
    assert ProfileConfig.from_preset("anthropic", "a").api_kind == "anthropic"
    assert ProfileConfig.from_preset("openai", "o").api_kind == "openai-chat"
    custom = ProfileConfig.custom("x", "http://127.0.0.1:9/v1")
    assert custom.api_kind == "openai-chat"
    assert replace(custom, api="openai-responses").api_kind == "openai-responses"
    assert replace(custom, base_url=None).api_kind == "openai-chat"  # known while the profile is incomplete
    for config in (ProfileConfig.from_preset("anthropic", "a"), replace(custom, api="openai-responses")):
        assert config.provider_profile().api == config.api_kind
