"""The application's settings file: provider profiles, the active one, workspace folders, price overrides (SPEC §7).

:class:`AppSettings` lives in ``<config dir>/settings.json`` (:func:`~tiny_agent_core.paths.config_dir`:
platformdirs' user config folder, or ``$TINY_AGENT_CONFIG_DIR``). It never holds an API key: keys live in the OS
keyring (:mod:`tiny_agent_core.secrets`) and a profile records only the *name* of the environment variable that may
supply one for a run. Standing tool permissions are kept beside it by
:class:`~tiny_agent_core.tools.approval.ToolSettings`.

Loading never crashes the app::

    settings = AppSettings.load()          # defaults when the file is missing, unreadable or invalid
    if settings.load_error is not None:    # a SettingsError: show str(error) to the user
        ...

- The file carries ``"version"``. A file written by a newer app raises (or records) :class:`SettingsVersionError`
  and :meth:`AppSettings.save` then refuses to overwrite it, so running an older build never destroys newer
  settings.
- A corrupt or invalid file gives :class:`SettingsFileError` naming the bad field, and defaults; the next save moves
  the bad file aside to ``settings.json.corrupt`` before writing, so a hand-edit is never silently lost.
- Writes are atomic (temporary file, fsync, rename) and the file is mode 0600.
- Price overrides are US dollars per million tokens, stored as strings and read as :class:`~decimal.Decimal`, keyed
  like :data:`~tiny_agent_core.pricing.Overrides`: ``(provider id, model)`` where the provider id is the one
  :func:`~tiny_agent_core.pricing.price_request` receives (a preset id or ``"custom"``) and the model may be ``"*"``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from tiny_agent_core.agent.auto_compact import DEFAULT_PERCENT, PERCENT_RANGE
from tiny_agent_core.errors import SettingsError, SettingsFileError, SettingsVersionError
from tiny_agent_core.paths import config_dir
from tiny_agent_core.pricing import PriceOverride
from tiny_agent_core.providers.profiles import PRESETS, ProviderProfile, custom_profile, normalize_base_url

__all__ = [
    "CUSTOM",
    "MAX_STEPS_LIMIT",
    "SCHEMA_VERSION",
    "SETTINGS_FILE",
    "AppSettings",
    "ProfileConfig",
]

SETTINGS_FILE = "settings.json"
"""The settings file's name inside the config folder."""

SCHEMA_VERSION = 1
"""The settings file version this app writes and the newest it reads."""

MAX_STEPS_LIMIT = 100_000
"""The largest step limit the settings accept."""

