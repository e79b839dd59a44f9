"""The SimHash policies' radius is part of a namespace's recipe: it decides what is kept, so a
second store with another ``max_distance`` is refused like another option (a query may still
search wider), and a namespace that records none adopts the radius of the first store that opens
it. On every dialect, and through the real CLI."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.errors import PolicyMismatch
from simstore.policy.policies import SimHashVerification
from simstore.storage.namespaces import _read_namespace, _record_radius
from simstore.storage.schema import namespaces
from tests.conftest import StoreFactory

# unrelated texts: their fingerprints lie 20-40 bits apart (a 64-bit SimHash of unrelated texts is
# about 32 bits from another), so a radius of 25 merges many of them and 3 none
UNRELATED = [
    f"{subject} {verb} the {thing} near the {place} on day {day}"
    for day, (subject, verb, thing, place) in enumerate(
        [
            ("the baker", "sells", "bread", "station"),
            ("a sailor", "mends", "nets", "harbour"),
            ("my aunt", "paints", "fences", "school"),
            ("the mayor", "opens", "bridges", "river"),
            ("our cat", "chases", "mice", "barn"),
            ("two pilots", "fly", "gliders", "hills"),
            ("the choir", "sings", "hymns", "chapel"),
            ("a farmer", "plants", "onions", "market"),
        ]
    )
]


def recorded(engine: Engine, namespace: str) -> dict[str, object]:
    """The recipe a namespace recorded, read with plain SQL as an analyst would."""
    with engine.connect() as conn:
        text = conn.execute(
            sa.select(namespaces.c.policy).where(namespaces.c.name == namespace)
        ).scalar_one()
    data: dict[str, object] = json.loads(text)
    return data


def test_the_radius_is_recorded_and_another_one_refused(
    make_store: StoreFactory, engine: Engine
) -> None:
    made = make_store(policy="simhash", max_distance=5)
    assert recorded(engine, made.namespace)["max_distance"] == 5
    for text_number, text in enumerate(UNRELATED):
        assert made.add(text, key=f"k{text_number}").inserted
    for other in (3, 25):
        with pytest.raises(PolicyMismatch) as refused:
            make_store(max_distance=other)
        message = str(refused.value)
        assert f"max_distance: stored 5, requested {other}" in message
        assert "query" in message and "\n" not in message
    adopted = make_store()  # without a radius: the recorded one
    assert adopted.max_distance == 5
    assert make_store(max_distance=5, policy="simhash").max_distance == 5
    # a query may search wider than the namespace keeps, without changing what it keeps
    wide = adopted.query(UNRELATED[0] + " again", max_distance=32)
    assert wide and wide[0].key == "k0"
    assert recorded(engine, made.namespace)["max_distance"] == 5


def test_a_namespace_without_a_recorded_radius_adopts_the_first_stores(
    make_store: StoreFactory, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    made = make_store(policy="simhash-verified")
    namespace = made.namespace
    made.close()
    _forget_radius(engine, namespace)  # as simstore 0.4.0 recorded it
    with caplog.at_level(logging.WARNING, logger="simstore"):
        first = make_store(max_distance=4)
    assert first.max_distance == 4
    assert "records no max_distance" in caplog.text
    assert recorded(engine, namespace)["max_distance"] == 4
    with pytest.raises(PolicyMismatch, match="max_distance: stored 4, requested 6"):
        make_store(max_distance=6)
    assert make_store().max_distance == 4


def test_the_minhash_policy_records_no_radius(make_store: StoreFactory, engine: Engine) -> None:
    made = make_store()
    assert "max_distance" not in recorded(engine, made.namespace)
    assert make_store(max_distance=5).max_distance == 5  # it governs bare fingerprints only


def test_another_policy_option_is_refused_in_one_line(make_store: StoreFactory) -> None:
    make_store(policy="simhash-verified")
    from simstore.policy.policies import SimHashVerification

    with pytest.raises(PolicyMismatch) as refused:
        make_store(policy=SimHashVerification(threshold=0.7))
    message = str(refused.value)
    assert "option threshold: stored 0.8, requested 0.7" in message
    assert "{" not in message and "\n" not in message and len(message) < 400
    assert "another namespace" in message  # how to proceed
    with pytest.raises(PolicyMismatch, match="policy: stored simhash-verified, requested minhash"):
        make_store(policy="minhash")


def test_ingest_with_a_wider_radius_is_refused_from_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    lines = [json.dumps({"id": f"u{i}", "text": text}) for i, text in enumerate(UNRELATED)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "simstore.cli", "--db", url, *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)

    made = run("--policy", "simhash", "--namespace", "n", "ingest", "in.jsonl")
    assert made.returncode == 0, made.stderr
    again = run("--namespace", "n", "ingest", "--max-distance", "25", "in.jsonl")
    assert again.returncode == 4, again.stderr
    assert "max_distance: stored 3, requested 25" in again.stderr
    assert "unexpected" not in again.stderr
    # the query's own radius is no change of the namespace: it is answered
    query = run("--json", "--namespace", "n", "query", "--max-distance", "30", UNRELATED[0])
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)["matches"][0]["key"] == "u0"


def test_a_read_only_database_without_a_recorded_radius_still_opens(tmp_path: Path) -> None:
    from simstore.store import SimStore

    path = tmp_path / "store.db"
    with SimStore(f"sqlite:///{path}", policy="simhash", max_distance=5) as made:
        made.add(UNRELATED[0], key="a")
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # as simstore 0.4.0 recorded it: no radius
        recipe = json.loads(conn.execute(sa.select(namespaces.c.policy)).scalar_one())
        del recipe["max_distance"]
        conn.execute(sa.update(namespaces).values(policy=json.dumps(recipe)))
    engine.dispose()
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    with SimStore(read_only, max_distance=5) as store:  # cannot record it: decides with its own
        assert store.max_distance == 5
        assert [match.key for match in store.query(UNRELATED[0])] == ["a"]


def _forget_radius(engine: Engine, namespace: str) -> None:
    """Record ``namespace``'s recipe as simstore 0.4.0 did: without a radius."""
    recipe = recorded(engine, namespace)
    del recipe["max_distance"]
    with engine.begin() as conn:
        conn.execute(
            sa.update(namespaces)
            .where(namespaces.c.name == namespace)
            .values(policy=json.dumps(recipe, sort_keys=True, separators=(",", ":")))
        )


