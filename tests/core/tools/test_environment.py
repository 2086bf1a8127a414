"""The process tools' environment policy: an allowlist plus configured variables, never a secret-looking name."""

from __future__ import annotations

import os

import pytest

from tiny_agent_core.tools.environment import child_environment, looks_secret, refused_names


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "MY_PROVIDER_KEY",
        "myApiKey",
        "APIKEY",
        "GH_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "PGPASSWD",
        "DB_PASS",
        "GOOGLE_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "OAUTH_CLIENT",
        "HTTP_COOKIE",
        "X_SESSION_ID",
        "gpg_private",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "NODE_ENV", "GIT_AUTHOR_NAME", "TZ"])
def test_ordinary_names(name: str) -> None:
    assert not looks_secret(name)


def test_only_allowlisted_variables_pass_through() -> None:
    source = {
        "PATH": "/bin",
        "HOME": "/home/u",
        "LC_CTYPE": "C.UTF-8",
        "OPENAI_API_KEY": "sk-canary",
        "PYTHONPATH": "/x",
        "SSH_AUTH_SOCK": "/run/agent",
    }
    assert child_environment(source=source) == {"PATH": "/bin", "HOME": "/home/u", "LC_CTYPE": "C.UTF-8"}


def test_configured_variables_are_added_and_may_override_but_never_secrets() -> None:
    configured = {"NODE_ENV": "dev", "PATH": "/opt/bin:/bin", "STRIPE_KEY": "sk-canary", "BAD=NAME": "x"}
    assert child_environment(configured, source={"PATH": "/bin"}) == {"PATH": "/opt/bin:/bin", "NODE_ENV": "dev"}
    assert refused_names(configured) == ["STRIPE_KEY", "BAD=NAME"]


def test_path_falls_back_to_the_default() -> None:
    assert child_environment(source={}) == {"PATH": os.defpath}
