"""The shipped examples: the corpus is what its generator writes, and the Python tour runs."""

from __future__ import annotations

import json
import runpy
from collections import Counter
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_corpus_is_what_the_generator_writes() -> None:
    generator = runpy.run_path(str(EXAMPLES / "make_corpus.py"))
    shipped = (EXAMPLES / "corpus.jsonl").read_text(encoding="utf-8")
    assert generator["render"](generator["build"]()) == shipped, (
        "examples/corpus.jsonl is stale: run python examples/make_corpus.py"
    )


def test_corpus_shape() -> None:
    path = EXAMPLES / "corpus.jsonl"
    assert path.stat().st_size < 2_000_000
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({record["id"] for record in records}) == len(records) > 2000
    kinds = Counter(
        (record["lang"], "short" if len(record["text"]) < 140 else "long")
        for record in records
        if len(record["text"]) < 140 or len(record["text"]) > 500
    )
    assert len(kinds) == 4 and min(kinds.values()) > 200  # zh/en x short/long, nothing between
    assert sum(kinds.values()) == len(records)
    sizes = Counter(Counter(record["group"] for record in records).values())
    assert sizes[1] > 0 and sum(count for size, count in sizes.items() if size > 1) > 300


def test_python_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "python_api.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "article-2: duplicate of article-1" in printed
    assert "zh-2: duplicate of zh-1" in printed