def test_a_radius_is_recorded_in_its_own_namespace_only_and_never_over_another(
    make_store: StoreFactory, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """Two namespaces of one recipe without a radius (their policy texts are equal): the first
    store of one records its radius there only, and a store that read the recipe before another
    recorded a radius leaves that radius as it is (the first store wins)."""
    first, second = (make_store(namespace=name, policy="simhash-verified") for name in "ab")
    first.close()
    second.close()
    for name in "ab":
        _forget_radius(engine, name)
    assert recorded(engine, "a") == recorded(engine, "b")
    connections = make_store(namespace="c").scope.connections
    stale = _read_namespace(connections, "a")  # as a store racing the next one read it
    assert stale is not None

    with caplog.at_level(logging.WARNING, logger="simstore"):
        assert make_store(namespace="a", max_distance=4).max_distance == 4
    assert caplog.messages == [
        "namespace 'a' records no max_distance (made by simstore 0.4.0 or earlier): recording 4, "
        "this store's, which every later store must use"
    ]
    assert recorded(engine, "a")["max_distance"] == 4
    assert "max_distance" not in recorded(engine, "b")  # the other namespace is untouched
    _record_radius(connections, stale, SimHashVerification(), 6)  # too late: 4 stays
    assert recorded(engine, "a")["max_distance"] == 4
    assert make_store(namespace="b", max_distance=6).max_distance == 6
    assert recorded(engine, "b")["max_distance"] == 6


def test_a_policy_mismatch_lists_every_option_that_differs_and_what_to_do(
    make_store: StoreFactory,
) -> None:
    made = make_store(policy="simhash-verified")
    with pytest.raises(PolicyMismatch) as refused:
        make_store(policy=SimHashVerification(threshold=0.7, measure="cosine"))
    url = made.scope.connections.url
    assert str(refused.value) == (
        f"namespace {made.namespace!r} in {url}: refusing another policy: "
        'option measure: stored "jaccard", requested "cosine"; '
        "option threshold: stored 0.8, requested 0.7. Open it without a policy (and without its "
        "options) to use its own, or give another namespace (--namespace NAME, "
        "SimStore(namespace=...)) for the new one"
    )
