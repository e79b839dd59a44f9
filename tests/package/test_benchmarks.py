"""The benchmarks' home (``benchmarks/``): every command name runs a module of the package, no
benchmark writes simstore's tables by hand or reaches another script through ``sys.path``, result
files are named by code, and the shared fills write what ``add_many`` writes.

The benchmark modules are imported with ``importlib`` (they are not part of the typed package).
"""

from __future__ import annotations

import importlib
import re
import sqlite3
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from simstore.policy.policies import SimHashOnly
from simstore.store import SimStore

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

# every name `python -m benchmarks NAME` took when the benchmarks were one script a name: the docs
# and benchmarks/results/INDEX.md name them, so each must still run
NAMES = (
    "fingerprint", "peers", "store", "add-many", "open", "planner", "verification", "versions",
    "window", "window-default", "window-server", "writers", "tail", "footprint", "purge",
    "soak-stores", "dataset", "quality", "presets", "candidates", "layouts", "traditional",
    "spark", "planted",
)  # fmt: skip


def bench(name: str) -> Any:
    return importlib.import_module(f"benchmarks.{name}")


def test_every_command_name_runs_a_module_with_main() -> None:
    entries = bench("__main__").BENCHMARKS
    assert set(NAMES) <= set(entries)
    for name in NAMES:
        module_name, _first, _what = entries[name]
        assert callable(bench(module_name).main), name
    listing = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in NAMES:
        assert re.search(rf"^  {re.escape(name)} ", listing, re.M), name


def test_at_most_twelve_top_level_modules() -> None:
    top = [
        path.name
        for path in BENCHMARKS.iterdir()
        if (path.suffix == ".py" and not path.name.startswith("__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    ]
    assert len(top) <= 12, sorted(top)


def _sources() -> list[Path]:
    return sorted(path for path in BENCHMARKS.rglob("*.py") if "data" not in path.parts)


def test_no_benchmark_writes_simstores_tables_by_hand() -> None:
    # fills go through SimStore.add_many or SimStore.load; a floor writes tables of its own
    writes = re.compile(r"(INSERT\s+INTO|COPY|UPDATE|DELETE\s+FROM)\s+\"?simstore_", re.I)
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if writes.search(line)
    ]
    assert not found


def test_no_benchmark_reaches_another_through_sys_path() -> None:
    # only the child step that runs another checkout's simstore sets its own path
    allowed = BENCHMARKS / "common" / "checkouts.py"
    found = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if path != allowed and re.search(r"sys\.path\.(insert|append)", path.read_text("utf-8"))
    ]
    assert not found


def test_result_file_names_are_made_by_code() -> None:
    results = bench("common.results")
    day = date(2026, 12, 5)
    expected = BENCHMARKS / "results" / "window-1M-sqlite-2026-12-05.json"
    assert results.result_path("window", 1_000_000, "sqlite", day=day) == expected
    assert results.result_path("window-keepall", 10_000_000, "postgresql", day=day).name == (
        "window-keepall-10M-postgresql-2026-12-05.json"
    )
    # sizes as the results folder writes them; an empty part is left out
    assert results.result_path("spark", "", 3000, "local", day=day).name == (
        "spark-3k-local-2026-12-05.json"
    )
    assert [results.size_label(n) for n in (20_000, 600_000, 1_500, 999, 1_000)] == [
        "20k", "600k", "1500", "999", "1k",
    ]  # fmt: skip


def test_the_window_clock_splits_the_days_at_half() -> None:
    corpus = bench("common.corpus")
    day2 = corpus.DAY1 + timedelta(days=1)
    for n in (20, 3_000, 20_000, 1_000_000):
        assert corpus.moment(0, n) == corpus.DAY1
        assert corpus.moment(n // 2 - 1, n) < day2 <= corpus.moment(n // 2, n), n
        assert corpus.moment(n - 1, n) < corpus.DAY1 + timedelta(days=2)
    # texts of one step share a moment (one load call), the next step moves on
    size = corpus.step(20_000)
    assert corpus.moment(size - 1, 20_000) == corpus.moment(0, 20_000) < corpus.moment(size, 20_000)


def test_the_planted_pairs_are_the_window_workloads_planted_texts(monkeypatch: Any) -> None:
    """``planted`` explains the window's figures only if it draws the workload's own planted
    texts: its near-duplicates are the ones ``corpus.workload`` marks planted (the reference), in
    a pool of a few sentences instead of the dataset's."""
    corpus = bench("common.corpus")
    planted = bench("window.planted")
    sentences = {
        "en": [f"Sentence number {word} says something plain." for word in "abcdefghij"],
        "zh": ["这是一个普通的句子。", "今天的天气很好。", "我们一起去公园散步吧。"],
    }
    monkeypatch.setattr(corpus, "SENTENCES", sentences)
    monkeypatch.setattr(corpus, "TEMPLATES", [("en", 120), ("zh", 40), ("en", 300)])
    for salt in (0, 2):
        workload = corpus.workload(50, 40, salt)
        pairs = planted.planted_pairs(50, 40, salt)
        assert len(pairs) == 20
        assert sorted(near for _original, near in pairs) == sorted(
            text for text, was_planted in workload if was_planted
        )
        # each pair's first text is a filled text (one of the 50), its second made from it
        filled = {corpus.compose(i) for i in range(50)}
        assert all(original in filled for original, _near in pairs)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(path)
    try:
        return (
            connection.execute(
                "SELECT key, fp, b0, b1, b2, b3, added_at, part, signature, simhash_indexed "
                "FROM simstore_fingerprints ORDER BY key"
            ).fetchall()
            + connection.execute("SELECT key FROM simstore_decisions").fetchall()
        )
    finally:
        connection.close()


def test_the_fingerprint_fill_writes_what_add_many_writes(tmp_path: Path) -> None:
    fills = bench("common.fills")
    n, start, span = 2_500, datetime(2026, 3, 1), timedelta(days=2)
    # random 64-bit values: none within 3 bits of another, so add_many keeps every one
    values = np.random.default_rng(7).integers(0, 1 << 64, size=n, dtype=np.uint64)
    span_us = int(span.total_seconds() * 1_000_000)
    # the reference: add_many with each row's moment, row i at start + span * i / n rounded down
    # to steps of 1,000 rows (the load's rule, written out here)
    items = [
        {"key": f"k{i}", "fingerprint": int(value),
         "at": start + timedelta(microseconds=(i - i % 1000) * span_us // n)}
        for i, value in enumerate(values.tolist())
    ]  # fmt: skip
    with SimStore(f"sqlite:///{tmp_path / 'added.db'}", policy=SimHashOnly()) as store:
        kept = sum(decision.inserted for decision in store.add_many(items))
    with SimStore(f"sqlite:///{tmp_path / 'loaded.db'}", policy=SimHashOnly()) as store:
        written = fills.load_fingerprints(store, values, start=start, span=span)
    assert kept == written == n
    assert _rows(tmp_path / "loaded.db") == _rows(tmp_path / "added.db")
