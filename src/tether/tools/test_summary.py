"""Pass/fail counts from the summary a test runner prints, so the model gets them
in one line instead of reading a log.

Each parser reads cleaned lines (ANSI colour stripped, a `\\r`-redrawn line reduced
to what it finally showed) and reports its counts and where its summary ended.
The runner's own parsers are tried first; when they find nothing (or the runner is
"unknown", e.g. `make test`) every parser is tried, and the summary that comes last
in the output wins: it is the one printed when the run ended.

Counting choices: expected failures (xfail, unittest expectedFailure, jest/vitest
todo) count as skipped; an unexpected pass counts as passed for pytest (it is a
pass unless the test is strict) and as failed for unittest (it fails the run).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["RUNNERS", "TestCounts", "clean_lines", "parse_summary", "strip_ansi"]

RUNNERS = ("pytest", "unittest", "npm", "cargo", "go", "unknown")

_LONGEST = 2000  # characters: a longer line is no summary, and not worth matching
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)


@dataclass(frozen=True, slots=True)
class TestCounts:
    """What a run's summary says. `unit` is "tests", or "packages" for a `go test`
    without -v, which reports only whether each package passed. `total` is None when
    the runner does not print one."""

    __test__ = False  # not a pytest test class, although its name starts with Test

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    deselected: int = 0
    total: int | None = None
    unit: str = "tests"

    def __add__(self, other: TestCounts) -> TestCounts:
        total = None if self.total is None or other.total is None else self.total + other.total
        return TestCounts(
            self.passed + other.passed,
            self.failed + other.failed,
            self.errors + other.errors,
            self.skipped + other.skipped,
            self.deselected + other.deselected,
            total,
            self.unit,
        )

    def describe(self) -> str:
        """E.g. "2 failed, 1 error, 10 passed, 1 skipped"; "no tests ran" when empty."""
        parts = [f"{self.failed} failed"] if self.failed else []
        if self.errors:
            parts.append(f"{self.errors} error{'' if self.errors == 1 else 's'}")
        if self.passed:
            parts.append(f"{self.passed} passed")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if not parts:
            parts.append("no tests ran")
        if self.deselected:
            parts.append(f"{self.deselected} deselected")
        text = ", ".join(parts)
        return f"packages: {text}" if self.unit == "packages" else text


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def clean_lines(output: str) -> list[str]:
    """The lines as a terminal would finally show them, without colour codes (an
    overlong line becomes empty)."""
    lines = []
    for raw in strip_ansi(output).split("\n"):
        line = raw.rstrip("\r")
        if "\r" in line:  # redrawn in place: the last non-empty drawing is what stayed
            line = next((part for part in reversed(line.split("\r")) if part.strip()), "")
        line = line.rstrip()
        lines.append(line if len(line) <= _LONGEST else "")
    return lines


Found = tuple[TestCounts, int]  # the counts, and the index of the summary's last line
Parser = Callable[[Sequence[str]], Found | None]

_NUMBERED = re.compile(r"^(\d+) ([a-z][a-z ]*?)$")


def _parts(text: str, sep: str) -> dict[str, int] | None:
    """{"passed": 10, "failed": 2} from "10 passed, 2 failed"; None if any part is not
    "<number> <words>"."""
    found: dict[str, int] = {}
    for part in text.split(sep):
        match = _NUMBERED.match(part.strip())
        if match is None:
            return None
        found[match.group(2)] = found.get(match.group(2), 0) + int(match.group(1))
    return found


# Matched against a line stripped of spaces and '=' (no run of spaces left to backtrack
# over: a line of spaces made the unstripped form take seconds).
_PYTEST = re.compile(
    r"(?P<body>[0-9a-z][0-9a-z, ]*?) in \d+(?:\.\d+)?\s?s(?:econds)?(?: \([0-9:.]+\))?"
)
_LONGEST = 500  # summary lines are short; longer ones are not looked at
_PYTEST_KEYS = {
    "passed",
    "failed",
    "error",
    "errors",
    "skipped",
    "deselected",
    "xfailed",
    "xpassed",
}
_WARNINGS = {"warning", "warnings"}


def _pytest(lines: Sequence[str]) -> Found | None:
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        match = (
            _PYTEST.fullmatch(line.strip().strip("=").strip()) if len(line) <= _LONGEST else None
        )
        if match is None:
            continue
        body = match.group("body")
        if body == "no tests ran":
            return TestCounts(total=0), index
        parts = _parts(body, ",")
        if not parts:
            continue
        if set(parts) <= _WARNINGS:  # nothing collected, but warnings were
            return TestCounts(total=0), index
        if not _PYTEST_KEYS.intersection(parts):
            continue
        counts = TestCounts(
            passed=parts.get("passed", 0) + parts.get("xpassed", 0),
            failed=parts.get("failed", 0),
            errors=parts.get("error", 0) + parts.get("errors", 0),
            skipped=parts.get("skipped", 0) + parts.get("xfailed", 0),
            deselected=parts.get("deselected", 0),
        )
        return counts, index
    return None


_RAN = re.compile(r"^Ran (\d+) tests? in \d+(?:\.\d+)?s$")
_UNITTEST_STATUS = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?$")


def _unittest(lines: Sequence[str]) -> Found | None:
    for index in range(len(lines) - 1, -1, -1):
        ran = _RAN.match(lines[index])
        if ran is None:
            continue
        for end in range(index + 1, min(index + 4, len(lines))):
            status = _UNITTEST_STATUS.match(lines[end])
            if status is None:
                continue
            details: dict[str, int] = {}
            for item in (status.group(2) or "").split(","):
                key, _, value = item.strip().partition("=")
                if value.isdigit():
                    details[key] = int(value)
            total = int(ran.group(1))
            failed = details.get("failures", 0) + details.get("unexpected successes", 0)
            errors = details.get("errors", 0)
            skipped = details.get("skipped", 0) + details.get("expected failures", 0)
            passed = max(total - failed - errors - skipped, 0)
            return TestCounts(passed, failed, errors, skipped, total=total), end
    return None


_JEST = re.compile(r"^Tests:\s+(?:(.*?),\s+)?(\d+) total$")


def _jest(lines: Sequence[str]) -> Found | None:
    for index in range(len(lines) - 1, -1, -1):
        match = _JEST.match(lines[index].strip())
        if match is None:
            continue
        parts = _parts(match.group(1), ",") if match.group(1) else {}
        if parts is None:
            continue
        return _js_counts(parts, int(match.group(2))), index
    return None


def _js_counts(parts: dict[str, int], total: int, errors: int = 0) -> TestCounts:
    """Jest's and vitest's words for the counts (a todo is a skip)."""
    return TestCounts(
        passed=parts.get("passed", 0),
        failed=parts.get("failed", 0),
        errors=errors,
        skipped=parts.get("skipped", 0) + parts.get("todo", 0),
        total=total,
    )


_VITEST = re.compile(r"^Tests\s+(\S.*?)\s*\((\d+)\)$")
_VITEST_ERRORS = re.compile(r"^Errors\s+(\d+) errors?")


def _vitest(lines: Sequence[str]) -> Found | None:
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].strip()
        match = _VITEST.match(line) if len(line) <= _LONGEST else None
        parts = _parts(match.group(1), "|") if match else None
        if match is None or parts is None:
            continue
        errors = 0
        for later in lines[index + 1 : index + 6]:
            found = _VITEST_ERRORS.match(later.strip())
            if found:
                errors = int(found.group(1))
        return _js_counts(parts, int(match.group(2)), errors), index
    return None


_MOCHA_PASSING = re.compile(r"^(\d+) passing \(\d+(?:\.\d+)?(?:ms|s|m|h)\)$")
_MOCHA_OTHER = re.compile(r"^(\d+) (pending|failing)$")


def _mocha(lines: Sequence[str]) -> Found | None:
    for index in range(len(lines) - 1, -1, -1):
        match = _MOCHA_PASSING.match(lines[index].strip())
        if match is None:
            continue
        found = {"passing": int(match.group(1))}
        end = index
        for later in range(index + 1, min(index + 3, len(lines))):
            other = _MOCHA_OTHER.match(lines[later].strip())
            if other is None:
                break
            found[other.group(2)] = int(other.group(1))
            end = later
        counts = TestCounts(found["passing"], found.get("failing", 0), 0, found.get("pending", 0))
        return counts, end
    return None


_NODE = re.compile(r"^(?:#|ℹ) (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$")
_NODE_COUNT = re.compile(r"^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|todo) (\d+)$")


def _node(lines: Sequence[str]) -> Found | None:
    """node --test: "# tests 3" ... "# fail 1" (TAP) or "ℹ tests 3" (spec reporter)."""
    index = len(lines) - 1
    while index >= 0:
        if _NODE.match(lines[index].strip()) is None:
            index -= 1
            continue
        end = index
        found: dict[str, int] = {}
        while index >= 0 and _NODE.match(lines[index].strip()) is not None:
            count = _NODE_COUNT.match(lines[index].strip())
            if count is not None:
                found.setdefault(count.group(1), int(count.group(2)))
            index -= 1
        if "tests" in found and "pass" in found:
            counts = TestCounts(
                passed=found["pass"],
                failed=found.get("fail", 0) + found.get("cancelled", 0),
                skipped=found.get("skipped", 0) + found.get("todo", 0),
                total=found["tests"],
            )
            return counts, end
    return None


_CARGO = re.compile(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; "
    r"(\d+) measured; (\d+) filtered out"
)
_NEXTEST = re.compile(r"^Summary \[[^\]]*\]\s+(\d+) tests? run: (.+)$")


def _cargo(lines: Sequence[str]) -> Found | None:
    """cargo test prints one result per test binary (and the doc-tests): summed.
    cargo nextest prints one "Summary" line."""
    total: TestCounts | None = None
    last = -1
    for index, line in enumerate(lines):
        match = _CARGO.match(line.strip())
        if match is not None:
            passed, failed, ignored, _, filtered = map(int, match.groups())
            found = TestCounts(passed, failed, 0, ignored, filtered)
            total, last = (found if total is None else total + found), index
            continue
        nextest = _NEXTEST.match(line.strip())
        if nextest is not None:
            words = re.sub(r"\s*\([^)]*\)", "", nextest.group(2))  # "2 passed (1 flaky)"
            parts = _parts(words, ",") or {}
            failed = parts.get("failed", 0) + parts.get("timed out", 0)
            skipped = parts.get("skipped", 0)
            found = TestCounts(parts.get("passed", 0), failed, 0, skipped)
            total, last = (found if total is None else total + found), index
    return (total, last) if total is not None else None


_GO_TEST = re.compile(r"^--- (PASS|FAIL|SKIP): ")
_GO_OK = re.compile(r"^ok {2}\t\S+")
_GO_FAIL = re.compile(r"^FAIL\t(\S+)(.*)$")


def _go(lines: Sequence[str]) -> Found | None:
    """Top-level `--- PASS/FAIL/SKIP` lines (subtests are indented, not counted) when
    run with -v; else the `ok` / `FAIL` line of each package."""
    tests = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    verbose = False
    ok_packages = failed_packages = broken_packages = 0
    last = -1
    for index, line in enumerate(lines):
        test = _GO_TEST.match(line)
        if test is not None:
            tests[test.group(1)] += 1
            verbose = verbose or test.group(1) != "FAIL"
            last = index
        elif line.startswith("=== RUN "):
            verbose = True
        elif _GO_OK.match(line):
            ok_packages += 1
            last = index
        elif (package := _GO_FAIL.match(line)) is not None:
            failed_packages += 1
            broken = "[build failed]" in package.group(2) or "[setup failed]" in package.group(2)
            broken_packages += broken
            last = index
    if last < 0:
        return None
    if verbose or not (ok_packages or failed_packages):
        found = TestCounts(tests["PASS"], tests["FAIL"], broken_packages, tests["SKIP"])
        return found, last
    return TestCounts(ok_packages, failed_packages, unit="packages"), last


_FAMILIES: dict[str, tuple[Parser, ...]] = {
    "pytest": (_pytest,),
    "unittest": (_unittest,),
    "npm": (_jest, _vitest, _mocha, _node),
    "cargo": (_cargo,),
    "go": (_go,),
}
_ALL: tuple[Parser, ...] = (_pytest, _unittest, _jest, _vitest, _mocha, _node, _cargo, _go)


def parse_summary(output: str, runner: str) -> TestCounts | None:
    """The counts from the last summary in `output` of `runner`'s kind (see RUNNERS),
    else from any runner's summary; None when there is none."""
    lines = clean_lines(output)
    family = _FAMILIES.get(runner, ())
    for parsers in (family, tuple(p for p in _ALL if p not in family)):
        found = [result for parser in parsers if (result := parser(lines)) is not None]
        if found:
            return max(found, key=lambda item: item[1])[0]
    return None
