"""The report's counts per day and per measure, read back from decisions made here (a fast test
beside the slow rendered ones of ``test_report.py``).

Expected values come from the decisions ``add`` returned: a day's kept texts and duplicates are
counted from them, and a measure's lowest and highest scores are the scores the matches carried.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from simstore.io import report as reporting
from tests.conftest import StoreFactory

DAY_ONE = datetime(2030, 3, 1, 8, tzinfo=timezone.utc)
DAY_TWO = DAY_ONE + timedelta(days=1)
KEPT = (
    "The night ferry to Harwick leaves at ten from pier four; tickets are sold at the kiosk",
    "Our library opens late on Thursdays, with the reading room staying open until nine",
)
COPIES = (  # each an edited copy of KEPT[0] (a word added, one dropped): duplicates
    "The night ferry to Harwick leaves at ten from pier four; tickets are sold at the kiosk now",
    "The night ferry to Harwick leaves at ten from pier four; tickets are sold at kiosk",
)


def test_the_days_and_measures_count_what_add_decided(make_store: StoreFactory) -> None:
    store = make_store()
    decided = [store.add(KEPT[0], key="k0", at=DAY_ONE)]
    decided += [store.add(t, key=f"c{n}", at=DAY_ONE) for n, t in enumerate(COPIES)]
    decided.append(store.add(KEPT[1], key="k1", at=DAY_TWO))  # a day without a duplicate
    duplicates = [d.duplicate_of for d in decided if d.duplicate_of is not None]
    assert [d.inserted for d in decided] == [True, False, False, True]

    report = reporting.gather(
        store.scope, near_misses=store.near_misses, now=DAY_TWO + timedelta(hours=1)
    )
    assert [(day.day, day.kept, day.duplicates) for day in report.days] == [
        ("2030-03-01", 1, 2),
        ("2030-03-02", 1, 0),
    ]
    scores = [match.score for match in duplicates if match.score is not None]
    assert len(set(scores)) == 2  # two scores: the lowest and the highest tell them apart
    (measure,) = {match.measure for match in duplicates}
    assert [(m.measure, m.duplicates) for m in report.measures] == [(measure, 2)]
    assert (report.measures[0].lowest, report.measures[0].highest) == (min(scores), max(scores))
