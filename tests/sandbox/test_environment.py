"""Credentials never reach tool processes unless the user passes them on purpose."""

from __future__ import annotations

import pytest

from tether.sandbox.environment import is_credential, tool_environment


def test_credentials_are_dropped_by_name_and_by_value() -> None:
    env = tool_environment(
        {
            "PATH": "/usr/bin",
            "HOME": "/home/u",
            "OPENAI_API_KEY": "sk-1",
            "AWS_SECRET_ACCESS_KEY": "a",
            "GITHUB_TOKEN": "g",
            "NPM_TOKEN": "n",
            "MY_SERVICE_PASSWORD": "p",
            "SSH_AUTH_SOCK": "/tmp/agent",
            "INNOCENT_LOOKING": "sk-the-endpoint-key",
            "TOKENIZERS_PARALLELISM": "false",
        },
        secrets=["sk-the-endpoint-key"],
    )
    assert set(env) == {
        "PATH", "HOME", "TOKENIZERS_PARALLELISM", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
        "TETHER",
    }  # fmt: skip
    assert env["PAGER"] == "cat" and env["GIT_TERMINAL_PROMPT"] == "0"


def test_pass_env_lets_a_named_credential_through() -> None:
    env = tool_environment({"GITHUB_TOKEN": "g", "NPM_TOKEN": "n"}, pass_env=["GITHUB_TOKEN"])
    assert env["GITHUB_TOKEN"] == "g" and "NPM_TOKEN" not in env


def test_names_that_look_like_secrets() -> None:
    assert all(
        is_credential(n)
        for n in ("ANTHROPIC_API_KEY", "GH_TOKEN", "STRIPE_SECRET_KEY", "DB_PASSWORD", "AWS_REGION")
    )
    assert not any(is_credential(n) for n in ("PATH", "TOKENIZERS_PARALLELISM", "LANG", "TERM"))


@pytest.mark.parametrize(
    "name", ["OPENAI_KEY", "GITHUB_PAT", "STRIPE_KEY", "APP_SECRETS", "GPG_PASSPHRASE"]
)
def test_more_names_that_hold_secrets(name: str) -> None:
    assert is_credential(name)


@pytest.mark.parametrize("name", ["KEYBOARD_LAYOUT", "PATH", "HOME", "MONKEY_PATCH", "LANG"])
def test_ordinary_names_are_kept(name: str) -> None:
    assert not is_credential(name)
