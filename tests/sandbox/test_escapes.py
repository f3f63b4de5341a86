"""Escape attempts, executed for real against every sandbox backend.

Each test runs real commands through `run_command` exactly as the bash tool does,
with the backend's launch, and checks the host afterwards. A backend that does not
work on this machine fails these tests with its probe's reason: CI installs
bubblewrap, and the kernel there offers Landlock, so both must run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tether.sandbox.base import Sandbox, SandboxPolicy, protected_paths
from tether.sandbox.choose import backend
from tether.sandbox.environment import tool_environment
from tether.tools.shell import CommandResult, run_command


@pytest.fixture
def base() -> Iterator[Path]:
    """A host directory outside /tmp (which bwrap replaces), holding the workspace."""
    path = Path(tempfile.mkdtemp(prefix="tether-escape-", dir="/var/tmp"))
    (path / "ws").mkdir()
    (path / "target.txt").write_text("original\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(
    box: Sandbox,
    ws: Path,
    command: str,
    *,
    network: bool = False,
    max_processes: int = 512,
    timeout: float = 30,
    env: dict[str, str] | None = None,
) -> CommandResult:
    tmp = ws.parent / "private-tmp"
    tmp.mkdir(exist_ok=True)
    policy = SandboxPolicy(
        workspace=ws,
        tmp=tmp,
        readonly=protected_paths(ws),
        network=network,
        max_processes=max_processes,
    )
    return run_command(
        command,
        cwd=ws,
        env=env if env is not None else tool_environment(os.environ),
        timeout=timeout,
        launcher=partial(box.launch, policy=policy),
    )


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Content, mode and mtime of everything outside the workspace."""
    return {
        str(p.relative_to(root)): (
            p.read_bytes() if p.is_file() else b"<dir>",
            p.stat().st_mode,
            p.stat().st_mtime_ns,
        )
        for p in root.rglob("*")
        if "ws" not in p.relative_to(root).parts[:1] and "private-tmp" not in p.parts
    }


ESCAPES = {
    "direct path": "echo x > {base}/direct.txt",
    "dot-dot": "echo x > ../dotdot.txt",
    "symlink to a directory": "ln -s {base} link && echo x > link/via-link.txt",
    "symlink to a file": "ln -s {base}/target.txt f && echo pwned >> f",
    "proc self root": "echo x > /proc/self/root{base}/proc-root.txt",
    "hard link": "ln {base}/target.txt hard && echo pwned >> hard",
    "rename into the workspace": "mv {base}/target.txt moved.txt",
    "system directory": "touch /etc/tether-escape-{tag}",
    "delete outside": "rm -f {base}/target.txt",
    "chmod outside": "chmod 4777 {base}/target.txt",
    "timestamps outside": "touch -d 2001-01-01 {base}/target.txt",
    "sysctl": "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern",
    "sysrq": "echo h > /proc/sysrq-trigger",
}


@pytest.mark.parametrize("attempt", ESCAPES)
def test_writing_outside_the_workspace_fails(box: Sandbox, base: Path, attempt: str) -> None:
    tag = uuid.uuid4().hex[:8]
    before = snapshot(base)
    result = run(box, base / "ws", ESCAPES[attempt].format(base=base, tag=tag))
    assert result.exit_code != 0, result.output
    assert snapshot(base) == before
    assert not Path(f"/etc/tether-escape-{tag}").exists()


def test_workspace_and_private_tmp_are_writable(box: Sandbox, base: Path) -> None:
    ws = base / "ws"
    result = run(
        box,
        ws,
        'echo w > sub.txt && mkdir -p d/e && mv sub.txt d/e/ && echo t > "$TMPDIR/t.txt" '
        '&& cat "$TMPDIR/t.txt" d/e/sub.txt && echo gone > /dev/null',
    )
    assert result.exit_code == 0, result.output
    assert result.output == "t\nw\n"
    assert (ws / "d/e/sub.txt").read_text() == "w\n"


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_network_off_refuses_a_local_tcp_connect(box: Sandbox, base: Path, listener: int) -> None:
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    off = run(box, base / "ws", connect)
    assert off.exit_code != 0 and "connected" not in off.output, off.output
    on = run(box, base / "ws", connect, network=True)
    assert on.exit_code == 0 and "connected" in on.output, on.output


