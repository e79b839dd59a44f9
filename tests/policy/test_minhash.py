"""MinHash signatures and the default policy: candidates by LSH band keys, decided by similarity.

The estimates are checked against exact Jaccard similarities computed here with Python sets; the
store tests run on every dialect, and the race test makes real processes add texts that only the
band keys (not the SimHash radius) bring together.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import random
import string
import uuid
import zlib
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore import fingerprint, hamming
from simstore.errors import InvalidInput
from simstore.policy.policies import DEFAULT_POLICY, MinHashVerification
from simstore.storage import _finder, schema
from simstore.storage import _prepared as prepared
from simstore.store import SimStore
from simstore.text import minhash
from simstore.text._algorithms import default_normalise
from simstore.text.similarity import char_ngrams, jaccard
from tests._workers import stored_band_keys
from tests.conftest import HANG, StoreFactory

WORDS = ["".join(random.Random(i).choices(string.ascii_lowercase, k=6)) for i in range(3000)]

KEYS = minhash.LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # band keys a text (a key a band)


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _edited(rng: random.Random, text: str, edits: int) -> str:
    words = text.split()
    for _ in range(edits):
        words[rng.randrange(len(words))] = rng.choice(WORDS)
    return " ".join(words)


def _exact(a: str, b: str) -> float:
    left, right = char_ngrams(a, minhash.NGRAM), char_ngrams(b, minhash.NGRAM)
    return len(left & right) / len(left | right)


# --- signatures ---------------------------------------------------------------------------------


def test_the_estimate_tracks_the_exact_jaccard_of_5_gram_sets() -> None:
    rng = random.Random(7)
    pairs = []
    for _ in range(300):
        base = _sentence(rng, rng.randint(5, 60))
        pairs.append((base, _edited(rng, base, rng.randint(0, 12))))
    signed = minhash.signatures([text for pair in pairs for text in pair])
    errors = []
    for i, (a, b) in enumerate(pairs):
        estimate = minhash.estimate(
            minhash.to_bytes(signed[2 * i]), minhash.to_bytes(signed[2 * i + 1])
        )
        errors.append(estimate - _exact(a, b))
    # 96 values: the standard error is at most sqrt(0.25 / 96) = 0.051
    assert abs(float(np.mean(errors))) < 0.02
    assert float(np.mean(np.abs(errors))) < 0.05
    assert max(abs(e) for e in errors) < 0.25


def test_identical_texts_agree_everywhere_and_unrelated_ones_almost_nowhere() -> None:
    rng = random.Random(3)
    a, b = _sentence(rng, 30), _sentence(rng, 30)
    sa_, sb = (minhash.to_bytes(s) for s in minhash.signatures([a, b]))
    assert minhash.estimate(sa_, minhash.to_bytes(minhash.signatures([a])[0])) == 1.0
    assert minhash.estimate(sa_, sb) < 0.1
    keys = minhash.band_keys(minhash.signatures([a, a, b]))
    assert keys.shape == (3, minhash.BANDS)
    assert (keys[0] == keys[1]).all() and not (keys[0] == keys[2]).any()


def test_a_band_key_depends_on_its_own_values_only() -> None:
    signed = minhash.signatures(["the quick brown fox jumps over the lazy dog"])
    changed = signed.copy()
    changed[0, 3 * minhash.ROWS + 1] ^= 1  # one value of band 3
    before, after = minhash.band_keys(signed)[0], minhash.band_keys(changed)[0]
    assert [j for j in range(minhash.BANDS) if before[j] != after[j]] == [3]


def test_batches_and_pieces_give_the_same_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    texts = ["", "a", "abcd", "abcde", "今天天气很好"] + [
        _sentence(rng, rng.randint(1, 80)) for _ in range(40)
    ]
    one_by_one = np.vstack([minhash.minima([text]) for text in texts])
    together = minhash.minima(texts)
    assert (one_by_one == together).all()
    assert (together[0] == 0xFFFFFFFF).all()  # no grams at all
    assert (minhash.signatures(texts) == minhash.to_stored_values(together)).all()
    # long texts are cut into overlapping pieces: cutting them much finer changes nothing
    monkeypatch.setattr(minhash, "GRAMS_PER_PASS", 16)
    assert (minhash.minima(texts) == together).all()


def test_sizes_are_the_distinct_5_grams_in_batches_and_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(12)
    texts = ["", "a", "abcde", "aaaaaaaaaaaa", "今天天气很好今天天气很好"] + [
        # repeated words: many grams occur more than once
        " ".join(rng.choice(WORDS[:20]) for _ in range(rng.randint(1, 900)))
        for _ in range(60)
    ]
    # the reference: Python's sets of the same grams
    expected = [len(char_ngrams(text, minhash.NGRAM)) for text in texts]
    values, sizes = minhash.sketches(texts)
    assert sizes.tolist() == expected
    assert (values == minhash.signatures(texts)).all()
    assert [int(minhash.sketches([text])[1][0]) for text in texts] == expected
    monkeypatch.setattr(minhash, "GRAMS_PER_PASS", 16)  # every long text in many pieces
    assert minhash.sketches(texts)[1].tolist() == expected


def test_a_stored_signature_carries_its_size_and_estimates_containment() -> None:
    rng = random.Random(13)
    whole = _sentence(rng, 300)
    cut = whole[: len(whole) * 3 // 5]
    values, sizes = minhash.sketches([whole, cut])
    whole_values = values[0]
    stored = [minhash.to_bytes(v, int(s)) for v, s in zip(values, sizes, strict=True)]
    assert [minhash.size_of(s) for s in stored] == sizes.tolist()
    assert minhash.size_of(minhash.to_bytes(whole_values)) is None  # stored before sizes
    assert (minhash.from_bytes(stored[0]) == whole_values).all()
    estimate = minhash.estimate(*stored)
    assert estimate == minhash.estimate(minhash.to_bytes(whole_values), stored[1])
    assert estimate < MinHashVerification().long_threshold  # the Jaccard misses the copy
    left, right = char_ngrams(whole, minhash.NGRAM), char_ngrams(cut, minhash.NGRAM)
    exact = len(left & right) / min(len(left), len(right))  # 1.0: the cut is all in the whole
    assert minhash.contained(estimate, *sizes.tolist()) == pytest.approx(exact, abs=0.08)


def test_a_signature_may_carry_an_opening_without_changing_values_size_or_keys() -> None:
    values, sizes = minhash.sketches([_sentence(random.Random(5), 200)])
    plain = minhash.to_bytes(values[0], int(sizes[0]))
    carried = minhash.to_bytes(values[0], int(sizes[0]), "upstream name: tramway planner")
    assert minhash.opening_of(carried) == "upstream name: tramway planner"
    assert minhash.opening_of(plain) is None
    assert minhash.is_stored_signature(carried) and minhash.size_of(carried) == int(sizes[0])
    assert (minhash.from_bytes(carried) == values[0]).all()
    assert minhash.estimate(carried, plain) == 1.0
    with pytest.raises(ValueError, match="after its size"):
        minhash.to_bytes(values[0], None, "an opening needs a size")
    with pytest.raises(ValueError, match="unreadable"):
        minhash.opening_of(plain + b"no zlib stream")
    assert not minhash.is_stored_signature(plain[: minhash.SIZED_BYTES - 1])


def test_stored_bytes_of_different_minima_agree_by_the_chance_the_estimate_removes() -> None:
    rng = random.Random(5)
    texts = [_sentence(rng, 40) for _ in range(400)]
    minima, stored = minhash.minima(texts), minhash.signatures(texts)
    left, right = slice(0, 200), slice(200, 400)
    different = minima[left] != minima[right]
    agree = (stored[left] == stored[right])[different]
    # 200 unrelated pairs: ~19,000 values with different minima; chance 1/256 gives ~75 equal
    # bytes, with a standard deviation of ~8.6
    assert abs(agree.mean() - minhash.CHANCE) < 4 * np.sqrt(minhash.CHANCE / agree.size)
    assert (stored[left] == stored[right])[~different].all()
    assert minhash.jaccard(0) == 0.0 and minhash.jaccard(minhash.VALUES) == 1.0


@pytest.mark.parametrize(
    "options",
    [
        {"measure": "dice"},
        {"threshold": 1.5},
        {"prefilter": -0.1},
        {"long_threshold": 2},
        {"min_bands": 0},
        {"short_length": -1},
        {"min_bands": True},
    ],
)
def test_bad_minhash_policies_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        MinHashVerification(**options)  # type: ignore[arg-type]


# --- the store under the default policy ----------------------------------------------------------

SHORT = "Heavy rain is expected in the north this weekend; the ferry to the islands may not run."
SHORT_EDIT = (
    "RT @weatherdesk: Heavy rain is expected in the north this weekend; the ferry to the islands "
    "may not run. Stay safe"
)
LONG = " ".join(
    f"Paragraph {i}: the city council discussed the new tram line, its cost and its timetable."
    for i in range(12)
)
LONG_EDIT = LONG + " An added closing note about the next meeting."
LONG_OTHER = " ".join(
    f"Chapter {i}: volunteers planted oak trees along the river and counted the birds nearby."
    for i in range(12)
)


def _band_key_rows(engine: Engine, namespace: str) -> int:
    with engine.connect() as connection:
        return len(stored_band_keys(connection, namespace=namespace))


def test_a_short_edit_far_outside_the_simhash_radius_is_found(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.add(SHORT, key="a").inserted
    distance = hamming(fingerprint(SHORT), fingerprint(SHORT_EDIT))
    assert distance > 7  # beyond even the SimHash-only policy's short radius
    decision = store.add(SHORT_EDIT, key="b")
    assert not decision.inserted and decision.duplicate_of is not None
    match = decision.duplicate_of
    assert (match.key, match.distance, match.measure) == ("a", distance, "jaccard")
    assert match.score == pytest.approx(jaccard(SHORT, SHORT_EDIT), abs=1e-6)
    assert [m.key for m in store.query(SHORT_EDIT)] == ["a"]


def test_long_texts_are_decided_by_the_signature(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.add(LONG, key="long").inserted
    assert store.kept_text("long") is None  # long texts are not kept
    again = store.add(LONG_EDIT, key="edit")
    assert not again.inserted and again.duplicate_of is not None
    score = again.duplicate_of.score
    assert again.duplicate_of.measure == "minhash" and score is not None
    exact = _exact(default_normalise(LONG), default_normalise(LONG_EDIT))
    assert score == pytest.approx(exact, abs=0.2)
    assert score >= MinHashVerification().long_threshold
    assert store.add(LONG_OTHER, key="other").inserted  # same shape, other content


def _long_document(seed: int) -> str:
    return _sentence(random.Random(seed), 250)  # ~1,750 characters, no repeated sentence


def test_a_copy_cut_short_or_with_a_header_is_a_duplicate_by_containment(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    whole = _long_document(21)
    assert store.add(whole, key="whole").inserted
    # (both under the long threshold's Jaccard, 0.70: a cut to 3/5, a header half as long)
    cut = store.add(whole[: len(whole) * 3 // 5], key="cut")
    header = _sentence(random.Random(22), 125) + " " + whole
    headed = store.add(header, key="headed")
    for decision in (cut, headed):
        assert not decision.inserted and decision.duplicate_of is not None
        assert decision.duplicate_of.key == "whole"
        assert decision.duplicate_of.measure == "containment"
        assert (decision.duplicate_of.score or 0) >= (MinHashVerification().long_containment or 1)
    # a sibling: a third of its words its own, so neither holds the other
    words = whole.split()
    rng = random.Random(23)
    sibling = " ".join(rng.choice(WORDS) if i % 3 == 0 else w for i, w in enumerate(words))
    assert store.add(sibling, key="sibling").inserted
    # without the rule, the estimate alone decides
    plain = make_store(
        namespace=f"plain-{uuid.uuid4().hex[:8]}", policy=MinHashVerification(long_containment=None)
    )
    plain.add(whole, key="whole")
    assert plain.add(whole[: len(whole) * 2 // 3], key="cut").inserted
    plain.close()
    store.close()


def test_a_row_stored_before_sizes_is_decided_by_its_estimate(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store()
    whole = _long_document(31)
    store.add(whole, key="whole")
    rows, names = schema.fingerprints, schema.namespaces
    ns_id = sa.select(names.c.id).where(names.c.name == store.namespace).scalar_subquery()
    ours = (rows.c.key == "whole", rows.c.ns_id == ns_id)
    with engine.begin() as conn:  # the row as simstore 0.3 stored it: the 96 values alone
        signature = conn.execute(sa.select(rows.c.signature).where(*ours)).scalar_one()
        assert minhash.size_of(bytes(signature)) is not None
        legacy = bytes(signature)[: minhash.SIGNATURE_BYTES]
        conn.execute(sa.update(rows).where(*ours).values(signature=legacy))
    assert store.add(whole[: len(whole) * 2 // 3], key="cut").inserted
    edited = store.add(whole + " one more closing line.", key="edited")  # the estimate still works
    assert edited.duplicate_of is not None and edited.duplicate_of.key == "whole"
    store.close()


def test_kept_texts_are_stored_compressed_and_plain_ones_are_still_read(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store()
    medium = _sentence(random.Random(41), 85)  # ~600 characters: short, so its text is kept
    store.add(medium, key="medium")
    rows, names = schema.fingerprints, schema.namespaces
    ns_id = sa.select(names.c.id).where(names.c.name == store.namespace).scalar_subquery()
    ours = (rows.c.key == "medium", rows.c.ns_id == ns_id)
    normalised = default_normalise(medium)
    with engine.begin() as conn:
        plain, packed = conn.execute(sa.select(rows.c.text, rows.c.packed_text).where(*ours)).one()
        assert plain is None and packed is not None
        assert len(packed) < len(normalised.encode()) * 0.7  # compressed
        assert zlib.decompress(packed).decode() == normalised  # the reference: zlib itself
        # the row as simstore before revision 0014 wrote it: the text in plain
        conn.execute(sa.update(rows).where(*ours).values(text=normalised, packed_text=None))
    assert store.kept_text("medium") == normalised
    words = medium.split()
    words[10] = "zzzzzz"  # one word replaced: a duplicate by the exact measure, on the plain text
    again = store.add(" ".join(words), key="again")
    assert again.duplicate_of is not None and again.duplicate_of.key == "medium"
    assert again.duplicate_of.measure == "jaccard"
    store.close()


def test_rows_without_a_signature_still_match_by_distance(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.add(key="bare", fingerprint=fingerprint(LONG)).inserted
    decision = store.add(LONG, key="text")
    assert not decision.inserted and decision.duplicate_of is not None
    assert decision.duplicate_of.key == "bare" and decision.duplicate_of.measure is None


def test_a_row_kept_without_a_signature_elsewhere_is_seen_by_an_open_store(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = make_store()
    assert reader.query(LONG) == []  # the namespace has only signed rows so far (none at all)
    make_store().add(key="bare", fingerprint=fingerprint(LONG))  # another store, no signature
    decision = reader.add(LONG, key="text")  # an add reads the namespace's state under its lock
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "bare"
    assert [m.key for m in reader.query(LONG)] == ["bare"]
    # a store that has only queried re-reads the namespace's state at most once a second
    monkeypatch.setattr(_finder, "UNSIGNED_REFRESH_SECONDS", 0.0)
    fresh_namespace = f"q-{uuid.uuid4().hex[:8]}"
    querying = make_store(namespace=fresh_namespace)
    assert querying.query(SHORT) == []
    make_store(namespace=fresh_namespace).add(key="bare-short", fingerprint=fingerprint(SHORT))
    assert [m.key for m in querying.query(SHORT)] == ["bare-short"]


def test_a_batch_decides_like_one_add_at_a_time(make_store: StoreFactory) -> None:
    rng = random.Random(5)
    texts = []
    for _ in range(30):
        base = _sentence(rng, rng.randint(6, 40))
        texts += [base, "RT @desk: " + base, _edited(rng, base, 2), _sentence(rng, 12)]
    rng.shuffle(texts)
    items = [(f"k{i}", text) for i, text in enumerate(texts)]
    single = make_store(namespace="single")
    one_by_one = [single.add(text, key=key) for key, text in items]
    batched = list(make_store(namespace="batched").add_many(items, batch_size=50))

    def outcome(decisions: list[Any]) -> list[tuple[str, bool, str | None]]:
        return [
            (d.key, d.inserted, d.duplicate_of.key if d.duplicate_of else None) for d in decisions
        ]

    assert outcome(batched) == outcome(one_by_one)
    assert sum(not d.inserted for d in one_by_one) >= 30  # at least each family's repost


def test_a_batch_holding_more_band_keys_than_one_lookup_finds_every_kept_row(
    make_store: StoreFactory, engine: Engine
) -> None:
    # a batch's lookups of rows kept before it, with more distinct band keys than one IN list
    # takes (_prepared.MAX_IN): SQLite and MySQL ask in several statements, PostgreSQL in one
    # array; every repost is found, as one add at a time finds it
    rng = random.Random(11)
    bases = [(f"b{i}", _sentence(rng, rng.randint(50, 70))) for i in range(300)]
    reposts = [(f"r{i}", "RT @desk: " + text) for i, (_key, text) in enumerate(bases)]
    single = make_store(namespace="single")
    for key, text in bases:
        single.add(text, key=key)
    one_by_one = [single.add(text, key=key) for key, text in reposts]
    batched = make_store(namespace="batched")
    assert all(d.inserted for d in batched.add_many(bases))
    decided = list(batched.add_many(reposts, batch_size=len(reposts)))

    def found(decisions: list[Any]) -> list[str | None]:
        return [d.duplicate_of.key if d.duplicate_of else None for d in decisions]

    assert found(decided) == found(one_by_one)
    assert found(decided).count(None) <= 10  # nearly every repost is its base's duplicate
    with engine.connect() as conn:
        assert len(set(stored_band_keys(conn, namespace="batched"))) > prepared.MAX_IN
    # and one lookup of a whole batch gives each item the rows that its own lookup gives it, with
    # every shared key counted (a policy that wants all 16: one key lost loses the row)
    items = batched._planner.items([("query", text, None) for _key, text in bases], None)
    assert isinstance(batched.policy, MinHashVerification)  # the default
    every_key = dataclasses.replace(batched.policy, min_bands=16, short_min_bands=16)
    finder, params = batched._finder, {"ns": batched._finder.ns_id}
    with batched._connections.reading() as conn:
        together = finder._lsh_candidates(conn, items, params, every_key)
        alone = [finder._lsh_candidates(conn, [item], params, every_key)[0] for item in items]
    assert together == alone
    assert sum(map(len, together)) >= 290  # each base finds itself


def test_remove_and_purge_take_the_band_keys_along(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store(keep="1d")
    now = datetime(2030, 5, 1, 12, 0)
    store.add(SHORT, key="old", at=now - timedelta(days=2))
    store.add(LONG, key="gone", at=now)
    assert _band_key_rows(engine, store.namespace) == 2 * KEYS
    assert store.query(SHORT_EDIT, now=now) == []  # the old row is outside the window
    assert store.remove("gone")
    assert _band_key_rows(engine, store.namespace) == KEYS
    assert store.purge(now=now) == 1  # the old kept row, the record of its decision too
    assert _band_key_rows(engine, store.namespace) == 0


# --- racing processes -----------------------------------------------------------------------------

PROCESSES = 4
CLUSTERS = 30


def _clusters() -> list[list[str]]:
    """Clusters of short texts that match each other pairwise under the default policy, many of
    them more than 3 SimHash bits apart (so only the band-key locks can serialise their adds)."""
    rng = random.Random(2024)
    clusters = []
    for _ in range(CLUSTERS):
        base = _sentence(rng, 14)
        clusters.append([f"RT @{rng.choice(WORDS)}: {base}" for _ in range(PROCESSES)])
    return clusters


def _race_worker(url: str, namespace: str, items: list[tuple[str, str]], barrier: Any) -> None:
    store = SimStore(url, namespace=namespace)
    barrier.wait()
    for key, text in items:
        store.add(text, key=key)
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
def test_racing_processes_keep_one_text_per_cluster(database_url: str) -> None:
    clusters = _clusters()
    far = 0
    for members in clusters:
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                assert jaccard(a, b) >= 0.6  # every pair matches under the default policy
                far += hamming(fingerprint(a), fingerprint(b)) > 3
    assert far >= 20  # plenty of pairs that the SimHash band locks alone would not serialise

    namespace = f"race-{uuid.uuid4().hex[:8]}"
    SimStore(database_url, namespace=namespace, auto_upgrade=True).close()
    per_process = [
        [(f"c{c}-p{p}", members[p]) for c, members in enumerate(clusters)] for p in range(PROCESSES)
    ]
    for p, items in enumerate(per_process):
        random.Random(p).shuffle(items)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    workers = [
        context.Process(target=_race_worker, args=(database_url, namespace, items, barrier))
        for items in per_process
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=HANG)
        assert worker.exitcode == 0

    store = SimStore(database_url, namespace=namespace)
    decisions = [[store.get(f"c{c}-p{p}") for p in range(PROCESSES)] for c in range(CLUSTERS)]
    store.close()
    assert all(d is not None for cluster in decisions for d in cluster)
    kept_per_cluster = [sum(d.inserted for d in cluster if d) for cluster in decisions]
    assert kept_per_cluster == [1] * CLUSTERS


# --- optional normalisations --------------------------------------------------------------------

POST = "Night market on Harbour Street reopens Friday."
REPOST = f"RT @citydesk_official: {POST} https://t.co/Xy12abCDef34 via @harbour_news"
SIMPLIFIED = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。"
TRADITIONAL = "今天天氣很好，我們一起去公園散步，順便看看湖邊新開的花。"


def test_social_markers_are_stripped_when_asked(make_store: StoreFactory) -> None:
    plain = jaccard(POST, REPOST)
    assert plain < MinHashVerification().threshold  # without stripping: not a duplicate
    store = make_store(policy=MinHashVerification(strip_social=True))
    store.add(POST, key="post")
    decision = store.add(REPOST, key="repost")
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "post"
    assert decision.duplicate_of.score is not None and decision.duplicate_of.score > 0.95
    assert make_store(namespace="plain").add(POST, key="post").inserted
    assert make_store(namespace="plain").add(REPOST, key="repost").inserted


def test_links_alone_are_not_stripped_to_nothing() -> None:
    policy = MinHashVerification(strip_social=True)
    assert policy.prepare("https://example.com/a") == "https://example.com/a"
    assert policy.prepare("write to bob@example.com today") == "write to bob@example.com today"


def test_traditional_chinese_is_folded_when_asked(make_store: StoreFactory) -> None:
    assert jaccard(SIMPLIFIED, TRADITIONAL) < 0.55  # different characters, same text
    store = make_store(policy=MinHashVerification(fold_traditional=True))
    store.add(SIMPLIFIED, key="s")
    decision = store.add(TRADITIONAL, key="t")
    assert decision.duplicate_of is not None and decision.duplicate_of.key == "s"
    assert decision.duplicate_of.score == 1.0
    assert store.kept_text("s") == default_normalise(SIMPLIFIED)
    unfolded = MinHashVerification(fold_traditional=False)
    assert make_store(namespace="unfolded", policy=unfolded).add(SIMPLIFIED, key="s").inserted
    assert make_store(namespace="unfolded", policy=unfolded).add(TRADITIONAL, key="t").inserted


def test_a_namespace_of_another_minhash_scheme_is_refused(
    make_store: StoreFactory, engine: Engine
) -> None:
    from simstore.errors import PresetMismatch
    from simstore.storage.schema import namespaces

    store = make_store()
    assert store.add("a text signed under this simstore's scheme", key="a").inserted
    with engine.connect() as connection:
        recorded = connection.execute(
            sa.select(namespaces.c.minhash_scheme).where(namespaces.c.name == store.namespace)
        ).scalar()
    assert recorded == minhash.SCHEME
    with engine.begin() as connection:
        connection.execute(
            sa.update(namespaces)
            .where(namespaces.c.name == store.namespace)
            .values(minhash_scheme="minhash-c7-128-32x4-v9")
        )
    with pytest.raises(PresetMismatch, match="minhash-c7-128-32x4-v9"):
        make_store(namespace=store.namespace)


def _licence(rng: random.Random, name: str, contact: str, years: str) -> str:
    """A long document of one template: its own names in the opening, a shared licence body."""
    opening = (
        f"Upstream name: {name}. Upstream contact: {contact}. Source: https://example.org/"
        f"{name.replace(' ', '-')}. Files: *. Copyright: {years} {contact} and the {name} "
        "authors. License: the licence below."
    )
    return opening + " " + _sentence(rng, 500)


def test_long_documents_of_one_template_are_told_apart_by_their_openings(
    make_store: StoreFactory,
) -> None:
    first = _licence(random.Random(41), "tramway planner", "Ada Lovelace", "2019-2023")
    # the same licence body (same seed), another package's names and years in the opening
    second = _licence(random.Random(41), "river bird counts", "Grace Hopper", "2011-2015")
    assert _exact(default_normalise(first), default_normalise(second)) > 0.85
    store = make_store()
    assert store.add(first, key="first").inserted
    apart = store.add(second, key="second")
    assert apart.inserted, apart.duplicate_of
    refused = store.near_misses("second")
    assert [judged.key for judged in refused] == ["first"]
    assert "'ada lovelace' -> 'grace hopper'" in refused[0].reason and not refused[0].matched
    # an edited copy: one word of the opening changed, a few in the body
    edited = _edited(random.Random(42), first.replace("planner", "planners"), 4)
    copy = store.add(edited, key="copy")
    assert copy.duplicate_of is not None and copy.duplicate_of.key == "first"
    # a long header added: the openings share no template, so the rule stands aside
    header = _sentence(random.Random(43), 120)
    headed = store.add(header + " " + first, key="headed")
    assert headed.duplicate_of is not None and headed.duplicate_of.key == "first"
    store.close()
    # recipe 1 without openings (and for rows kept before them): the estimate alone decides
    plain = make_store(
        namespace=f"plain-{uuid.uuid4().hex[:8]}",
        policy=MinHashVerification(opening_length=None, identity_rule=False),
    )
    plain.add(first, key="first")
    merged = plain.add(second, key="second")
    assert merged.duplicate_of is not None and merged.duplicate_of.key == "first"
    plain.close()
