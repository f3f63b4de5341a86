"""Settings resolution: flags over environment over ~/.agents/env; TOML validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.config import CliOverrides, load_settings, public_endpoint
from tether.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".agents").mkdir(parents=True)
    return h


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def test_precedence_flag_env_file(home: Path, tmp_path: Path) -> None:
    (home / ".agents/env").write_text(
        "BASE_URL=http://file.example/v1\nAPI_KEY=file-key-123456\nMODEL=file-model\n"
    )
    only_file = load_settings(CliOverrides(workspace=tmp_path), environ=env_for(home))
    assert (only_file.base_url, only_file.api_key, only_file.model) == (
        "http://file.example/v1",
        "file-key-123456",
        "file-model",
    )
    env = env_for(
        home,
        TETHER_BASE_URL="http://env.example/v1/",
        OPENAI_API_KEY="env-key-1234567",
        TETHER_MODEL="env-model",
    )
    from_env = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert (from_env.base_url, from_env.api_key, from_env.model) == (
        "http://env.example/v1",
        "env-key-1234567",
        "env-model",
    )
    flagged = load_settings(
        CliOverrides(workspace=tmp_path, base_url="http://flag.example/v1", model="flag-model"),
        environ=env,
    )
    assert (flagged.base_url, flagged.model) == ("http://flag.example/v1", "flag-model")


def test_tether_vars_win_over_openai_vars(home: Path, tmp_path: Path) -> None:
    env = env_for(
        home,
        TETHER_BASE_URL="http://a.example/v1",
        OPENAI_BASE_URL="http://b.example/v1",
        TETHER_API_KEY="tether-key-1234",
        OPENAI_API_KEY="openai-key-1234",
        TETHER_MODEL="m",
    )
    s = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert s.base_url == "http://a.example/v1" and s.api_key == "tether-key-1234"


def test_key_not_needed_for_a_local_server(home: Path, tmp_path: Path) -> None:
    env = env_for(home, TETHER_BASE_URL="http://localhost:11434/v1", TETHER_MODEL="llama")
    assert load_settings(CliOverrides(workspace=tmp_path), environ=env).api_key is None
    with pytest.raises(ConfigError, match="TETHER_API_KEY"):
        load_settings(CliOverrides(workspace=tmp_path), environ=env_for(home, TETHER_MODEL="m"))


def test_key_is_hidden_from_repr(home: Path, tmp_path: Path) -> None:
    env = env_for(home, TETHER_API_KEY="sk-very-secret-42", TETHER_MODEL="m")
    s = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert "sk-very-secret-42" not in repr(s)
    assert "sk-very-secret-42" not in str(s.public())


def test_toml_user_then_project_then_flags(home: Path, tmp_path: Path) -> None:
    (home / ".config/tether").mkdir(parents=True)
    (home / ".config/tether/config.toml").write_text(
        "[limits]\nmax_turns = 7\ntimeout = 60\n[tools]\nbash_timeout = 5\n"
    )
    ws = tmp_path / "ws"
    (ws / ".tether").mkdir(parents=True)
    (ws / ".tether/config.toml").write_text("[limits]\nmax_turns = 9\n")
    env = env_for(home, TETHER_BASE_URL="http://127.0.0.1:1/v1", TETHER_MODEL="m")
    s = load_settings(CliOverrides(workspace=ws), environ=env)
    assert (s.max_turns, s.timeout, s.bash_timeout) == (9, 60.0, 5.0)
    assert len(s.config_files) == 2
    s2 = load_settings(CliOverrides(workspace=ws, max_turns=3), environ=env)
    assert s2.max_turns == 3


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[limits]\nmax_turn = 5\n", "max_turn"),
        ("[limit]\n", "'limit'"),
        ("[limits]\nmax_turns = 'many'\n", "must be int"),
        ("[limits]\nmax_turns = true\n", "must be int"),
        ("[limits\n", "invalid TOML"),
        ("[limits]\nmax_turns = -1\n", "must be a positive number"),
        ("[limits]\ntimeout = nan\n", "must be a positive number"),
        ('permission_mode = "yolo"\n', "permission mode"),
    ],
)
def test_bad_toml_is_a_clear_error(home: Path, tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text(text)
    env = env_for(home, TETHER_BASE_URL="http://127.0.0.1:1/v1", TETHER_MODEL="m")
    with pytest.raises(ConfigError) as info:
        load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8000",
        "http://127.0.0.1:99999/v1",
        "http://[::1/v1",
        "http://h:abc/v1",
        "ftp://h/",
    ],
)
def test_bad_base_url(home: Path, tmp_path: Path, url: str) -> None:
    env = env_for(home, TETHER_BASE_URL=url, TETHER_MODEL="m")
    with pytest.raises(ConfigError, match="not a valid http"):
        load_settings(CliOverrides(workspace=tmp_path), environ=env)


def test_key_with_a_trailing_newline_is_trimmed(home: Path, tmp_path: Path) -> None:
    env = env_for(home, TETHER_API_KEY="sk-abc-123456\n", TETHER_MODEL="m")
    assert load_settings(CliOverrides(workspace=tmp_path), environ=env).api_key == "sk-abc-123456"


def test_key_no_header_can_carry_is_refused_without_showing_it(home: Path, tmp_path: Path) -> None:
    env = env_for(home, TETHER_API_KEY="sk-abc\u201d123456", TETHER_MODEL="m")
    with pytest.raises(ConfigError, match="non-ASCII") as info:
        load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert "sk-abc" not in str(info.value)


def test_env_file_key_goes_only_to_its_own_endpoint(home: Path, tmp_path: Path) -> None:
    (home / ".agents/env").write_text("BASE_URL=https://a.example/v1\nAPI_KEY=file-key-1234\n")
    env = env_for(home, TETHER_MODEL="m")
    same = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert same.api_key == "file-key-1234"
    other = env_for(home, TETHER_MODEL="m", TETHER_BASE_URL="https://b.example/v1")
    with pytest.raises(ConfigError, match=r"belongs to https://a\.example/v1") as info:
        load_settings(CliOverrides(workspace=tmp_path), environ=other)
    assert "file-key-1234" not in str(info.value)
    local = load_settings(
        CliOverrides(workspace=tmp_path, base_url="http://127.0.0.1:8080/v1"), environ=env
    )
    assert local.api_key is None  # a local server gets no key it was not given


def test_home_defaults_and_override(home: Path, tmp_path: Path) -> None:
    env = env_for(home, TETHER_BASE_URL="http://127.0.0.1:1/v1", TETHER_MODEL="m")
    s = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert s.home == home / ".local/state/tether"
    s = load_settings(
        CliOverrides(workspace=tmp_path), environ={**env, "TETHER_HOME": str(tmp_path / "st")}
    )
    assert s.home == tmp_path / "st"


def test_public_endpoint_drops_credentials() -> None:
    assert public_endpoint("https://user:pw@host.example:8443/v1?key=abc") == (
        "https://host.example:8443/v1"
    )


def test_sandbox_settings_from_the_user_file(home: Path, tmp_path: Path) -> None:
    (home / ".config/tether").mkdir(parents=True)
    (home / ".config/tether/config.toml").write_text(
        '[sandbox]\nbackend = "landlock"\nnetwork = true\nallow_write = ["~/.cache/pip"]\n'
        'pass_env = ["GITHUB_TOKEN"]\nmax_processes = 100\n'
    )
    env = env_for(home, TETHER_BASE_URL="http://127.0.0.1:1/v1", TETHER_MODEL="m")
    s = load_settings(CliOverrides(workspace=tmp_path), environ=env)
    assert (s.sandbox, s.sandbox_network, s.max_processes) == ("landlock", True, 100)
    assert s.allow_write == ("~/.cache/pip",) and s.pass_env == ("GITHUB_TOKEN",)
    flagged = load_settings(CliOverrides(workspace=tmp_path, sandbox="bwrap"), environ=env)
    assert flagged.sandbox == "bwrap"


@pytest.mark.parametrize(
    "text",
    [
        '[sandbox]\nbackend = "none"\n',
        "[sandbox]\nnetwork = true\n",
        '[sandbox]\nallow_write = ["/"]\n',
        '[sandbox]\npass_env = ["AWS_SECRET_ACCESS_KEY"]\n',
    ],
)
def test_a_project_cannot_loosen_its_own_sandbox(home: Path, tmp_path: Path, text: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".tether").mkdir(parents=True)
    (ws / ".tether/config.toml").write_text(text)
    env = env_for(home, TETHER_BASE_URL="http://127.0.0.1:1/v1", TETHER_MODEL="m")
    with pytest.raises(ConfigError, match="may not loosen the sandbox"):
        load_settings(CliOverrides(workspace=ws), environ=env)
    (ws / ".tether/config.toml").write_text('[sandbox]\nbackend = "bwrap"\nmax_processes = 64\n')
    assert load_settings(CliOverrides(workspace=ws), environ=env).max_processes == 64