def test_git_hooks_config_and_tether_stay_read_only(box: Sandbox, base: Path) -> None:
    ws = base / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config_before = (ws / ".git/config").read_bytes()
    hooks_before = sorted(p.name for p in (ws / ".git/hooks").iterdir())
    # the agent still works with git: objects, index and refs are writable
    commit = run(
        box,
        ws,
        "echo a > a.txt && git add a.txt && "
        "git -c user.name=t -c user.email=t@t commit -qm first && git log --oneline | wc -l",
    )
    assert commit.exit_code == 0 and commit.output.strip() == "1", commit.output
    for attempt in (
        "echo 'rm -rf ~' > .git/hooks/pre-commit",
        "echo '[core]' >> .git/config",
        "git config core.hooksPath evil",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/old-hooks",
        "mv .git moved-git && mkdir -p .git/hooks",
        "rm -rf .git",  # removes what it may (objects, refs), never the hooks or config
        "mkdir -p .tether && echo 'allow = [\"*\"]' > .tether/config.toml",
        "mv .tether moved-tether",
        "rm -rf .tether",
    ):
        result = run(box, ws, attempt)
        assert result.exit_code != 0, (attempt, result.output)
    assert (ws / ".git/config").read_bytes() == config_before
    assert sorted(p.name for p in (ws / ".git/hooks").iterdir()) == hooks_before
    assert not (ws / ".git/hooks/pre-commit").exists()
    assert not (ws / ".tether/config.toml").exists()
    assert not (ws / "moved-git").exists() and not (ws / "moved-tether").exists()


def test_credentials_do_not_reach_the_command(box: Sandbox, base: Path) -> None:
    key = "sk-test-" + uuid.uuid4().hex
    environ = {
        "PATH": os.environ["PATH"],
        "OPENAI_API_KEY": key,
        "MY_ENDPOINT_KEY_COPY": key,  # unknown name, but the endpoint's key by value
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
        "GITHUB_TOKEN": "ghp-secret",
        "NPM_TOKEN": "npm-secret",
        "SERVICE_PASSWORD": "pw-secret",
        "HARMLESS": "kept",
    }
    env = tool_environment(environ, secrets=[key])
    result = run(box, base / "ws", "env", env=env)
    assert result.exit_code == 0
    assert "HARMLESS=kept" in result.output
    for secret in (key, "aws-secret", "ghp-secret", "npm-secret", "pw-secret"):
        assert secret not in result.output


def _processes_matching(needle: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes().rpartition(b")")[2].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and stat and stat[0] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def _gone(needle: bytes, within: float = 3.0) -> bool:
    give_up = time.monotonic() + within
    while _processes_matching(needle):
        if time.monotonic() > give_up:
            return False
        time.sleep(0.05)
    return True


def test_a_fork_bomb_is_contained(box: Sandbox, base: Path) -> None:
    tag = f"bomb{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    result = run(
        box,
        base / "ws",
        f"{tag}() {{ {tag} | {tag} & }}; {tag}; sleep 2; echo survived # {tag}",
        max_processes=64,
        timeout=8,
    )
    assert time.monotonic() - started < 20
    assert "Resource temporarily unavailable" in result.output or "fork" in result.output
    assert _gone(tag.encode()), "fork bomb processes outlived the command"
    # the host can still start processes
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_timeout_leaves_no_process_behind(box: Sandbox, base: Path) -> None:
    seconds = 3000 + int(uuid.uuid4().int % 5000)
    result = run(
        box,
        base / "ws",
        f"setsid sleep {seconds} & (nohup sleep {seconds + 1} > /dev/null 2>&1 &); "
        f"sleep {seconds + 2}",
        timeout=1,
    )
    assert result.timed_out
    for n in (seconds, seconds + 1, seconds + 2):
        assert _gone(f"sleep\x00{n}".encode()), f"sleep {n} outlived the timeout"


def test_nothing_outlives_a_command_that_ended(box: Sandbox, base: Path) -> None:
    seconds = 3000 + int(uuid.uuid4().int % 5000)
    result = run(box, base / "ws", f"setsid sleep {seconds} > /dev/null 2>&1 & echo started")
    assert result.exit_code == 0 and "started" in result.output
    assert _gone(f"sleep\x00{seconds}".encode())


