"""Make the frozen SQLite database of the current schema revision for test_upgrade_frozen.py.

Run it from the repository root, once per released schema revision:

    python tests/data/make_frozen.py

It writes ``tests/data/frozen/<revision>.sqlite``, a tiny database made by this simstore (committed
to git; ``.sqlite`` because ``.gitignore`` leaves out ``*.db``), and ``<revision>.json``, the
decisions it holds. Later versions of simstore open and upgrade a copy of every frozen file in the
test and check that the old rows still match and that new adds work.

A frozen file stands for what a released simstore wrote, so an existing one is never overwritten
(``--force`` replaces it, for a revision that has not been released yet).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simstore import __version__, to_hex  # noqa: E402
from simstore.storage import migrate  # noqa: E402
from simstore.store import SimStore  # noqa: E402

FROZEN = Path(__file__).resolve().parent / "frozen"
AT = datetime(2024, 3, 1, 12, 0, 0)

LONG_ZH = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
LONG_ZH_EDIT = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花！明天可能下雨，出门记得带伞"
LONG_EN = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)
LONG_EN_EDIT = LONG_EN.replace("Monday", "Tuesday")
MIXED = "新版 app 发布了 version 2.0，修复了 login 页面的 bug，并且支持 dark mode 和离线缓存。"
OTHER = "Quarterly revenue grew in every region except the north-east, where two stores closed."

# (namespace, preset, keep, items): each item is (key, text or fingerprint, minutes after AT)
NAMESPACES: list[tuple[str, str, str | None, list[tuple[str, str | int, int]]]] = [
    (
        "default",
        "default",
        None,
        [
            ("zh", LONG_ZH, 0),
            ("zh-edit", LONG_ZH_EDIT, 1),
            ("en", LONG_EN, 2),
            ("en-edit", LONG_EN_EDIT, 3),
            ("mixed", MIXED, 4),
            ("other", OTHER, 5),
            ("fp-zero", 0, 6),
            ("fp-high", 0xFEDC_BA98_7654_3210, 7),  # >= 2**63: stored as a negative BIGINT
            ("fp-high-near", 0xFEDC_BA98_7654_3211, 8),
            ("fp-max", (1 << 64) - 1, 9),
            ("x'; DROP TABLE simstore_fingerprints; --", 0x0F0F_0F0F_0F0F_0F0F, 10),
        ],
    ),
    (
        "legacy pypi",
        "pypi-simhash",
        "2d",
        [
            ("p-en", LONG_EN, 0),
            ("p-en-edit", LONG_EN_EDIT, 60),
            ("p-en-shouted", LONG_EN.upper() + "!", 90),
            ("p-zh", LONG_ZH, 120),
            ("p-old", OTHER, -5 * 24 * 60),  # older than the window when the others came
            ("p-old-again", OTHER, 150),  # so this one is kept again
        ],
    ),
]


def make(force: bool = False) -> Path:
    revision = migrate.head()
    database = FROZEN / f"{revision}.sqlite"
    manifest = database.with_suffix(".json")
    if database.exists() and not force:
        print(f"{database} exists: frozen files are never regenerated (--force replaces it)")
        return database
    FROZEN.mkdir(exist_ok=True)
    for path in (database, manifest, *FROZEN.glob(f"{revision}.sqlite-*")):
        path.unlink(missing_ok=True)
    url = f"sqlite:///{database}"
    migrate.upgrade(url)
    described: list[dict[str, Any]] = []
    for name, preset, keep, items in NAMESPACES:
        recorded = []
        with SimStore(url, namespace=name, preset=preset, keep=keep) as store:
            for key, content, minutes in items:
                at = AT + timedelta(minutes=minutes)
                if isinstance(content, int):
                    decision = store.add(key=key, fingerprint=content, at=at)
                else:
                    decision = store.add(content, key=key, at=at)
                match = decision.duplicate_of
                recorded.append(
                    {
                        "key": key,
                        "text": content if isinstance(content, str) else None,
                        "fingerprint": to_hex(decision.fingerprint),
                        "at": at.isoformat(),
                        "inserted": decision.inserted,
                        "duplicate_of": match.key if match else None,
                    }
                )
            label = store.preset.label
        described.append({"name": name, "preset": label, "keep": keep, "items": recorded})
    manifest.write_text(
        json.dumps(
            {"revision": migrate.current(url), "simstore": __version__, "namespaces": described},
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {database} ({database.stat().st_size:,} bytes) and {manifest.name}")
    return database


if __name__ == "__main__":
    make(force="--force" in sys.argv[1:])
