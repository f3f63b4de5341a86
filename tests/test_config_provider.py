"""Choosing the wire protocol: --provider, TETHER_PROVIDER, or an Anthropic key alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tether.config import CliOverrides, Settings, load_settings
from tether.errors import ConfigError
from tether.models.catalogue import lookup
from tether.models.choose import tool_protocol


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".agents").mkdir(parents=True)
    return h


def load(home: Path, tmp_path: Path, overrides: CliOverrides | None = None, **env: str) -> Settings:
    given = replace(overrides or CliOverrides(), workspace=tmp_path)
    return load_settings(given, environ={"HOME": str(home), **env})


def test_an_anthropic_key_alone_means_anthropic(home: Path, tmp_path: Path) -> None:
    s = load(home, tmp_path, ANTHROPIC_API_KEY="sk-ant-1234567", TETHER_MODEL="claude-sonnet-4-5")
    assert (s.provider, s.base_url, s.api_key) == (
        "anthropic",
        "https://api.anthropic.com",
        "sk-ant-1234567",
    )
    assert s.public()["provider"] == "anthropic"
    # ANTHROPIC_BASE_URL and ANTHROPIC_MODEL are honoured for that provider.
    s = load(
        home,
        tmp_path,
        ANTHROPIC_API_KEY="sk-ant-1234567",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9/",
        ANTHROPIC_MODEL="claude-haiku-4-5",
    )
    assert (s.base_url, s.model) == ("http://127.0.0.1:9", "claude-haiku-4-5")


def test_an_openai_setting_beside_it_keeps_openai(home: Path, tmp_path: Path) -> None:
    s = load(
        home,
        tmp_path,
        ANTHROPIC_API_KEY="sk-ant-1234567",
        OPENAI_API_KEY="sk-oa-1234567",
        TETHER_MODEL="gpt-4.1",
    )
    assert (s.provider, s.api_key) == ("openai", "sk-oa-1234567")
    assert s.base_url == "https://api.openai.com/v1"


def test_flag_and_env_choose_explicitly_and_unknown_names_are_refused(
    home: Path, tmp_path: Path
) -> None:
    s = load(
        home,
        tmp_path,
        CliOverrides(provider="anthropic"),
        TETHER_API_KEY="k-1234567",
        TETHER_MODEL="claude-opus-4-1",
    )
    assert (s.provider, s.base_url, s.api_key) == (
        "anthropic",
        "https://api.anthropic.com",
        "k-1234567",
    )
    s = load(
        home, tmp_path, TETHER_PROVIDER="Anthropic", TETHER_API_KEY="k-1234567", TETHER_MODEL="m"
    )
    assert s.provider == "anthropic"
    with pytest.raises(ConfigError, match=r"Unknown provider 'gemini'.*openai, anthropic"):
        load(home, tmp_path, TETHER_PROVIDER="gemini", TETHER_MODEL="m")


def test_a_missing_anthropic_key_names_the_variable(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"TETHER_API_KEY \(or ANTHROPIC_API_KEY\)"):
        load(home, tmp_path, TETHER_PROVIDER="anthropic", TETHER_MODEL="claude-sonnet-4-5")
    with pytest.raises(ConfigError, match="TETHER_MODEL=claude-sonnet-4-5"):
        load(home, tmp_path, TETHER_PROVIDER="anthropic", ANTHROPIC_API_KEY="k-1234567")


def test_tool_protocol_from_flag_config_or_catalogue(home: Path, tmp_path: Path) -> None:
    env = {"TETHER_BASE_URL": "http://127.0.0.1:9/v1", "TETHER_MODEL": "tiny-local"}
    s = load(home, tmp_path, **env)
    assert s.tool_protocol is None and tool_protocol(s, lookup(s.model)) == "auto"
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text(
        '[models."tiny-local"]\ntools = false\n[model]\nthinking_budget = 2048\n'
    )
    s = load(home, tmp_path, **env)
    assert tool_protocol(s, lookup(s.model, s.models)) == "text" and s.thinking_budget == 2048
    s = load(home, tmp_path, CliOverrides(tool_protocol="native"), **env)
    assert tool_protocol(s, lookup(s.model, s.models)) == "native"
    (tmp_path / ".tether/config.toml").write_text('[model]\ntool_protocol = "smoke"\n')
    with pytest.raises(ConfigError, match="Unknown tool protocol 'smoke'"):
        load(home, tmp_path, **env)
    (tmp_path / ".tether/config.toml").write_text('[models."x"]\ntool_protocol = "json"\n')
    with pytest.raises(ConfigError, match='tool_protocol must be "native" or "text"'):
        load(home, tmp_path, **env)


def test_an_anthropic_key_never_goes_to_an_endpoint_given_for_something_else(
    home: Path, tmp_path: Path
) -> None:
    s = load(
        home,
        tmp_path,
        CliOverrides(base_url="http://127.0.0.1:8000/v1", model="qwen3"),
        ANTHROPIC_API_KEY="sk-ant-SECRET-123",
    )
    assert (s.provider, s.api_key) == ("openai", None)


def test_a_key_in_agents_env_goes_to_its_own_providers_default_only(
    home: Path, tmp_path: Path
) -> None:
    (home / ".agents/env").write_text("API_KEY=sk-openai-SECRET-1\nMODEL=m\n")
    with pytest.raises(ConfigError, match=r"belongs to https://api\.openai\.com/v1"):
        load(home, tmp_path, CliOverrides(provider="anthropic"))
    (home / ".agents/env").write_text("PROVIDER=anthropic\nAPI_KEY=sk-ant-file-1\nMODEL=m\n")
    s = load(home, tmp_path)
    assert (s.provider, s.base_url, s.api_key) == (
        "anthropic",
        "https://api.anthropic.com",
        "sk-ant-file-1",
    )


def test_a_thinking_budget_below_anthropics_minimum_is_refused(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 1024"):
        load(
            home,
            tmp_path,
            CliOverrides(thinking_budget=500),
            ANTHROPIC_API_KEY="k-1234567",
            TETHER_MODEL="m",
        )
