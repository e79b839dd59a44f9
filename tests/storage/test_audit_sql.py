"""The docs' "Reading the tables with SQL" recipes, run on every dialect against known data."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore import to_hex
from simstore.store import SimStore

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "sql.md"
_RECIPE = re.compile(r"<!-- sql:([\w-]+)(?::(\w+))? -->\s*```sql\n(.*?)```", re.DOTALL)


def recipes(dialect: str) -> dict[str, str]:
    """Recipe name -> SQL for this dialect (a dialect-specific variant wins over a generic one)."""
    found: dict[str, str] = {}
    for name, variant, sql in _RECIPE.findall(RECIPES.read_text(encoding="utf-8")):
        if variant in ("", dialect):
            found[name] = sql.strip().rstrip(";")
    return found


def test_recipes_answer_the_audit_questions(engine: Engine) -> None:
    # the recipes ask about the namespace 'default'; a server's test database is shared by the
    # tests of a worker, some of which add to 'default' too, so this test's namespace is its own
    # and the recipes are pointed at it
    namespace = f"audit-{uuid.uuid4().hex[:8]}"
    store = SimStore(engine, namespace=namespace, auto_upgrade=True, max_distance=3)
    day1 = datetime(2030, 5, 1, 9, 0)
    day2 = day1 + timedelta(days=1)
    high = 0xF0F0_0000_0000_0001  # >= 2**63: stored as a negative BIGINT
    store.add(key="kept-high", fingerprint=high, at=day1)
    store.add(key="kept-low", fingerprint=0x0123_4567_89AB_CDEF, at=day1)
    store.add(key="dup-1", fingerprint=high ^ 0b101, at=day1 + timedelta(hours=1))
    store.add(key="dup-2", fingerprint=high ^ 0b1, at=day2)
    store.add(key="dup-3", fingerprint=0x0123_4567_89AB_CDEF ^ (1 << 40), at=day2)

    sql = recipes(engine.dialect.name)
    assert {"decisions", "rejected", "per-day", "clusters", "hex"} <= set(sql)
    for name, recipe in sql.items():
        assert "n.name = 'default'" in recipe, name
        sql[name] = recipe.replace("n.name = 'default'", f"n.name = '{namespace}'")
    with engine.connect() as connection:
        decided = connection.execute(sa.text(sql["decisions"])).all()
        rejected = connection.execute(sa.text(sql["rejected"])).all()
        per_day = connection.execute(sa.text(sql["per-day"])).all()
        clusters = connection.execute(sa.text(sql["clusters"])).all()
        hexes = connection.execute(sa.text(sql["hex"])).all()

    assert [(row[0], row[1], row[2]) for row in decided] == [
        ("kept-high", "kept", None),
        ("kept-low", "kept", None),
        ("dup-1", "duplicate", "kept-high"),
        ("dup-2", "duplicate", "kept-high"),
        ("dup-3", "duplicate", "kept-low"),
    ]
    assert [(row[0], row[1], row[2]) for row in rejected] == [
        ("dup-1", "kept-high", 2),
        ("dup-2", "kept-high", 1),
        ("dup-3", "kept-low", 1),
    ]
    assert all(str(row[4]).startswith("2030-05-01 09:00:00") for row in rejected)  # sqlite: text
    assert [(str(row[0]), row[1]) for row in per_day] == [("2030-05-01", 1), ("2030-05-02", 2)]
    assert [(row[0], row[1]) for row in clusters] == [("kept-high", 3), ("kept-low", 2)]
    assert dict((row[0], row[1]) for row in hexes) == {
        "kept-high": to_hex(high),
        "kept-low": to_hex(0x0123_4567_89AB_CDEF),
    }
