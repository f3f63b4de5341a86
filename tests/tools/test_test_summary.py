"""Counts from the summaries real runners print, colour codes and all."""

from __future__ import annotations

import pytest

from tether.tools.test_summary import TestCounts, clean_lines, parse_summary

C = TestCounts

PYTEST_COLOUR = (
    "\x1b[31mFAILED\x1b[0m tests/test_a.py::\x1b[1mtest_bad\x1b[0m - assert 1 == 2\n"
    "\x1b[31m========== \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m, "
    "\x1b[33m1 skipped\x1b[0m, \x1b[33m1 xfailed\x1b[0m, \x1b[31m\x1b[1m1 error\x1b[0m"
    "\x1b[31m in 0.86s\x1b[0m\x1b[31m ==========\x1b[0m\n"
)

PYTEST_CASES = [
    ("=== 2 failed, 10 passed, 1 skipped, 1 error in 0.42s ===", C(10, 2, 1, 1)),
    (PYTEST_COLOUR, C(1, 1, 1, 2)),
    ("....F\nFAILED t.py::x\n2 failed, 10 passed in 0.42s\n", C(10, 2)),
    ("=" * 28 + " no tests ran in 0.69s " + "=" * 29, C(total=0)),
    ("5 deselected in 0.80s", C(deselected=5)),
    ("=== 1 passed, 4 deselected in 0.78s ===", C(1, deselected=4)),
    ("=" * 31 + " 1 error in 1.32s " + "=" * 31, C(errors=1)),
    ("!!! Interrupted: 2 errors during collection !!!\n=== 2 errors in 0.1s ===", C(errors=2)),
    ("=== 3 passed, 2 warnings in 12.01s (0:00:12) ===", C(3)),
    ("=== 1 xpassed, 1 passed in 0.02s ===", C(2)),
    ("== 4 passed in 0.12 seconds ==", C(4)),  # pytest < 5
    ("=== 2 warnings in 0.01s ===", C(total=0)),  # nothing collected
    # the last summary wins: e.g. a run that reruns, or a log that quotes an old one
    ("=== 1 failed in 0.1s ===\nrerunning\n=== 1 passed in 0.1s ===\n", C(1)),
    ("collected 0 items\n", None),
    ("Ran 3 tests in 0.1s\n\nOK\n", None),  # pytest's family first, then the others...
]


@pytest.mark.parametrize(("output", "expected"), PYTEST_CASES)
def test_pytest(output: str, expected: TestCounts | None) -> None:
    found = parse_summary(output, "pytest")
    if expected is None and "Ran" in output:
        assert found == C(3, total=3)  # ...so a unittest summary is still found
    else:
        assert found == expected


UNITTEST_CASES = [
    (
        "....\n----------------------------------------------------------------------\n"
        "Ran 4 tests in 0.001s\n\nOK\n",
        C(4, total=4),
    ),
    ("Ran 1 test in 0.005s\n\nOK\n", C(1, total=1)),
    (
        "Ran 6 tests in 0.001s\n\n"
        "FAILED (failures=1, errors=1, skipped=1, expected failures=1, unexpected successes=1)\n",
        C(1, 2, 1, 2, total=6),
    ),
    ("Ran 5 tests in 0.1s\n\nOK (skipped=2)\n", C(3, skipped=2, total=5)),
    ("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n", C(total=0)),
    ("Ran 0 tests in 0.000s\n\nOK\n", C(total=0)),
    ("Ran 3 tests in 0.1s\n", None),  # killed before the verdict
]


@pytest.mark.parametrize(("output", "expected"), UNITTEST_CASES)
def test_unittest(output: str, expected: TestCounts | None) -> None:
    assert parse_summary(output, "unittest") == expected


