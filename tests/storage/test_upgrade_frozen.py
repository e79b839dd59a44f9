"""Upgrading frozen databases: every ``tests/data/frozen/<revision>.sqlite`` was written by a
simstore at that schema revision (``tests/data/make_frozen.py``). A copy of each is upgraded (on
open, and with ``simstore db upgrade``), and its rows are also copied into PostgreSQL and MariaDB
databases at the same revision and upgraded there. Afterwards every old decision reads back as
recorded, old kept rows still match, re-adding an old text replays its decision, and new adds work.
Nothing here names a revision: a new frozen file is picked up as it is."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner

from simstore import from_hex
from simstore.cli import main
from simstore.policy import batch
from simstore.policy.policies import policy_from_recipe
from simstore.storage import migrate, reads, schema, snapshot
from simstore.store import SimStore
from simstore.text import minhash
from tests._workers import audit, sqlite_integrity, stored_band_keys, text_variant
from tests.conftest import new_server_database

pytestmark = pytest.mark.slow  # stores made by frozen older releases, upgraded in subprocesses

FROZEN_DIR = Path(__file__).parents[1] / "data" / "frozen"
FROZEN = sorted(FROZEN_DIR.glob("*.json"))
EVERY_FROZEN = pytest.mark.parametrize("manifest_path", FROZEN, ids=[path.stem for path in FROZEN])
COPIED_TABLES = ("simstore_namespaces", "simstore_fingerprints", "simstore_decisions")
SIDE_TABLES = ("simstore_minhash",)  # copied when the revision has them (0004 on)


def _manifest(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_there_is_a_frozen_database_of_every_revision_up_to_the_newest() -> None:
    frozen = {_manifest(path)["revision"] for path in FROZEN}
    assert migrate.head() in frozen, "run: python tests/data/make_frozen.py"
    for path in FROZEN:
        assert path.with_suffix(".sqlite").is_file(), path


def check_frozen(url: str, manifest: dict[str, Any]) -> None:
    """The recorded decisions read back, old rows match, replays replay, new adds work."""
    for namespace in manifest["namespaces"]:
        name, items = namespace["name"], namespace["items"]
        with SimStore(url, namespace=name, keep=namespace["keep"]) as store:
            assert store.preset.label == namespace["preset"]
            signed = _signed_keys(store)
            for item in items:
                value, at = from_hex(item["fingerprint"]), datetime.fromisoformat(item["at"])
                decision = store.get(item["key"])
                assert decision is not None, item
                assert decision.fingerprint == value and decision.inserted == item["inserted"]
                match = decision.duplicate_of
                assert (match.key if match else None) == item["duplicate_of"], item
                if item["inserted"]:
                    by_value = store.query(fingerprint=value, max_distance=0, now=at)
                    found = [m.key for m in by_value]
                    if item["key"] in signed:  # found by its band keys only (revision 0009)
                        assert item["key"] not in found, item
                        found = [m.key for m in store.query(item["text"], now=at)]
                    assert item["key"] in found, item
                if item["text"] is not None:  # same preset, same fingerprint: a replay
                    again = store.add(item["text"], key=item["key"], at=at)
                    assert (again.fingerprint, again.inserted) == (value, item["inserted"])
            before = store.stats().decisions
            kept = next(item for item in items if item["inserted"] and item["text"])
            later = datetime.fromisoformat(kept["at"]) + timedelta(minutes=30)
            near = store.add(text_variant(kept["text"], 1), key="new-near", at=later)
            assert near.duplicate_of is not None and near.duplicate_of.key == kept["key"]
            fresh = store.add(key="new-far", fingerprint=0x5A5A_A5A5_5A5A_A5A5, at=later)
            assert fresh.inserted
            assert store.stats().decisions == before + 2
        assert audit(url, name).problems == []


def _signed_keys(store: SimStore) -> set[str]:
    """The keys of the namespace's rows that have a MinHash signature."""
    with store.engine.connect() as conn:
        keys = conn.execute(
            sa.select(schema.fingerprints.c.key).where(
                schema.fingerprints.c.ns_id == store.ns_id,
                schema.fingerprints.c.signature.is_not(None),
            )
        )
        return set(keys.scalars())


def _copy(tmp_path: Path, manifest_path: Path) -> str:
    database = tmp_path / manifest_path.with_suffix(".sqlite").name
    shutil.copyfile(manifest_path.with_suffix(".sqlite"), database)
    return f"sqlite:///{database}"


