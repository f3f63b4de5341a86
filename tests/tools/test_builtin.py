from __future__ import annotations

from tether.tools.builtin import builtin_tools
from tether.tools.registry import Registry


def test_names_order_and_argument_contract() -> None:
    signatures = {t.name: [p.name for p in t.params] for t in builtin_tools()}
    assert list(signatures) == [
        "bash",
        "read_file",
        "write_file",
        "str_replace",
        "apply_patch",
        "list_files",
        "search_files",
    ]
    assert signatures == {
        "bash": ["command", "timeout"],
        "read_file": ["path", "offset", "limit"],
        "write_file": ["path", "content"],
        "str_replace": ["path", "old_str", "new_str", "replace_all"],
        "apply_patch": ["patch"],
        "list_files": ["path", "pattern"],
        "search_files": ["pattern", "path", "glob"],
    }


def test_every_tool_and_argument_is_described_for_the_model() -> None:
    specs = Registry(builtin_tools()).specs()
    for spec in specs:
        assert 40 < len(spec.description) < 1200, spec.name
        for name, schema in spec.parameters["properties"].items():
            assert schema.get("description"), f"{spec.name}.{name} has no description"


def test_required_arguments() -> None:
    required = {s.name: s.parameters["required"] for s in Registry(builtin_tools()).specs()}
    assert required == {
        "bash": ["command"],
        "read_file": ["path"],
        "write_file": ["path", "content"],
        "str_replace": ["path", "old_str", "new_str"],
        "apply_patch": ["patch"],
        "list_files": [],
        "search_files": ["pattern"],
    }