NPM_CASES = [
    # jest
    (
        "Test Suites: 1 failed, 1 passed, 2 total\n"
        "Tests:       1 failed, 4 passed, 5 total\nSnapshots:   0 total\nTime:        1.2 s\n",
        C(4, 1, total=5),
    ),
    ("Tests:       2 skipped, 1 todo, 4 passed, 7 total\n", C(4, 0, 0, 3, total=7)),
    ("Tests:       0 total\n", C(total=0)),
    (
        "\x1b[1mTests:       \x1b[22m\x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m, "
        "\x1b[1m\x1b[32m2 passed\x1b[39m\x1b[22m, 3 total\n",
        C(2, 1, total=3),
    ),
    # vitest
    (
        " Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 4 passed (5)\n"
        "   Start at  10:00:00\n   Duration  1.02s\n",
        C(4, 1, total=5),
    ),
    ("      Tests  4 passed | 1 skipped (5)\n", C(4, skipped=1, total=5)),
    ("      Tests  2 passed (2)\n     Errors  1 error\n", C(2, errors=1, total=2)),
    # mocha
    (
        "  ✔ adds\n  1) divides\n\n  4 passing (12ms)\n  1 pending\n  1 failing\n\n  1) divides:\n",
        C(4, 1, 0, 1),
    ),
    ("  0 passing (2ms)\n", C()),
    ("  12 passing (1s)\n", C(12)),
    # node --test, TAP and spec reporters
    (
        "1..3\n# tests 3\n# suites 0\n# pass 1\n# fail 1\n# cancelled 0\n# skipped 1\n"
        "# todo 0\n# duration_ms 114.891744\n",
        C(1, 1, 0, 1, total=3),
    ),
    (
        "ℹ tests 5\nℹ suites 1\nℹ pass 5\nℹ fail 0\nℹ cancelled 0\nℹ skipped 0\nℹ todo 0\n"
        "ℹ duration_ms 52.1\n",
        C(5, total=5),
    ),
    ("> pkg@1.0.0 test\n> jest\n\nsh: 1: jest: not found\n", None),
]


@pytest.mark.parametrize(("output", "expected"), NPM_CASES)
def test_javascript_runners(output: str, expected: TestCounts | None) -> None:
    assert parse_summary(output, "npm") == expected


CARGO_PASS = """\
     Running unittests src/lib.rs (target/debug/deps/cr-f73a538893013b88)

running 3 tests
test tests::ig ... ignored
test tests::ok ... ok
test tests::bad ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests cr

running 1 test
test src/lib.rs - one (line 1) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""

CARGO_CASES = [
    (CARGO_PASS, C(3, skipped=1)),
    (
        "failures:\n    tests::bad\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; "
        "0 measured; 2 filtered out; finished in 0.16s\n\n"
        "error: test failed, to rerun pass `--lib`\n",
        C(1, 1, 0, 1, 2),
    ),
    ("error[E0425]: cannot find value `x` in this scope\nerror: could not compile `cr`\n", None),
    ("     Summary [   0.006s] 3 tests run: 2 passed, 1 failed, 0 skipped\n", C(2, 1)),
    (
        "     Summary [   1.2s] 4 tests run: 3 passed (1 flaky), 1 timed out, 2 skipped\n",
        C(3, 1, 0, 2),
    ),
]


@pytest.mark.parametrize(("output", "expected"), CARGO_CASES)
def test_cargo(output: str, expected: TestCounts | None) -> None:
    assert parse_summary(output, "cargo") == expected


GO_VERBOSE = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestDiv
=== RUN   TestDiv/zero
    div_test.go:12: want error
--- FAIL: TestDiv (0.00s)
    --- FAIL: TestDiv/zero (0.00s)
=== RUN   TestSlow
    slow_test.go:8: skipping in short mode
--- SKIP: TestSlow (0.00s)
FAIL
FAIL\texample.com/calc\t0.003s
=== RUN   TestParse
--- PASS: TestParse (0.00s)
PASS
ok  \texample.com/calc/parse\t0.002s
FAIL\texample.com/calc/broken [build failed]
FAIL
"""

