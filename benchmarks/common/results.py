"""Where a run's figures go: ``benchmarks/results/NAME-PARAMS-DATE.json``, named by code.

``results/INDEX.md`` describes the naming: what was measured (the benchmark's name), its size
(``1M``, ``20k``; ``multi`` for several), the database, and the day of the run.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import Any

from .corpus import BENCHMARKS

RESULTS = BENCHMARKS / "results"


def size_label(n: int) -> str:
    """1000000 -> ``1M``, 20000 -> ``20k``, 600000 -> ``600k``, 1500 -> ``1500``."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def result_path(name: str, *params: str | int, day: date | None = None, ext: str = "json") -> Path:
    """``benchmarks/results/{name}-{params...}-{YYYY-MM-DD}.{ext}`` (numbers as ``size_label``)."""
    parts = [name, *(size_label(p) if isinstance(p, int) else p for p in params)]
    stamp = (day or date.today()).isoformat()
    return RESULTS / f"{'-'.join(part for part in parts if part)}-{stamp}.{ext}"


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--json FILE`` and ``--save`` (the figures to ``result_path``), declared once."""
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--save",
        action="store_true",
        help="also write the figures to benchmarks/results/NAME-PARAMS-DATE.json",
    )


def output(args: argparse.Namespace, name: str, *params: str | int) -> Path | None:
    """The file ``--json`` or ``--save`` asks for (``--json`` wins), or None."""
    if getattr(args, "json", None) is not None:
        return Path(args.json)
    if getattr(args, "save", False):
        return result_path(name, *params)
    return None


def save(path: Path | None, result: dict[str, Any]) -> None:
    """Write ``result`` as indented JSON to ``path`` (nothing when None)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
        print(f"  figures written to {path}", flush=True)
