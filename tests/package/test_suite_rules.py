"""The suite's own rules: an optional dependency a test needs is imported with
``tests.conftest.need_module``, which skips on a developer's machine without it but fails in CI
(``SIMSTORE_REQUIRE_SERVERS=1``, where ``.[test]`` installs every extra), so a missing extra can
never turn a CI run green by skipping; ``pytest.importorskip`` would skip there too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import need_module

TESTS = Path(__file__).resolve().parents[1]
MISSING = "simstore_no_such_module"


def test_no_test_skips_on_a_missing_module_by_importorskip() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bimportorskip\s*\(", line)
    ]
    assert found == [], "use tests.conftest.need_module, which fails in CI instead of skipping"


def test_need_module_returns_the_module() -> None:
    assert need_module("json", "none") is __import__("json")


def test_a_missing_module_skips_on_a_developers_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMSTORE_REQUIRE_SERVERS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{MISSING} is not installed"):
        need_module(MISSING, "spark")


def test_a_missing_module_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMSTORE_REQUIRE_SERVERS", "1")
    with pytest.raises(pytest.fail.Exception, match=f"the spark extra required in CI: {MISSING}"):
        need_module(MISSING, "spark")


def test_a_wait_for_a_process_or_thread_is_bounded_by_hang_only() -> None:
    # a fixed deadline of a minute or more is a bet on the machine's pace, and a loaded one loses
    # it; waits are for a condition, bounded by tests.conftest.HANG, which only a hang reaches
    deadline = re.compile(r"(?:\btimeout\s*=\s*|\.join\(\s*|\.wait\(\s*)(\d+(?:\.\d+)?)\b")
    found = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in deadline.finditer(line)
        if float(match.group(1)) >= 60
    ]
    assert found == [], "bound a wait by tests.conftest.HANG"
