"""``SimStore.query_many``: one list of matches per query, each what ``query`` answers for it."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from simstore.errors import InvalidInput, InvalidType
from simstore.policy import batch
from simstore.policy.policies import SimHashOnly
from simstore.store import SimStore
from simstore.text import minhash

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus.jsonl"


def corpus(count: int) -> list[tuple[str, str]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:count]
    return [(str(record["id"]), record["text"]) for record in map(json.loads, lines)]


def test_query_many_answers_what_query_answers_for_each(
    make_store: Callable[..., SimStore], dialect: str
) -> None:
    store = make_store()
    records = corpus(400)
    kept = list(store.add_many(records[:300], batch_size=100))
    rng = random.Random(17)
    queries: list[str | int] = [text for _key, text in records[250:400]]  # stored and new
    queries += [text[: len(text) // 2] + " edited" for _key, text in records[:50]]
    queries += [decision.fingerprint ^ (1 << rng.randrange(64)) for decision in kept[:30]]
    queries += ["nothing like any stored text at all, 12345", rng.getrandbits(64)]
    answered = store.query_many(queries, batch_size=64)
    assert answered == [store.query(q) if isinstance(q, str) else store.query(fingerprint=q)
                        for q in queries]  # fmt: skip
    assert sum(bool(matches) for matches in answered) > 50  # the stored texts at least
    assert store.query_many(queries[:20], limit=1) == [m[:1] for m in answered[:20]]
    assert store.stats().decisions == 300  # nothing written

    radius = make_store(namespace=f"{store.namespace}-r", policy=SimHashOnly())
    list(radius.add_many(records[:100]))
    wide = [text for _key, text in records[:100]]
    assert radius.query_many(wide, max_distance=8) == [
        radius.query(text, max_distance=8) for text in wide
    ]


def test_query_many_refuses_what_is_not_a_text_or_a_fingerprint(
    make_store: Callable[..., SimStore],
) -> None:
    store = make_store()
    assert store.query_many([]) == []
    for bad in ("one text", [b"bytes"], [1.5], [True], [None]):
        with pytest.raises(InvalidType):
            store.query_many(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.query_many(["a text"], batch_size=0)
    with pytest.raises(InvalidInput):
        store.query_many(["a text"], max_distance=5)  # a radius with a text, under minhash


def test_query_many_in_order_decides_as_add_many_would_and_writes_nothing(
    make_store: Callable[..., SimStore], dialect: str
) -> None:
    """The reference is the store itself: ``add_many`` of the same records into a copy of the
    namespace (the first half added to both), whose recorded decisions ``in_order`` must give."""
    records = corpus(400)
    base, new = records[:200], records[200:]
    new += [(f"copy-{key}", text + "!") for key, text in new[:20]]  # duplicates inside the input
    checked = make_store()
    added = make_store(namespace=f"{checked.namespace}-added")
    for store in (checked, added):
        list(store.add_many(base, batch_size=100))
    before = checked.stats()
    texts, keys, now = [text for _key, text in new], [key for key, _text in new], datetime.now()
    found = checked.query_many(texts, keys=keys, in_order=True, batch_size=64, now=now)
    decided = list(added.add_many(new, batch_size=100))
    assert checked.stats() == before  # nothing written
    expected = [(d.inserted, d.recorded_as) for d in decided]
    assert [(not m, m[0].key if m else None) for m in found] == expected
    within = {key for key, _text in new}
    assert any(m and m[0].key in within for m in found)  # a duplicate of an earlier query
    assert any(m and m[0].key not in within for m in found)  # and one of the namespace
    limited = checked.query_many(texts, keys=keys, in_order=True, limit=1, now=now)
    assert limited == [m[:1] for m in found]


def test_query_many_in_order_refuses_keys_that_do_not_name_the_queries(
    make_store: Callable[..., SimStore],
) -> None:
    store = make_store()
    with pytest.raises(InvalidInput, match="2 keys for 1 queries"):
        store.query_many(["a text"], keys=["a", "b"], in_order=True)
    with pytest.raises(InvalidInput, match="'a' is given more than once"):
        store.query_many(["one text", "two texts"], keys=["a", "a"], in_order=True)
    with pytest.raises(InvalidInput, match="in_order=True"):
        store.query_many(["a text"], keys=["a"])
    with pytest.raises(InvalidType):
        store.query_many(["a text"], keys="a", in_order=True)
    assert store.query_many(["a text", "a text"], in_order=True)[1][0].key == "0"


def test_query_many_refuses_with_the_messages_query_gives(
    make_store: Callable[..., SimStore],
) -> None:
    # mutmut left query_many's own messages free to change (None, upper case, "XX...XX", the
    # type named as NoneType) and the name a text query goes by ("query", as in query's own
    # refusals, the reference here): the messages are what a caller reads, pinned whole
    store = make_store()

    def refused(call: Callable[[], object]) -> str:
        with pytest.raises(InvalidInput) as error:
            call()
        return str(error.value)

    blank = refused(lambda: store.query("  "))
    assert blank.startswith("the text of key 'query' has no words")
    assert refused(lambda: store.query_many(["a text", "  "])) == blank
    assert refused(lambda: store.query_many("one text")) == (
        "query_many takes an iterable of texts or fingerprints, not one"
    )
    assert refused(lambda: store.query_many(["a text", 1.5])) == (  # type: ignore[list-item]
        "query_many takes texts (str) or fingerprints (int), not float"
    )
    assert refused(lambda: store.query_many(["a text"], keys="a", in_order=True)) == (
        "keys must be a sequence of strings, one per query"
    )
    assert refused(lambda: store.query_many(["a text"], keys=["a"])) == (
        "keys name the queries for in_order=True: give in_order=True too"
    )
    store.close()


def test_a_long_text_in_a_batch_needs_two_shared_band_keys_as_alone(
    make_store: Callable[..., SimStore],
) -> None:
    """A batch counts each kept row's shared band keys per query (``Finder._lsh_candidates``) as
    the database counts them for one query: a long text's candidate shares ``min_bands`` (2)
    keys with it. Pins that count at its edges: one key, one key each of two rows, two keys.

    Expected values: the shared keys and the containment estimates are computed here with
    ``batch.sign`` and ``simstore.text.minhash``; each query is ``kept`` with another block of
    words appended, so that the policy's long-text containment rule (0.95) would merge it with
    ``kept`` if it were a candidate (the seeds were picked for the key counts)."""
    rng = random.Random(29)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(3000)]
    kept = " ".join(rng.choices(words, k=130))
    other = " ".join(random.Random(413).choices(words, k=110))  # kept too
    one_key, two_keys, one_each = (
        f"{kept} {' '.join(random.Random(seed).choices(words, k=110))}" for seed in (223, 13, 413)
    )
    signed = batch.sign([kept, other, one_key, two_keys, one_each])
    assert all(item.text is None for item in signed)  # long texts: min_shared is min_bands
    keys = [set(item.band_keys) for item in signed]
    assert [(len(keys[i] & keys[0]), len(keys[i] & keys[1])) for i in (2, 3, 4)] == [
        (1, 0),
        (2, 0),
        (1, 1),
    ]
    kept_signature = signed[0].signature
    assert kept_signature is not None
    kept_size = minhash.size_of(kept_signature)
    for item in signed[2:]:
        assert item.signature is not None and kept_size is not None
        size = minhash.size_of(item.signature)
        assert size is not None and min(size, kept_size) >= max(size, kept_size) / 2
        estimate = minhash.estimate(item.signature, kept_signature)
        assert minhash.contained(estimate, size, kept_size) >= 0.95
    store = make_store()
    assert store.add(kept, key="kept").inserted
    assert store.add(other, key="other").inserted
    answered = store.query_many([one_key, two_keys, one_each])
    assert [[m.key for m in found] for found in answered] == [[], ["kept"], []]
    assert answered == [store.query(text) for text in (one_key, two_keys, one_each)]