def test_setuid_programs_gain_nothing(box: Sandbox, base: Path) -> None:
    ws = base / "ws"
    setuid_id = ws / "suid-id"
    shutil.copy("/usr/bin/id", setuid_id)
    os.chown(setuid_id, 65534, 65534)
    setuid_id.chmod(0o4755)
    expected = str(os.geteuid())
    # outside the sandbox the bit works (the control): the effective uid becomes 65534
    control = subprocess.run([str(setuid_id), "-u"], capture_output=True, text=True)
    assert control.stdout.strip() == "65534"
    result = run(box, ws, "./suid-id -u && grep -E '^(NoNewPrivs|CapEff)' /proc/self/status")
    lines = result.output.split()
    assert lines[0] == expected, result.output
    assert "NoNewPrivs:" in lines and lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert lines[lines.index("CapEff:") + 1] == "0000000000000000"


def test_processes_outside_cannot_be_signalled(box: Sandbox, base: Path) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        result = run(box, base / "ws", f"kill -TERM {victim.pid}")
        assert result.exit_code != 0, result.output
        time.sleep(0.2)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_other_processes_secrets_cannot_be_read(box: Sandbox, base: Path) -> None:
    secret = "sk-victim-" + uuid.uuid4().hex
    victim = subprocess.Popen(["sleep", "60"], env={**os.environ, "VICTIM_KEY": secret})
    try:
        result = run(
            box,
            base / "ws",
            f"cat /proc/{victim.pid}/environ; tr '\\0' '\\n' < /proc/{os.getpid()}/environ",
        )
        assert secret not in result.output
        assert result.exit_code != 0, result.output
    finally:
        victim.kill()
        victim.wait()