@EVERY_FROZEN
@pytest.mark.parametrize("how", ["on open", "simstore db upgrade"])
def test_a_frozen_sqlite_database_is_upgraded_and_keeps_its_rows(
    manifest_path: Path, how: str, tmp_path: Path
) -> None:
    manifest = _manifest(manifest_path)
    url = _copy(tmp_path, manifest_path)
    assert migrate.current(url) == manifest["revision"]
    if how == "simstore db upgrade":
        result = CliRunner().invoke(main, ["--db", url, "db", "upgrade"])
        assert result.exit_code == 0, result.output
        assert migrate.current(url) == migrate.head()
    check_frozen(url, manifest)  # "on open": the first SimStore upgrades the file
    assert migrate.current(url) == migrate.head()
    assert sqlite_integrity(url) == ["ok"]
    assert _differences_from_the_models(url) == []


# the default policy as simstore 0.3 made it, which migration 0012 records for namespaces whose
# rows are all signed (its DEFAULT_RECIPE_03); the rows of a namespace that records none were
# signed by that code too
VERSION_1_DEFAULT = (
    '{"params":{"cjk_long_threshold":0.65,"fold_traditional":false,"long_threshold":0.75,'
    '"max_replaced":1,"measure":"jaccard","min_bands":2,"numbers_matter":true,"prefilter":0.35,'
    '"short_length":300,"short_min_bands":1,"strip_markup":true,"strip_social":false,'
    '"threshold":0.55},"policy":"minhash","recipe":1}'
)


def signed_rows_as_made_now(url: str, manifest: dict[str, Any]) -> int:
    """Check that every signed row of the default preset's namespaces has the signature values
    and band keys ``simstore.policy.batch.sign`` makes of its text today under the policy the
    namespace records (a frozen namespace decides by its own recipe, not today's default; one
    that records none by the version-1 default, whose rows they are) (a migration that
    converts signatures must convert them to exactly these; rows written before signatures
    carried their text's size have none, and a size that is there is today's); the number of rows
    checked."""
    engine = sa.create_engine(url)
    checked = 0
    try:
        with engine.connect() as conn:
            columns = sa.inspect(conn).get_columns(schema.namespaces.name)
            has_policy = any(column["name"] == "policy" for column in columns)
            for namespace in manifest["namespaces"]:
                texts = {i["key"]: i["text"] for i in namespace["items"] if i["inserted"]}
                rows = conn.execute(
                    sa.select(schema.fingerprints.c.id, schema.fingerprints.c.key)
                    .add_columns(schema.fingerprints.c.signature)
                    .join(schema.namespaces, schema.namespaces.c.id == schema.fingerprints.c.ns_id)
                    .where(
                        schema.namespaces.c.name == namespace["name"],
                        schema.fingerprints.c.signature.is_not(None),
                    )
                ).all()
                recorded = None  # a schema before 0012 records no policy
                if has_policy:
                    recorded = conn.execute(
                        sa.select(schema.namespaces.c.policy).where(
                            schema.namespaces.c.name == namespace["name"]
                        )
                    ).scalar_one()
                policy = policy_from_recipe(recorded or VERSION_1_DEFAULT)
                for row_id, key, signature in rows:
                    [item] = batch.sign(
                        [texts[key]], preset=namespace["preset"].split("@")[0], policy=policy
                    )
                    assert item.signature is not None
                    values = minhash.VALUES
                    assert bytes(signature)[:values] == item.signature[:values], key
                    size = minhash.size_of(bytes(signature))
                    assert size in (None, minhash.size_of(item.signature)), key
                    stored = stored_band_keys(conn, row_id=row_id)
                    # keys of the layout its policy records (one made before recording a policy
                    # reads as 16 x 4: policy_from_recipe)
                    made = minhash.stored_band_keys([item.signature], policy.minhash_bands)[0]
                    assert tuple(stored) == made, key
                    checked += 1
    finally:
        engine.dispose()
    return checked


def test_upgraded_signatures_and_band_keys_are_the_ones_made_today(tmp_path: Path) -> None:
    signed = [path for path in FROZEN if "simstore_minhash" in _tables(path.with_suffix(".sqlite"))]
    assert signed, "no frozen database has signatures"
    for manifest_path in signed:
        url = _copy(tmp_path, manifest_path)
        migrate.upgrade(url)
        assert signed_rows_as_made_now(url, _manifest(manifest_path)) > 0, manifest_path