CUSTOM = "custom"
"""The provider id of a profile that is not a preset (any OpenAI-compatible base URL)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_API_KIND = re.compile(r"[a-z][a-z0-9-]{0,39}")
"""What an API kind's name looks like (whether this version knows it is checked when a request is built)."""
_PRICE_FIELDS = (("input", "input"), ("output", "output"), ("cacheRead", "cache_read"), ("cacheWrite", "cache_write"))
"""(JSON key, :class:`PriceOverride` attribute) of each rate."""
_Bad = Callable[[str, str], SettingsFileError]
"""Builds the error for an invalid field: ``bad(where, what)``."""


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    """One provider the user configured. Never holds a key; the keyring entry's username is :attr:`id`."""

    id: str
    """Unique among the user's profiles (``"openai"``, ``"openai-2"``, ``"custom"``…); also the keyring username."""
    provider: str
    """A preset id from :data:`~tiny_agent_core.providers.profiles.PRESETS`, or :data:`CUSTOM`."""
    name: str
    """What the user calls it."""
    base_url: str | None = None
    """Required for a custom profile; for a preset, a different server (e.g. vLLM on another host) or ``None``."""
    model: str | None = None
    """The chosen model id."""
    key_env: str | None = None
    """The environment variable that may supply the key for a run when no keyring is available."""
    tool_choice_auto: bool | None = None
    """Send ``tool_choice: "auto"`` with the tools (``None``: the provider's default; on for local servers)."""
    stream_tools: bool | None = None
    """Requests offering tools may be streamed (``None``: yes; set to false when the server was found unable)."""
    null_content: bool | None = None
    """The server accepts ``content: null`` in tool-call messages (``None``: the default; off for local servers)."""
    context_length: int | None = None
    """The model's context window in tokens (``None``: asked of a local server, else unknown)."""
    api: str | None = None
    """The API kind the endpoint speaks (a key of :data:`~tiny_agent_core.providers.api_kinds.API_KINDS`;
    ``None``: the preset's, ``openai-chat`` for a custom profile). The dialect settings apply to ``openai-chat``."""
    server_state: bool | None = None
    """Let the server keep the conversation (``openai-responses`` chaining; ``None``: the preset's, off)."""

    @property
    def is_custom(self) -> bool:
        """True for a custom base URL profile."""
        return self.provider == CUSTOM

    @property
    def api_kind(self) -> str:
        """The API kind this profile speaks: its own :attr:`api`, else its preset's, else a custom profile's
        default (what :meth:`provider_profile` sends with; known even while the profile is incomplete)."""
        if self.api:
            return self.api
        preset = PRESETS.get(self.provider)
        return preset.api if preset is not None else ProviderProfile.api

    def provider_profile(self) -> ProviderProfile:
        """The :class:`ProviderProfile` to send requests with (its ``id`` is the preset id or ``"custom"``)."""
        if self.is_custom:
            if not self.base_url:
                raise SettingsError(f"The custom provider {self.name!r} has no base URL.")
            profile = replace(custom_profile(self.base_url, name=self.name), key_env=self.key_env)
        else:
            preset = PRESETS.get(self.provider)
            if preset is None:
                raise SettingsError(f"The provider {self.provider!r} of {self.name!r} is not known to this version.")
            profile = preset.with_base_url(self.base_url) if self.base_url else preset
            profile = replace(profile, name=self.name, key_env=self.key_env)
        chosen = {name: value for name, value in self.dialect_settings().items() if value is not None}
        return replace(
            profile,
            dialect=replace(profile.dialect, **chosen),
            context_length=self.context_length if self.context_length is not None else profile.context_length,
            api=self.api_kind,
            server_state=self.server_state if self.server_state is not None else profile.server_state,
        )

    def dialect_settings(self) -> dict[str, bool | None]:
        """The dialect fields this profile sets (``None``: the provider's default), by ``Dialect`` field name."""
        return {attribute: getattr(self, attribute) for _, attribute in _DIALECT_KEYS}

    @classmethod
    def from_preset(cls, preset_id: str, profile_id: str) -> ProfileConfig:
        """A new profile for a preset, with the preset's name, default model and key variable."""
        preset = PRESETS[preset_id]
        return cls(profile_id, preset_id, preset.name, model=preset.default_model, key_env=preset.key_env)

    @classmethod
    def custom(cls, profile_id: str, base_url: str, *, name: str | None = None) -> ProfileConfig:
        """A new custom profile for an OpenAI-compatible base URL."""
        url = normalize_base_url(base_url)
        return cls(profile_id, CUSTOM, name or custom_profile(url).name, base_url=url)


