"""The dispatcher against untrusted calls: every call gets a readable result."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import ToolError
from tether.messages import ToolCall, ToolResult
from tether.sandbox.workspace import Workspace
from tether.tools.builtin import builtin_tools
from tether.tools.dispatch import Dispatcher
from tether.tools.registry import Registry, ToolContext, tool


@tool
def explode(ctx: ToolContext, n: int) -> str:
    """Raises whatever it is asked to.

    Args:
        n: Which failure.
    """
    if n % 3 == 0:
        raise ToolError(f"model mistake {n}")
    if n % 3 == 1:
        raise RuntimeError(f"program bug {n}")
    return 42  # type: ignore[return-value]  # a tool that breaks its own contract


@tool
def patient(ctx: ToolContext, seconds: float) -> str:
    """Waits, but stops when cancelled.

    Args:
        seconds: How long to wait.
    """
    ctx.cancel.wait(seconds)
    return "cancelled" if ctx.cancel.is_set() else "waited"


@tool
def stuck(ctx: ToolContext) -> str:
    """Ignores cancellation entirely."""
    time.sleep(30)
    return "never"


def _registry() -> Registry:
    file_tools = [t for t in builtin_tools() if t.name != "bash"]
    return Registry([*file_tools, explode, patient])


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
param_names = st.sampled_from(
    [
        "path",
        "content",
        "old_str",
        "new_str",
        "replace_all",
        "offset",
        "limit",
        "pattern",
        "glob",
        "n",
        "seconds",
        "command",
        "patch",
        "x",
    ]
)
paths = st.sampled_from(
    [
        "a.txt",
        "sub/b.txt",
        "../outside/secret.txt",
        "/etc/passwd",
        "",
        ".",
        "link/x",
        "sub/../../outside/secret.txt",
        "~/x",
        "a.txt\x00",
        "missing.txt",
    ]
) | st.text(max_size=20)
arg_values = paths | json_values
arguments = st.one_of(
    st.text(max_size=60),  # arbitrary, mostly broken JSON
    st.dictionaries(param_names, arg_values, max_size=5).map(json.dumps),
    json_values.map(json.dumps),
    st.just(""),
    st.just('{"path": "a.txt"'),
)
names = st.sampled_from(
    [
        "read_file",
        "write_file",
        "str_replace",
        "apply_patch",
        "list_files",
        "search_files",
        "explode",
        "patient",
        "READ_FILE",
        "bash ",
        "",
    ]
) | st.text(max_size=40)


def test_thousands_of_malformed_calls_never_escape(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    (ws / "sub/b.txt").write_text("gamma\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not touch\n")
    (ws / "link").symlink_to(outside)
    before = _snapshot(outside)
    dispatcher = Dispatcher(
        _registry(),
        ToolContext(workspace=Workspace(ws), env={}, output_limit=2_000),
        timeout=0.5,
    )

    @settings(
        max_examples=3000,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(call_id=st.text(max_size=10), name=names, args=arguments)
    def check(call_id: str, name: str, args: str) -> None:
        if name == "patient":
            args = json.dumps({"seconds": 0.01})
        result = dispatcher.execute(ToolCall(call_id, name, args))
        assert isinstance(result, ToolResult)
        assert result.call_id == call_id
        assert isinstance(result.content, str) and result.content
        assert len(result.content) <= 2_000
        if result.is_error:
            assert result.content.startswith("Error: ")
            assert "Traceback" not in result.content

    check()
    assert _snapshot(outside) == before


@pytest.fixture
def dispatcher(tmp_path: Path) -> Dispatcher:
    return Dispatcher(
        Registry([*builtin_tools(), explode, patient, stuck]),
        ToolContext(workspace=Workspace(tmp_path), env={}),
        timeout=1.0,
    )


def run(dispatcher: Dispatcher, name: str, args: Any) -> ToolResult:
    raw = args if isinstance(args, str) else json.dumps(args)
    return dispatcher.execute(ToolCall("c1", name, raw))


def test_unknown_tool_lists_the_real_ones(dispatcher: Dispatcher) -> None:
    result = run(dispatcher, "read_fil", {"path": "x"})
    assert result.is_error
    assert "no tool named 'read_fil'" in result.content
    assert "Did you mean 'read_file'?" in result.content
    assert "bash, read_file, write_file, str_replace, apply_patch, list_files, search_files" in (
        result.content
    )


def test_broken_json_says_where_and_shows_an_example(dispatcher: Dispatcher) -> None:
    result = run(dispatcher, "read_file", '{"path": "a.txt",}')
    assert result.is_error
    assert "not valid JSON" in result.content and "at character" in result.content
    assert '{"path": "..."}' in result.content


def test_double_encoded_and_empty_arguments_are_accepted(
    dispatcher: Dispatcher, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    result = run(dispatcher, "read_file", json.dumps(json.dumps({"path": "a.txt"})))
    assert not result.is_error and "hello" in result.content
    listing = run(dispatcher, "list_files", "")
    assert not listing.is_error and "a.txt" in listing.content


def test_missing_extra_and_mistyped_arguments_in_one_message(dispatcher: Dispatcher) -> None:
    result = run(dispatcher, "read_file", {"offset": "ten", "colour": "red"})
    assert result.is_error
    assert "unknown argument(s): 'colour'" in result.content
    assert "missing required argument(s): 'path'" in result.content
    assert "argument 'offset': expected integer" in result.content
    assert "read_file(path: string" in result.content


def test_numeric_strings_are_coerced(dispatcher: Dispatcher, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    result = run(dispatcher, "read_file", {"path": "a.txt", "offset": "2", "limit": 1.0})
    assert not result.is_error
    assert "two" in result.content and "three" not in result.content


def test_tool_errors_and_bugs_become_results(dispatcher: Dispatcher) -> None:
    assert run(dispatcher, "explode", {"n": 3}).content == "Error: model mistake 3"
    bug = run(dispatcher, "explode", {"n": 1})
    assert bug.is_error and "failed unexpectedly (RuntimeError: program bug 1)" in bug.content
    wrong = run(dispatcher, "explode", {"n": 2})
    assert wrong.is_error and "returned int" in wrong.content


def test_internal_errors_are_reported_with_traceback(tmp_path: Path) -> None:
    reported: list[str] = []
    d = Dispatcher(
        Registry([explode]),
        ToolContext(workspace=Workspace(tmp_path), env={}),
        on_internal_error=reported.append,
    )
    run(d, "explode", {"n": 4})
    assert len(reported) == 1 and "Traceback" in reported[0] and "program bug 4" in reported[0]


def test_hanging_tool_is_cancelled_then_abandoned(dispatcher: Dispatcher) -> None:
    started = time.monotonic()
    polite = run(dispatcher, "patient", {"seconds": 30})
    assert polite.is_error and "did not finish within 1 s" in polite.content
    assert time.monotonic() - started < 4
    started = time.monotonic()
    rude = run(dispatcher, "stuck", {})
    assert rude.is_error and "abandoned" in rude.content
    assert time.monotonic() - started < 6


def test_per_call_timeout_caps_the_dispatcher_limit(dispatcher: Dispatcher) -> None:
    started = time.monotonic()
    result = dispatcher.execute(ToolCall("c", "patient", json.dumps({"seconds": 30})), timeout=0.2)
    assert result.is_error and time.monotonic() - started < 3


def test_output_is_clamped(tmp_path: Path) -> None:
    d = Dispatcher(
        Registry(builtin_tools()),
        ToolContext(
            workspace=Workspace(tmp_path), env={"PATH": "/usr/bin:/bin"}, output_limit=1_000
        ),
    )
    result = run(d, "bash", {"command": "seq 100000"})
    assert len(result.content) <= 1_000
    assert result.content.startswith("1\n2\n3\n")
    assert result.content.endswith("100000\n[exit code: 0]")
    assert "cut from the middle" in result.content


def test_no_thread_is_left_behind_by_normal_calls(dispatcher: Dispatcher, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    before = threading.active_count()
    for _ in range(20):
        run(dispatcher, "read_file", {"path": "a.txt"})
    assert threading.active_count() <= before


def test_numbers_json_cannot_parse_are_a_readable_error(dispatcher: Dispatcher) -> None:
    result = run(dispatcher, "read_file", '{"path": ' + "9" * 5000 + "}")
    assert result.is_error and "not valid JSON" in result.content


def test_non_finite_numbers_are_refused(dispatcher: Dispatcher) -> None:
    for raw in ('{"command": "true", "timeout": NaN}', '{"command": "true", "timeout": Infinity}'):
        result = run(dispatcher, "bash", raw)
        assert result.is_error and "finite" in result.content