def _tables(path: Path) -> set[str]:
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _differences_from_the_models(url: str) -> list[Any]:
    """What alembic's autogenerate would change to make the database equal simstore's models."""

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            options = {"include_object": migrate.compared, "compare_type": True}
            context = MigrationContext.configure(conn, opts=options)
            return list(compare_metadata(context, schema.metadata))
    finally:
        engine.dispose()


_MINHASH_ROWS = "SELECT band_key, fp_id FROM simstore_minhash"


def _copy_rows(source_url: str, target_url: str) -> None:
    """Copy simstore's rows as they are (ids included) between databases at one revision."""
    source, target = sa.create_engine(source_url), sa.create_engine(target_url)
    try:
        present = set(sa.inspect(source).get_table_names())
        tables = [*COPIED_TABLES, *(name for name in SIDE_TABLES if name in present)]
        old, new = sa.MetaData(), sa.MetaData()
        old.reflect(source, only=tables)
        new.reflect(target, only=tables)
        # a revision whose PostgreSQL layout keeps band keys in the row (0007 on): they go there
        in_row = target.dialect.name == "postgresql" and "band_keys" in (
            new.tables["simstore_fingerprints"].c
        )
        with source.connect() as reading, target.begin() as writing:
            keys_of: dict[int, list[int]] = {}
            if in_row and "simstore_minhash" in tables:
                for band_key, fp_id in reading.execute(sa.text(_MINHASH_ROWS)):
                    keys_of.setdefault(int(fp_id), []).append(int(band_key))
            for name in tables:
                if in_row and name == "simstore_minhash":
                    continue
                rows = [dict(row._mapping) for row in reading.execute(sa.select(old.tables[name]))]
                if in_row and name == "simstore_fingerprints":
                    for row in rows:
                        row["band_keys"] = (
                            sorted(keys_of[row["id"]]) if row["id"] in keys_of else None
                        )
                if rows:
                    writing.execute(sa.insert(new.tables[name]), rows)
                if writing.dialect.name == "postgresql" and "id" in new.tables[name].c:
                    # the ids were given: move the sequence on
                    writing.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                            f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {name}), false)"
                        )
                    )
    finally:
        source.dispose()
        target.dispose()


@EVERY_FROZEN
@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_frozen_rows_on_a_server_are_upgraded_and_keep_matching(
    manifest_path: Path, kind: str, tmp_path: Path
) -> None:
    manifest = _manifest(manifest_path)
    url = new_server_database(kind)
    migrate.upgrade(url, manifest["revision"])
    _copy_rows(_copy(tmp_path, manifest_path), url)
    migrate.upgrade(url)
    assert migrate.current(url) == migrate.head()
    signed_rows_as_made_now(url, manifest)
    check_frozen(url, manifest)


def _rows(url: str, sql: str) -> list[Any]:
    """The rows of one statement, on a connection of its own."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(sql)).all())
    finally:
        engine.dispose()


def _decision_rows(url: str) -> dict[str, tuple[bool, str | None]]:
    rows = _rows(url, "SELECT key, inserted, duplicate_of FROM simstore_decisions")
    return {key: (bool(inserted), duplicate_of) for key, inserted, duplicate_of in rows}


def test_0008_drops_the_kept_decisions_of_kept_rows_keeps_the_rest_and_downgrades(
    tmp_path: Path,
) -> None:
    manifest_path = next(path for path in FROZEN if path.stem == "0007_minhash_compact")
    manifest = _manifest(manifest_path)
    url = _copy(tmp_path, manifest_path)
    items = [item for namespace in manifest["namespaces"] for item in namespace["items"]]
    kept = sorted(item["key"] for item in items if item["inserted"])
    duplicates = {item["key"]: item["duplicate_of"] for item in items if not item["inserted"]}
    assert kept and duplicates
    before = _decision_rows(url)
    assert {key for key, (inserted, _match) in before.items() if inserted} == set(kept)
    # a kept decision whose kept row has gone (an older version's purge stopped half-way)
    orphan = kept[0]
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM simstore_fingerprints WHERE key = :k"), {"k": orphan})
    engine.dispose()

    migrate.upgrade(url, "0008_no_kept_decisions")
    after = _decision_rows(url)
    assert after == {orphan: (True, None), **{k: (False, d) for k, d in duplicates.items()}}

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        config = migrate._config(conn)
        command.downgrade(config, "0007_minhash_compact")
        conn.commit()
    engine.dispose()
    assert migrate.current(url) == "0007_minhash_compact"
    assert _decision_rows(url) == before  # every kept row has its kept decision again


def _frozen_on(kind: str, revision: str, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A copy of the frozen database of ``revision`` on ``kind`` (sqlite, postgresql, mysql), at
    that revision, with its manifest."""
    manifest_path = next(path for path in FROZEN if path.stem == revision)
    url = _copy(tmp_path, manifest_path)
    if kind != "sqlite":
        url, frozen = new_server_database(kind), url
        migrate.upgrade(url, revision)
        _copy_rows(frozen, url)
    return url, _manifest(manifest_path)


