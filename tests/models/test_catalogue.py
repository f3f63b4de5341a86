"""The model catalogue: shipped entries, how names match, config overrides, bad config."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tether.config import CliOverrides, load_settings
from tether.errors import ConfigError
from tether.models.catalogue import DEFAULT_WINDOW, lookup


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("openai/gpt-4o-mini", 128_000),  # a router's provider prefix
        ("anthropic/claude-sonnet-4", 200_000),
        ("claude-sonnet-4-20250514", 200_000),  # a dated version of a listed model
        ("gpt-4.1-mini-2025-04-14", 1_047_576),  # the longest listed prefix wins
    ],
)
def test_known_models(name: str, window: int) -> None:
    info = lookup(name)
    assert info.known and info.context_window == window and info.name == name


def test_the_longest_prefix_wins_and_prices_are_there() -> None:
    mini, full = lookup("gpt-4.1-mini-2025-04-14"), lookup("gpt-4.1-2025-04-14")
    assert mini.input == 0.4 and full.input == 2.0
    assert lookup("claude-sonnet-4").cache_write == 3.75


def test_unknown_models_get_safe_defaults() -> None:
    info = lookup("qwen2.5-coder:7b")
    assert not info.known and info.context_window == DEFAULT_WINDOW and info.input is None
    assert not lookup("gpt-4.10").known  # no prefix match without a dash boundary


def test_config_extends_and_overrides_the_catalogue(tmp_path: Path) -> None:
    config = tmp_path / "xdg" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[models."my-local"]\ncontext_window = 32768\ninput = 0\noutput = 0\n'
        '[models."gpt-4o"]\ncontext_window = 64000\n'
    )
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "TETHER_MODEL": "m"}
    settings = load_settings(CliOverrides(workspace=tmp_path), environ=env, require_model=False)
    local = lookup("my-local", settings.models)
    assert local.known and local.context_window == 32768 and local.output == 0.0
    assert lookup("gpt-4o", settings.models).context_window == 64000
    assert lookup("gpt-4o", settings.models).input == 2.5  # the rest of the entry stays


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[models."x"]\nwindow = 5\n', "unknown key 'window'"),
        ('[models."x"]\ncontext_window = "big"\n', "must be int"),
        ('[models."x"]\ninput = -1.0\n', "must not be negative"),
        ("models = 3\n", "must hold tables"),
    ],
)
def test_bad_model_entries_say_what_is_wrong(tmp_path: Path, text: str, words: str) -> None:
    config = tmp_path / "xdg" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    with pytest.raises(ConfigError, match=words):
        load_settings(CliOverrides(workspace=tmp_path), environ=env, require_model=False)


def test_router_and_dotted_spellings_find_the_same_entry() -> None:
    assert lookup("anthropic/claude-sonnet-4.5") == replace(
        lookup("claude-sonnet-4-5"), name="anthropic/claude-sonnet-4.5"
    )
    assert lookup("minimax/minimax-m2").echo_reasoning
    # Longer family names are not captured by shorter ones.
    assert lookup("claude-opus-4-5-20251101").input == 5.0
    assert lookup("claude-opus-4-20250514").input == 15.0
    assert lookup("gemini-2.5-flash-lite").input == 0.1