GO_QUIET = """\
--- FAIL: TestDiv (0.00s)
    div_test.go:12: want error
FAIL
FAIL\texample.com/calc\t0.003s
ok  \texample.com/calc/parse\t(cached)
?   \texample.com/calc/cmd\t[no test files]
ok  \texample.com/calc/util\t0.002s [no tests to run]
FAIL
"""

GO_CASES = [
    (GO_VERBOSE, C(2, 1, 1, 1)),
    (GO_QUIET, C(2, 1, unit="packages")),
    ("ok  \texample.com/calc\t0.002s\n", C(1, unit="packages")),
    (
        "# example.com/calc\n./calc.go:3:1: syntax error\nFAIL\texample.com/calc [build failed]\n"
        "FAIL\n",
        C(0, 1, unit="packages"),
    ),
    ("go: cannot find main module\n", None),
]


@pytest.mark.parametrize(("output", "expected"), GO_CASES)
def test_go(output: str, expected: TestCounts | None) -> None:
    assert parse_summary(output, "go") == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (PYTEST_COLOUR, C(1, 1, 1, 2)),
        (CARGO_PASS, C(3, skipped=1)),
        (GO_VERBOSE, C(2, 1, 1, 1)),
        ("Tests:       1 failed, 4 passed, 5 total\n", C(4, 1, total=5)),
        (
            "make: Entering directory\nRan 2 tests in 0.1s\n\nOK\nmake: Leaving directory\n",
            C(2, total=2),
        ),
        # two runners in one command: the summary printed last describes the end
        (
            "test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
            "=== 1 failed, 2 passed in 0.1s ===\n",
            C(2, 1),
        ),
        ("all good\n", None),
        ("", None),
    ],
)
def test_unknown_runner_is_recognised_from_the_output(
    output: str, expected: TestCounts | None
) -> None:
    assert parse_summary(output, "unknown") == expected


def test_the_runners_own_summary_comes_before_a_later_one_of_another_kind() -> None:
    output = "=== 1 failed, 2 passed in 0.1s ===\n  3 passing (4ms)\n"
    assert parse_summary(output, "pytest") == C(2, 1)
    assert parse_summary(output, "npm") == C(3)


def test_lines_redrawn_with_carriage_returns_count_as_they_ended() -> None:
    output = "Tests: 1 passed, 1 total\rTests:       2 passed, 2 total\r\n"
    assert clean_lines(output) == ["Tests:       2 passed, 2 total", ""]
    assert parse_summary(output, "npm") == C(2, total=2)


def test_hyperlinks_and_titles_are_stripped() -> None:
    output = "\x1b]0;title\x07\x1b]8;;file:///x\x1b\\=== 3 passed in 0.1s ===\x1b]8;;\x1b\\\n"
    assert parse_summary(output, "pytest") == C(3)


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        (C(10, 2, 1, 1), "2 failed, 1 error, 10 passed, 1 skipped"),
        (C(12), "12 passed"),
        (C(0, 1), "1 failed"),
        (C(errors=2), "2 errors"),
        (C(total=0), "no tests ran"),
        (C(deselected=5), "no tests ran, 5 deselected"),
        (C(1, deselected=4), "1 passed, 4 deselected"),
        (C(3, 1, unit="packages"), "packages: 1 failed, 3 passed"),
    ],
)
def test_describe(counts: TestCounts, text: str) -> None:
    assert counts.describe() == text


def test_garbage_never_raises() -> None:
    junk = "\x1b[" * 1000 + "Ran x tests\n" + "=" * 10_000 + "\n\r\r\n" + "Tests:  , total\n"
    assert parse_summary(junk, "unknown") is None


def test_an_overlong_line_is_no_summary() -> None:
    assert parse_summary("=" * 5000 + " 1 passed in 0.1s ===\n", "pytest") is None
    assert parse_summary("=== 1 passed in 0.1s ===" + " " * 5000 + "\n", "pytest") == C(1)
    assert parse_summary(" " * 200_000 + "\n=== 1 passed in 0.1s ===\n", "pytest") == C(1)