def _simhash_flags(url: str) -> list[tuple[bool, bool]]:
    """(has a signature, simhash_indexed) of every fingerprint row."""
    sql = "SELECT signature IS NOT NULL, simhash_indexed FROM simstore_fingerprints"
    return [(bool(signed), bool(indexed)) for signed, indexed in _rows(url, sql)]


def _sqlite_index_entries(url: str) -> dict[str, int]:
    """Entries of each SimHash band index, as ANALYZE counts them (sqlite_stat1)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("ANALYZE"))
            stats = conn.execute(sa.text("SELECT idx, stat FROM sqlite_stat1")).all()
    finally:
        engine.dispose()
    names = {name for name, _columns, _options in schema.SIMHASH_BAND_INDEXES}
    return {str(idx): int(str(stat).split()[0]) for idx, stat in stats if idx in names}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mysql"])
def test_0009_leaves_signed_rows_out_of_the_simhash_indexes_and_downgrades(
    kind: str, tmp_path: Path
) -> None:
    url, _ = _frozen_on(kind, "0008_no_kept_decisions", tmp_path)
    migrate.upgrade(url, "0009_simhash_index_unsigned")
    flags = _simhash_flags(url)
    signed = sum(1 for has_signature, _indexed in flags if has_signature)
    assert 0 < signed < len(flags)  # the frozen file holds both kinds
    assert all(indexed == (not has_signature) for has_signature, indexed in flags)
    if kind == "sqlite":
        assert set(_sqlite_index_entries(url).values()) == {len(flags) - signed}

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        command.downgrade(migrate._config(conn), "0008_no_kept_decisions")
        conn.commit()
        columns = {
            column["name"] for column in sa.inspect(conn).get_columns(schema.fingerprints.name)
        }
    engine.dispose()
    assert migrate.current(url) == "0008_no_kept_decisions" and "simhash_indexed" not in columns
    if kind == "sqlite":
        assert set(_sqlite_index_entries(url).values()) == {_row_count(url)}  # every row again


def _row_count(url: str) -> int:
    return int(_rows(url, "SELECT COUNT(*) FROM simstore_fingerprints")[0][0])


def _band_keys_and_schemes(url: str) -> tuple[list[int], set[str]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            schemes = conn.execute(sa.select(schema.namespaces.c.minhash_scheme)).scalars()
            return stored_band_keys(conn), set(schemes)
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mysql"])
def test_0010_keeps_the_first_16_bands_keys_and_downgrades_to_all_24(
    kind: str, tmp_path: Path
) -> None:
    url, manifest = _frozen_on(kind, "0009_simhash_index_unsigned", tmp_path)
    before, schemes = _band_keys_and_schemes(url)
    assert schemes == {"minhash-c5-96-24x4-b8-v2"}
    migrate.upgrade(url, "0010_minhash_16_bands")
    after, schemes = _band_keys_and_schemes(url)
    assert schemes == {minhash.SCHEME} == {"minhash-c5-96-16x4-b8-v3"}
    # every row's keys are the ones the scheme makes today from its text (batch.sign), a subset
    # of what it had: a third fewer
    assert signed_rows_as_made_now(url, manifest) > 0
    assert set(after) < set(before) and len(after) <= len(before) * 16 // 24 + 2

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        command.downgrade(migrate._config(conn), "0009_simhash_index_unsigned")
        conn.commit()
    engine.dispose()
    assert _band_keys_and_schemes(url) == (before, {"minhash-c5-96-24x4-b8-v2"})


def _band_key_type(url: str) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            columns = sa.inspect(conn).get_columns(schema.minhash_keys.name)
    finally:
        engine.dispose()
    return next(type(column["type"]).__name__ for column in columns if column["name"] == "band_key")


@pytest.mark.parametrize("kind", ["sqlite", "mysql"])
def test_0015_makes_band_keys_int_on_mariadb_keeps_every_key_and_downgrades(
    kind: str, tmp_path: Path
) -> None:
    url, manifest = _frozen_on(kind, "0014_packed_text", tmp_path)
    before, _ = _band_keys_and_schemes(url)
    assert before and _band_key_type(url) == "BIGINT"
    migrate.upgrade(url, "0015_minhash_int_keys")
    # MariaDB's key rows shrink by 4 bytes; SQLite stores 32-bit values in 4 bytes already and
    # keeps its table as it was
    assert _band_key_type(url) == ("INTEGER" if kind == "mysql" else "BIGINT")
    assert _band_keys_and_schemes(url)[0] == before
    migrate.upgrade(url, "0015_minhash_int_keys")  # run again (a resumed upgrade): nothing to do
    assert signed_rows_as_made_now(url, manifest) > 0

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        command.downgrade(migrate._config(conn), "0014_packed_text")
        conn.commit()
    engine.dispose()
    assert _band_key_type(url) == "BIGINT"
    assert _band_keys_and_schemes(url)[0] == before


def test_texts_kept_before_0014_are_read_from_their_own_column(tmp_path: Path) -> None:
    """Rows written before 0014 keep their text in ``text`` (never moved to ``packed_text``): the
    store, its near-miss reads, the what-if sample and a batch engine's snapshot read it there."""
    url = _copy(tmp_path, FROZEN_DIR / "0013_postgresql_add_locks.json")
    with SimStore(url, namespace="default") as store:
        with store.engine.connect() as conn:
            legacy = dict(
                conn.execute(
                    sa.select(schema.fingerprints.c.key, schema.fingerprints.c.text).where(
                        schema.fingerprints.c.ns_id == store.ns_id,
                        schema.fingerprints.c.text.is_not(None),
                        schema.fingerprints.c.packed_text.is_(None),
                    )
                ).all()
            )
        assert sorted(legacy) == ["en", "mixed", "other", "zh"]  # the frozen manifest's texts
        assert {key: store.kept_text(key) for key in legacy} == legacy
        snapshot_texts = {row[1]: row[3] for row in snapshot.kept_rows(store.scope, datetime.now())}
        assert {key: snapshot_texts[key] for key in legacy} == legacy
        assert dict(reads.kept_texts(store.scope, 100)) == legacy
        with store.engine.connect() as conn:
            rows = {key: reads.kept_row(conn, store.scope, key) for key in legacy}
        assert {key: row.item.text for key, row in rows.items() if row is not None} == legacy