def _unix_server(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    return server


CONNECT = (
    f"{sys.executable} -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
    's.connect(sys.argv[1]); print("connected")\' {path}'
)


def test_host_sockets_are_hidden(box: Sandbox, base: Path) -> None:
    """A session bus, a container engine or an X server would run things outside."""
    user_dir = Path("/run/user") / f"tether-test-{uuid.uuid4().hex[:8]}"
    user_dir.mkdir(parents=True)
    bus = _unix_server(user_dir / "bus")
    own = base / "sockets"
    own.mkdir()
    engine = _unix_server(own / "engine.sock")
    try:
        ws = base / "ws"
        # the control: outside the sandbox both connect
        for path in (user_dir / "bus", own / "engine.sock"):
            plain = subprocess.run(CONNECT.format(path=path), shell=True, capture_output=True)
            assert plain.stdout == b"connected\n", plain.stderr
        default = run(box, ws, CONNECT.format(path=user_dir / "bus"), network=True)
        assert "connected" not in default.output and default.exit_code != 0, default.output
        tmp = ws.parent / "private-tmp"
        tmp.mkdir(exist_ok=True)
        policy = SandboxPolicy(workspace=ws, tmp=tmp, network=True, hidden=(own / "engine.sock",))
        hidden = run_command(
            CONNECT.format(path=own / "engine.sock"),
            cwd=ws,
            env=tool_environment(os.environ),
            timeout=30,
            launcher=partial(box.launch, policy=policy),
        )
        assert "connected" not in hidden.output and hidden.exit_code != 0, hidden.output
    finally:
        bus.close()
        engine.close()
        shutil.rmtree(user_dir, ignore_errors=True)


def test_bwrap_loopback_works_inside_a_command_with_the_network_off(base: Path) -> None:
    """Tests that start a server and query it in one command keep working (bwrap; the
    Landlock backend refuses inet sockets altogether)."""
    box = backend("bwrap")
    try:
        result = run(
            box,
            base / "ws",
            f'{sys.executable} -c \'import socket; s = socket.create_server(("127.0.0.1", 0)); '
            'socket.create_connection(s.getsockname()); print("loopback ok")\'',
        )
    finally:
        box.close()
    assert result.output.strip() == "loopback ok", result.output


def test_host_terminals_and_shared_memory_are_out_of_reach(box: Sandbox, base: Path) -> None:
    master, slave = os.openpty()
    name = os.ttyname(slave)
    shm = Path("/dev/shm") / f"tether-test-{uuid.uuid4().hex[:8]}"
    shm.write_text("host")
    try:
        result = run(box, base / "ws", f"echo injected > {name}; cat {name}; rm -f {shm}")
        os.set_blocking(master, False)
        try:
            seen = os.read(master, 1000)
        except BlockingIOError:
            seen = b""
        assert b"injected" not in seen, result.output
        assert shm.read_text() == "host"
    finally:
        os.close(master)
        os.close(slave)
        shm.unlink(missing_ok=True)


def test_any_listening_host_socket_is_hidden(box: Sandbox, base: Path) -> None:
    """Not just the known ones: a terminal multiplexer's socket anywhere would run
    commands outside (tmux new-window)."""
    where = Path(tempfile.mkdtemp(prefix="tether-mux-", dir="/var/tmp"))
    server = _unix_server(where / "default")
    try:
        outside = subprocess.run(
            CONNECT.format(path=where / "default"), shell=True, capture_output=True
        )
        assert outside.stdout == b"connected\n", outside.stderr
        for network in (False, True):
            inside = run(box, base / "ws", CONNECT.format(path=where / "default"), network=network)
            assert "connected" not in inside.output and inside.exit_code != 0, inside.output
    finally:
        server.close()
        shutil.rmtree(where, ignore_errors=True)


SUBREAPER = """
import ctypes, os, sys, tempfile
from functools import partial
from pathlib import Path
from tether.sandbox.base import SandboxPolicy
from tether.sandbox.choose import backend
from tether.tools.shell import run_command

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans become ours
box = backend(sys.argv[1])
ws = Path(tempfile.mkdtemp(dir=sys.argv[2]))
policy = SandboxPolicy(workspace=ws, tmp=ws, max_processes=30)
for _ in range(8):
    result = run_command(
        "for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0.2 &); done; echo ok",
        cwd=ws, env={"PATH": os.environ["PATH"]}, timeout=20,
        launcher=partial(box.launch, policy=policy),
    )
    assert result.output.strip() == "ok", result.output
box.close()
print("all ok")
"""


def test_orphans_reaped_when_tether_is_their_reaper(box: Sandbox, base: Path) -> None:
    """As PID 1 of a container (or a subreaper) tether inherits the command's orphans:
    unreaped, their zombies would fill the process limit and break the bash tool."""
    done = subprocess.run(
        [sys.executable, "-c", SUBREAPER, box.name, str(base)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout + done.stderr


def test_the_endpoint_key_file_is_hidden(
    box: Sandbox, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = base / "home"
    (home / ".agents").mkdir(parents=True)
    (home / ".agents/env").write_text("API_KEY=sk-in-a-file-123\n")
    monkeypatch.setenv("HOME", str(home))
    env = {**tool_environment(os.environ), "HOME": str(home)}
    result = run(box, base / "ws", "cat ~/.agents/env", env=env)
    assert "sk-in-a-file" not in result.output and result.exit_code != 0, result.output


def test_tether_state_inside_the_workspace_is_read_only(box: Sandbox, base: Path) -> None:
    """A workspace that is the home directory holds tether's state: its checkpoint
    repositories are run by git outside the sandbox, so nothing inside may change them."""
    ws = base / "ws"
    state = ws / ".local" / "state" / "tether"
    repo = state / "checkpoints" / "abc.git"
    repo.mkdir(parents=True)
    (repo / "config").write_text("[core]\n")
    tmp = base / "private-tmp"
    tmp.mkdir(exist_ok=True)
    policy = SandboxPolicy(
        workspace=ws, tmp=tmp, readonly=protected_paths(ws, state=state), network=False
    )
    command = (
        "mkdir -p .local/state/tether/checkpoints/abc.git/hooks; "
        "echo '[core] hooksPath=/x' >> .local/state/tether/checkpoints/abc.git/config; "
        "rm -rf .local/state/tether; mv .local/state .local/moved; "
        "touch outside-state.txt"
    )
    result = run_command(
        command,
        cwd=ws,
        env=tool_environment(os.environ),
        timeout=30,
        launcher=partial(box.launch, policy=policy),
    )
    assert not (repo / "hooks").exists(), result.output
    assert (repo / "config").read_text() == "[core]\n"
    assert state.is_dir() and (ws / "outside-state.txt").exists()


def test_state_elsewhere_is_not_mounted() -> None:
    ws = Path(tempfile.mkdtemp(prefix="tether-ws-", dir="/var/tmp"))
    try:
        paths = protected_paths(ws, state=Path("/var/tmp/elsewhere-state"))
        assert Path("/var/tmp/elsewhere-state") not in paths
        inside = protected_paths(ws, state=ws / "state", writable=())
        assert ws / "state" in inside and (ws / "state").is_dir()
    finally:
        shutil.rmtree(ws, ignore_errors=True)
