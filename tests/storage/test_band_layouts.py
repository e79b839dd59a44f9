"""The default policy's band layout (24 bands of 3 values since recipe 2) in a real store: a short
near-duplicate at the confirm rule's threshold is found; purge and remove take every band key
along; a namespace recorded with recipe 1 keeps its 16 x 4 keys and its decisions."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from simstore.errors import InvalidInput
from simstore.io import handover
from simstore.policy import batch
from simstore.policy.policies import MinHashVerification, policy_from_recipe
from simstore.storage.schema import namespaces
from simstore.store import SimStore
from simstore.text import minhash
from tests._workers import stored_band_keys
from tests.conftest import StoreFactory

# a short pair the default confirm rule accepts by 3-gram Jaccard: two words dropped, one typo
KEPT = "Note: winter silver bridge morning stone stone letter silver forest garden."
EDITED = "Note: silver mornig stone stone letter silver forest."
# what simstore 0.4.0 recorded (copied from tests/data/frozen/0015_minhash_int_keys.sqlite)
RECIPE_1 = (
    '{"params":{"cjk_long_threshold":0.65,"containment":0.8,"fold_traditional":false,'
    '"long_containment":0.95,"long_threshold":0.75,"max_replaced":1,"measure":"jaccard",'
    '"min_bands":2,"min_contained":0.5,"numbers_matter":true,"prefilter":0.35,'
    '"short_length":700,"short_min_bands":1,"strip_markup":true,"strip_social":false,'
    '"threshold":0.55,"typos":true},"policy":"minhash","recipe":1}'
)
FROZEN = Path(__file__).resolve().parents[1] / "data" / "frozen" / "0015_minhash_int_keys.sqlite"
LONG = " ".join(
    f"paragraph {n} of a long manual page about option {n * 7} and its uses." for n in range(60)
)
AT = datetime(2030, 5, 1, 12, 0)


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def test_the_pair_sits_at_the_threshold_and_shares_keys_only_under_24x3() -> None:
    # independent reference: the texts normalised by hand (lower case, punctuation dropped) and
    # their character 3-grams counted with plain sets: Jaccard 33/59 = 0.559
    a = "note winter silver bridge morning stone stone letter silver forest garden"
    b = "note silver mornig stone stone letter silver forest"
    ga, gb = _grams(a), _grams(b)
    assert (len(ga & gb), len(ga | gb)) == (33, 59)
    kept, edited = batch.sign([KEPT, EDITED], keys=["kept", "edited"])
    assert (kept.normalised, edited.normalised) == (a, b)
    assert kept.signature is not None and edited.signature is not None
    old = minhash.stored_band_keys([kept.signature, edited.signature], "16x4")
    new = minhash.stored_band_keys([kept.signature, edited.signature], "24x3")
    assert not set(old[0]) & set(old[1])  # no 16 x 4 key in common: never a candidate there
    assert set(new[0]) & set(new[1])
    assert set(kept.band_keys) == set(new[0])  # the default signs with 24 x 3


def test_a_short_pair_at_the_threshold_is_found_under_recipe_2_only(
    make_store: StoreFactory,
) -> None:
    store = make_store()  # the default policy: recipe 2
    assert store.policy.minhash_bands == "24x3"
    assert store.add(KEPT, key="kept", at=AT).inserted
    assert [(m.key, m.measure) for m in store.query(EDITED, now=AT)] == [("kept", "jaccard")]
    decision = store.add(EDITED, key="edited", at=AT)
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "kept"
    # the same texts under recipe 1's policy: 16 x 4 keys, no key in common, never compared
    old = make_store(namespace=f"{store.namespace}-1", policy=policy_from_recipe(RECIPE_1))
    assert old.policy.minhash_bands == "16x4"
    assert old.add(KEPT, key="kept", at=AT).inserted
    assert old.query(EDITED, now=AT) == []
    assert old.add(EDITED, key="edited", at=AT).inserted


@pytest.mark.parametrize("layout", ["24x3", "16x4"])
def test_purge_and_remove_leave_no_band_key_rows(
    make_store: StoreFactory, engine: sa.Engine, layout: str
) -> None:
    store = make_store(keep="1d", policy=MinHashVerification(minhash_bands=layout))
    texts = {"kept": KEPT, "long": LONG, "other": "A different short message about the weather."}
    for key, text in texts.items():
        store.add(text, key=key, at=AT - timedelta(days=2))
    store.add(EDITED + " Again, later.", key="late", at=AT)
    signed = batch.sign(list(texts.values()), keys=list(texts), policy=store.policy)
    expected = sorted(k for item in signed for k in item.band_keys)
    with engine.connect() as conn:
        stored = stored_band_keys(conn, namespace=store.namespace)
    assert len(stored) >= 3 * minhash.LAYOUTS[layout][0] - 1  # a key a band (a rare repeat)
    assert set(expected) <= set(stored)
    assert store.remove("long")
    with engine.connect() as conn:
        left = stored_band_keys(conn, namespace=store.namespace)
    assert len(left) == len(stored) - len(signed[1].band_keys)
    assert store.purge(now=AT) == 2  # "kept" and "other"; "late" stays
    with engine.connect() as conn:
        after = stored_band_keys(conn, namespace=store.namespace)
    late = batch.sign([EDITED + " Again, later."], policy=store.policy)[0]
    assert after == sorted(late.band_keys)
    assert store.remove("late")
    with engine.connect() as conn:
        assert stored_band_keys(conn, namespace=store.namespace) == []


@pytest.mark.parametrize("recorded", ["not json", '{"params": {"minhash_bands": "9x9"}}'])
def test_a_row_of_a_namespace_whose_recipe_names_no_layout_still_loses_its_band_keys(
    make_store: StoreFactory, engine: sa.Engine, recorded: str
) -> None:
    # maintenance._layouts: a recipe unreadable, or naming no known layout, once the store is
    # open: a removed row's keys are deleted under every layout, so none is left behind
    store = make_store()
    store.add(LONG, key="long", at=AT)
    store.add(KEPT, key="kept", at=AT)
    with engine.connect() as conn:
        kept = stored_band_keys(conn, namespace=store.namespace)
    with engine.begin() as conn:
        conn.execute(
            sa.update(namespaces).where(namespaces.c.id == store.ns_id).values(policy=recorded)
        )
    assert store.remove("long")
    with engine.connect() as conn:
        left = stored_band_keys(conn, namespace=store.namespace)
    signed = batch.sign([KEPT], policy=store.policy)[0]
    assert left == sorted(signed.band_keys) and len(left) < len(kept)
    store.close()


def test_a_recipe_1_namespace_keeps_its_keys_and_decisions(tmp_path: Path) -> None:
    # a database of simstore 0.4.0's schema; its namespace recorded recipe 1 and 16 x 4 keys
    path = tmp_path / "frozen.sqlite"
    shutil.copy(FROZEN, path)
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    with SimStore(url, namespace="default", auto_upgrade=True, keep="1d") as old:
        assert old.policy.minhash_bands == "16x4"
        with engine.connect() as conn:
            frozen = stored_band_keys(conn, namespace="default")
        assert frozen  # rows 0.4.0 kept, with their keys
        old.add(KEPT, key="kept", at=AT)
        assert old.add(EDITED, key="edited", at=AT).inserted  # as 0.4.0 decided: not found
        mine = batch.sign([KEPT], policy=old.policy)[0]
        assert mine.band_keys == minhash.stored_band_keys([mine.signature or b""], "16x4")[0]
        with engine.connect() as conn:
            assert set(mine.band_keys) <= set(stored_band_keys(conn, namespace="default"))
        assert old.remove("kept") and old.remove("edited")
        with engine.connect() as conn:
            left = stored_band_keys(conn, namespace="default")
        purged = old.purge_counts(now=AT + timedelta(days=3650))  # every row 0.4.0 kept goes
        # its recipe names no layout: its keys are 16 x 4's (minhash.LAYOUT), counted as they
        # go, not those of every layout
        assert purged is not None and purged.band_keys == len(left)
        with engine.connect() as conn:
            assert stored_band_keys(conn, namespace="default") == []
    with SimStore(url, namespace="default") as reopened:  # the record is not rewritten
        assert reopened.policy.minhash_bands == "16x4"
    engine.dispose()


def test_a_hand_over_holds_band_keys_to_the_namespaces_layout(make_store: StoreFactory) -> None:
    item = batch.sign([KEPT], keys=["kept"])[0]
    assert item.signature is not None
    row = {"key": "kept", "kept": True, "fingerprint": item.fingerprint, "text": item.text,
           "signature": item.signature}  # fmt: skip
    old_keys = minhash.stored_band_keys([item.signature], "16x4")[0]
    store = make_store()
    with pytest.raises(InvalidInput, match="band_keys are not its signature's"):
        handover.load(store, [{**row, "band_keys": list(old_keys)}])
    assert handover.load(store, [{**row, "band_keys": list(item.band_keys)}]).kept == 1
    assert [m.key for m in store.query(EDITED, now=datetime.now())] == ["kept"]
    assert handover.check_rows([{**row, "band_keys": list(old_keys)}]) == 1  # no namespace: any
    old = make_store(namespace=f"{store.namespace}-1", policy=policy_from_recipe(RECIPE_1))
    assert handover.load(old, [row]).kept == 1  # keys made from the signature: 16 x 4
    assert old.remove("kept")