def test_a_namespace_made_by_0_3_records_the_first_stores_policy_with_the_layout_of_its_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 0.3 namespace records no policy: the first store records its own (or the default),
    with the 16 x 4 MinHash layout its rows' band keys were made with, and its radius."""
    manifest = FROZEN_DIR / "0011_namespace_ids_never_reused.json"
    by_default = _copy(tmp_path, manifest)
    migrate.upgrade(by_default)
    with caplog.at_level("WARNING", logger="simstore"), SimStore(by_default) as store:
        assert store.policy.name == "minhash" and store.policy.minhash_bands == minhash.LAYOUT
        ns_id = store.ns_id
    said = f"namespace {ns_id} records no policy (made by simstore 0.3): recording {store.policy}"
    assert caplog.messages == [said]
    recipe = json.loads(_recorded_policy(by_default))
    assert recipe["policy"] == "minhash" and recipe["params"]["minhash_bands"] == "16x4"

    (tmp_path / "simhash").mkdir()
    chosen = _copy(tmp_path / "simhash", manifest)
    migrate.upgrade(chosen)
    engine = sa.create_engine(chosen)
    with engine.begin() as conn:  # the other namespace as 0.3 left it too: no policy
        conn.execute(sa.update(schema.namespaces).values(policy=None))
    engine.dispose()
    with SimStore(chosen, policy="simhash", max_distance=4) as store:
        assert (store.policy.name, store.max_distance) == ("simhash", 4)
    recipe = json.loads(_recorded_policy(chosen))
    assert (recipe["policy"], recipe["max_distance"]) == ("simhash", 4)
    assert _recorded_policy(chosen, "legacy pypi") == "None"  # recorded by its own first store


def _recorded_policy(url: str, namespace: str = "default") -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            recorded = conn.execute(
                sa.select(schema.namespaces.c.policy).where(schema.namespaces.c.name == namespace)
            ).scalar_one()
    finally:
        engine.dispose()
    return str(recorded)