@dataclass
class AppSettings:
    """The settings file's contents; ``path=None`` keeps them in memory only."""

    path: Path | None = None
    profiles: list[ProfileConfig] = field(default_factory=list)
    active_profile: str | None = None
    """The id of the profile new sessions use (``None``: the first profile, if any)."""
    workspaces: list[str] = field(default_factory=list)
    """Folders scanned for ``.tiny-agent/sessions/`` (absolute paths, no duplicates)."""
    price_overrides: dict[tuple[str, str], PriceOverride] = field(default_factory=dict)
    """User prices by ``(provider id, model or "*")``; pass to :func:`~tiny_agent_core.pricing.price_request`."""
    max_steps: int | None = None
    """Model steps one run may start before it stops and offers to continue (``None``: the agent's default)."""
    auto_compact: int | None = DEFAULT_PERCENT
    """Compact before sending a prompt when the last request used this percentage of the model's context window or
    more (:mod:`~tiny_agent_core.agent.auto_compact`); ``None``: never. Stored as ``"autoCompact"``: a whole
    number, or ``false`` (a file without it gets the default)."""
    offline_workspaces: list[str] = field(default_factory=list)
    """Workspaces (real paths) whose ``bash`` and ``bg`` commands run without network (where the sandbox can cut it)."""
    load_error: SettingsError | None = None
    """Why the file could not be used (defaults are in effect), else ``None``."""

    # -- file ----------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, directory: str | os.PathLike[str] | None = None) -> AppSettings:
        """The settings in ``directory`` (default :func:`config_dir`); defaults plus ``load_error`` if unusable."""
        path = Path(directory if directory is not None else config_dir()) / SETTINGS_FILE
        try:
            return cls.read(path)
        except SettingsError as error:
            return cls(path, load_error=error)

    @classmethod
    def read(cls, path: Path) -> AppSettings:
        """Parse one settings file; a missing file gives defaults. Raises :class:`SettingsError` subclasses."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except (OSError, UnicodeDecodeError) as error:
            raise SettingsFileError(f"The settings file {path} cannot be read: {error}.", path=path) from error
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SettingsFileError(f"The settings file {path} is not valid JSON: {error}.", path=path) from error
        return cls._from_json(path, data)

    def save(self) -> None:
        """Write the file atomically with mode 0600 (nothing when in memory).

        Validates first (:meth:`validate`); refuses (:class:`SettingsVersionError`) to overwrite a file written by
        a newer version; moves a corrupt file aside to ``settings.json.corrupt`` first.
        """
        self.validate()
        if self.path is None:
            return
        if isinstance(self.load_error, SettingsVersionError):
            raise self.load_error
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if isinstance(self.load_error, SettingsFileError) and self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(self._to_json(), file, ensure_ascii=False, indent=2)
                file.write("\n")
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self.load_error = None

    def validate(self) -> None:
        """Raise :class:`SettingsError` for what the file could not hold: a custom profile without a base URL, a
        bad environment variable name, a repeated profile id, an empty name."""
        seen: set[str] = set()
        for profile in self.profiles:
            label = profile.name or profile.id
            if not profile.id or profile.id in seen:
                raise SettingsError(f"The provider profile id {profile.id!r} is empty or repeated.")
            seen.add(profile.id)
            if not profile.name.strip():
                raise SettingsError(f"The provider profile {profile.id!r} needs a name.")
            if profile.is_custom and not profile.base_url:
                raise SettingsError(f"The custom provider {label!r} needs a base URL.")
            if profile.key_env is not None and not _ENV_NAME.fullmatch(profile.key_env):
                raise SettingsError(
                    f"{profile.key_env!r} (provider {label!r}) is not an environment variable name: use letters, "
                    "digits and underscores, not starting with a digit."
                )
        if self.max_steps is not None and not 1 <= self.max_steps <= MAX_STEPS_LIMIT:
            raise SettingsError(f"The step limit must be a whole number from 1 to {MAX_STEPS_LIMIT:,}.")
        low, high = PERCENT_RANGE
        if self.auto_compact is not None and not low <= self.auto_compact <= high:
            raise SettingsError(f"The automatic compaction threshold must be a whole percentage from {low} to {high}.")

    # -- profiles ------------------------------------------------------------------------------------------

    def profile(self, profile_id: str) -> ProfileConfig | None:
        """The profile with this id, if any."""
        return next((profile for profile in self.profiles if profile.id == profile_id), None)

    def active(self) -> ProfileConfig | None:
        """The active profile: :attr:`active_profile` if it exists, else the first profile, else ``None``."""
        chosen = self.profile(self.active_profile) if self.active_profile else None
        return chosen or (self.profiles[0] if self.profiles else None)

    def new_profile_id(self, base: str) -> str:
        """A profile id not yet used: ``base``, else ``base-2``, ``base-3``…"""
        taken = {profile.id for profile in self.profiles}
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def add_profile(self, profile: ProfileConfig) -> None:
        """Append a profile (its id must be new); the first profile becomes active."""
        if self.profile(profile.id) is not None:
            raise SettingsError(f"A provider profile with id {profile.id!r} already exists.")
        self.profiles.append(profile)
        if self.active() is profile:
            self.active_profile = profile.id

    def update_profile(self, profile: ProfileConfig) -> None:
        """Replace the profile with the same id."""
        for index, existing in enumerate(self.profiles):
            if existing.id == profile.id:
                self.profiles[index] = profile
                return
        raise SettingsError(f"There is no provider profile with id {profile.id!r}.")

    def remove_profile(self, profile_id: str) -> None:
        """Drop a profile (its keyring entry is the caller's to delete); the active one falls back to the first."""
        self.profiles = [profile for profile in self.profiles if profile.id != profile_id]
        if self.active_profile == profile_id:
            self.active_profile = self.profiles[0].id if self.profiles else None

    # -- workspaces ----------------------------------------------------------------------------------------

    def add_workspace(self, folder: str | os.PathLike[str]) -> str:
        """Add a folder (made absolute); returns the stored path. Adding it twice keeps one entry."""
        path = os.path.abspath(os.path.expanduser(os.fspath(folder)))
        if path not in self.workspaces:
            self.workspaces.append(path)
        return path

    def remove_workspace(self, folder: str) -> None:
        """Stop scanning a folder."""
        self.workspaces = [workspace for workspace in self.workspaces if workspace != folder]

    # -- JSON ----------------------------------------------------------------------------------------------

    def _to_json(self) -> dict[str, Any]:
        overrides: dict[str, dict[str, dict[str, str | None]]] = {}
        for (provider, model), price in sorted(self.price_overrides.items()):
            overrides.setdefault(provider, {})[model] = {
                key: None if getattr(price, attr) is None else str(getattr(price, attr)) for key, attr in _PRICE_FIELDS
            }
        return {
            "version": SCHEMA_VERSION,
            "profiles": [_profile_to_json(profile) for profile in self.profiles],
            "activeProfile": self.active_profile,
            "workspaces": list(self.workspaces),
            "priceOverrides": overrides,
            "maxSteps": self.max_steps,
            "autoCompact": False if self.auto_compact is None else self.auto_compact,
            "offlineWorkspaces": list(self.offline_workspaces),
        }

    @classmethod
    def _from_json(cls, path: Path, data: Any) -> AppSettings:
        def bad(where: str, what: str) -> SettingsFileError:
            return SettingsFileError(f"The settings file {path} is invalid: {where} {what}.", path=path)

        if not isinstance(data, dict):
            raise bad("the top level", "must be a JSON object")
        _check_version(data, path, bad)
        profiles = _profiles_from_json(data, bad)
        active = data.get("activeProfile")
        if active is not None and not isinstance(active, str):
            raise bad("'activeProfile'", "must be a string or null")
        workspaces = list(dict.fromkeys(_folders_from_json(data, "workspaces", bad)))
        overrides = _overrides_from_json(data.get("priceOverrides", {}), bad)
        max_steps = data.get("maxSteps")
        if max_steps is not None and (
            not isinstance(max_steps, int) or isinstance(max_steps, bool) or not 1 <= max_steps <= MAX_STEPS_LIMIT
        ):
            raise bad("'maxSteps'", f"must be null or a whole number from 1 to {MAX_STEPS_LIMIT}")
        auto_compact = data.get("autoCompact", DEFAULT_PERCENT)
        low, high = PERCENT_RANGE
        if auto_compact is not False and (
            not isinstance(auto_compact, int) or isinstance(auto_compact, bool) or not low <= auto_compact <= high
        ):
            raise bad("'autoCompact'", f"must be false or a whole number from {low} to {high}")
        offline = sorted(set(_folders_from_json(data, "offlineWorkspaces", bad)))
        return cls(
            path,
            profiles,
            active,
            workspaces,
            overrides,
            max_steps=max_steps,
            auto_compact=None if auto_compact is False else auto_compact,
            offline_workspaces=offline,
        )

    def network_allowed(self, workspace: str | os.PathLike[str]) -> bool:
        """Whether ``bash`` and ``bg`` may use the network in ``workspace`` (they may unless the user turned it off)."""
        return os.path.realpath(os.fspath(workspace)) not in self.offline_workspaces

    def set_network_allowed(self, workspace: str | os.PathLike[str], allowed: bool) -> None:
        """Allow or cut the network for ``bash`` and ``bg`` in ``workspace``."""
        path = os.path.realpath(os.fspath(workspace))
        offline = set(self.offline_workspaces) - {path}
        self.offline_workspaces = sorted(offline if allowed else offline | {path})


def _profile_to_json(profile: ProfileConfig) -> dict[str, Any]:
    return {
        "id": profile.id,
        "provider": profile.provider,
        "name": profile.name,
        "baseUrl": profile.base_url,
        "model": profile.model,
        "keyEnv": profile.key_env,
        **{key: value for key, value in _dialect_json(profile).items() if value is not None},
    }


_DIALECT_KEYS = (
    ("toolChoiceAuto", "tool_choice_auto"),
    ("streamTools", "stream_tools"),
    ("nullContent", "null_content"),
)
"""(JSON key, :class:`ProfileConfig` attribute) of each dialect setting."""


def _dialect_json(profile: ProfileConfig) -> dict[str, Any]:
    out: dict[str, Any] = {key: getattr(profile, attribute) for key, attribute in _DIALECT_KEYS}
    out["contextLength"] = profile.context_length
    out["api"] = profile.api
    out["serverState"] = profile.server_state
    return out


def _list(data: Mapping[str, Any], key: str, bad: _Bad) -> Iterable[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise bad(f"'{key}'", "must be an array")
    return value


def _check_version(data: Mapping[str, Any], path: Path, bad: _Bad) -> None:
    """Refuse a file without a valid ``version``, or one written by a newer app (:class:`SettingsVersionError`)."""
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise bad("'version'", "must be a positive integer")
    if version > SCHEMA_VERSION:
        raise SettingsVersionError(
            f"The settings file {path} was written by a newer version of tiny-agent desktop (settings version "
            f"{version}; this version reads up to {SCHEMA_VERSION}). Update the app; the file is left unchanged.",
            path=path,
            found=version,
            supported=SCHEMA_VERSION,
        )


def _profiles_from_json(data: Mapping[str, Any], bad: _Bad) -> list[ProfileConfig]:
    """The profiles, in file order (their ids unique)."""
    profiles: list[ProfileConfig] = []
    for index, entry in enumerate(_list(data, "profiles", bad)):
        profile = _profile_from_json(entry, f"profiles[{index}]", bad)
        if any(existing.id == profile.id for existing in profiles):
            raise bad(f"profiles[{index}].id", f"repeats {profile.id!r}")
        profiles.append(profile)
    return profiles


def _folders_from_json(data: Mapping[str, Any], key: str, bad: _Bad) -> list[str]:
    """The folders listed under ``key``, in file order (each a non-empty string)."""
    folders: list[str] = []
    for index, folder in enumerate(_list(data, key, bad)):
        if not isinstance(folder, str) or not folder:
            raise bad(f"{key}[{index}]", "must be a non-empty string")
        folders.append(folder)
    return folders


def _profile_from_json(entry: Any, where: str, bad: _Bad) -> ProfileConfig:
    if not isinstance(entry, dict):
        raise bad(where, "must be an object")

    def optional(key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise bad(f"{where}.{key}", "must be a non-empty string or null")
        return value.strip()

    def required(key: str) -> str:
        value = optional(key)
        if value is None:
            raise bad(f"{where}.{key}", "must be a non-empty string")
        return value

    profile_id, provider, name = required("id"), required("provider"), required("name")
    base_url, model, key_env = optional("baseUrl"), optional("model"), optional("keyEnv")
    if provider == CUSTOM and base_url is None:
        raise bad(f"{where}.baseUrl", "is required for a custom provider")
    if key_env is not None and not _ENV_NAME.fullmatch(key_env):
        raise bad(f"{where}.keyEnv", f"is not an environment variable name: {key_env!r}")
    flags = {attribute: _optional_flag(entry, key, where, bad) for key, attribute in _DIALECT_KEYS}
    api = optional("api")
    if api is not None and not _API_KIND.fullmatch(api):
        raise bad(f"{where}.api", f"is not an API kind name: {api!r}")
    server_state = _optional_flag(entry, "serverState", where, bad)
    context = entry.get("contextLength")
    if context is not None and (type(context) is not int or not 0 < context < 1 << 31):
        raise bad(f"{where}.contextLength", "must be a positive number of tokens or null")
    return ProfileConfig(
        profile_id,
        provider,
        name,
        base_url and normalize_base_url(base_url),
        model,
        key_env,
        context_length=context,
        api=api,
        server_state=server_state,
        **flags,
    )


def _optional_flag(entry: Mapping[str, Any], key: str, where: str, bad: _Bad) -> bool | None:
    """A profile's true/false setting ``key``; ``None`` when it is absent or null."""
    value = entry.get(key)
    if value is not None and not isinstance(value, bool):
        raise bad(f"{where}.{key}", "must be true, false or null")
    return value


def _overrides_from_json(value: Any, bad: _Bad) -> dict[tuple[str, str], PriceOverride]:
    if not isinstance(value, dict):
        raise bad("'priceOverrides'", "must be an object of providers")
    overrides: dict[tuple[str, str], PriceOverride] = {}
    for provider, models in value.items():
        if not isinstance(models, dict):
            raise bad(f"priceOverrides.{provider}", "must be an object of models")
        for model, prices in models.items():
            where = f"priceOverrides.{provider}.{model}"
            if not isinstance(prices, dict):
                raise bad(where, "must be an object of prices")
            try:
                overrides[(provider, model)] = PriceOverride(
                    input=_required(_rate(prices, "input", where, bad), f"{where}.input", bad),
                    output=_required(_rate(prices, "output", where, bad), f"{where}.output", bad),
                    cache_read=_rate(prices, "cacheRead", where, bad),
                    cache_write=_rate(prices, "cacheWrite", where, bad),
                )
            except ValueError as error:
                raise bad(where, f"is not a valid price ({error})") from None
    return overrides


def _rate(prices: Mapping[str, Any], key: str, where: str, bad: _Bad) -> Decimal | None:
    raw = prices.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise bad(f"{where}.{key}", "must be a decimal string (dollars per million tokens)")
    try:
        return Decimal(raw)
    except InvalidOperation:
        raise bad(f"{where}.{key}", f"is not a decimal number: {raw!r}") from None


def _required(rate: Decimal | None, where: str, bad: _Bad) -> Decimal:
    if rate is None:
        raise bad(where, "is required (dollars per million tokens, as a string)")
    return rate
