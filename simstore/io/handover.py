"""Hand-over: load a batch result (``simstore.spark``, ``simstore.policy.batch``) into a store in
bulk, so that online dedup continues from it.

``load(store, rows)`` writes what ``SimStore.add_many`` would have written for the same inputs:
a ``simstore_fingerprints`` row (fingerprint, bands, comparison text, MinHash signature) and its
``simstore_minhash`` band keys for every kept text, and a ``simstore_decisions`` row for every
duplicate (a kept text's row is its own record).
So afterwards adding one of the corpus's texts again replays its decision (the key is known), and
a new near-duplicate of a loaded kept text is found by the store's usual lookups.

What it trusts: the rows were made with the store's preset and policy (``simstore.spark.dedup``
with ``preset=store.preset, policy=store.policy``; a signature of the wrong size is refused), and
every ``duplicate_of`` names a kept key of the load or of the store. Every row gets one moment
(``at``, default now): its ``added_at`` and time partition, as ``add_many(at=...)`` gives. Rows
whose key the namespace already holds are skipped (the same fingerprint) or refused
(``KeyConflict``), so a load that stopped half-way can simply be run again. Each chunk of
``batch_size`` rows is one transaction under the store's exclusive write lock, written by the
store's own writer (``simstore.storage._writer.load_decided``).

On disk (``simstore spark dedup --handover DIR``, read back by ``read_parquet`` for ``simstore db
load``): Parquet with the columns of ``HANDOVER_COLUMNS`` (the fingerprint signed, as stored) and
``made_with``, the preset and policy that made the rows (``made_with()``), checked on load.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from simstore.errors import InvalidInput, InvalidType, missing_extra
from simstore.policy.boilerplate import whole_band_keys
from simstore.policy.policies import MEASURES
from simstore.storage._writer import DecidedRow, load_decided
from simstore.storage.retention import utc_naive
from simstore.storage.scope import Scope
from simstore.text import minhash
from simstore.text.encoding import check_fingerprint, from_signed
from simstore.validate import check_fraction, check_int, check_key, check_text_value

if TYPE_CHECKING:
    from simstore.policy.policies import Policy
    from simstore.text.presets import Preset

__all__ = [
    "HANDOVER_COLUMNS",
    "OPTIONAL_COLUMNS",
    "LoadReport",
    "LoadRow",
    "band_keys_of",
    "check_rows",
    "load",
    "made_with",
    "read_parquet",
]

# a hand-over file's columns: simstore.spark.dedup(..., with_items=True)'s, plus made_with
HANDOVER_COLUMNS = (
    "key", "kept", "duplicate_of", "distance", "measure", "score",
    "order", "fingerprint", "text", "signature", "band_keys", "segments", "made_with",
)  # fmt: skip
# columns a hand-over may lack (one written before they were): no order, no recipe to check,
# no line keys to count
OPTIONAL_COLUMNS = ("order", "segments", "made_with")

# what may confirm a duplicate: a verification's measure, or the MinHash estimate
LOAD_MEASURES = (*MEASURES, "minhash", "containment")
_IN_CHUNK = 500  # keys per IN list when reading back ids and known keys


LoadRow = DecidedRow
"""One decided text of a batch result, as ``load`` takes it (a mapping with these fields works
too). ``fingerprint`` is unsigned; ``text``, ``signature`` and ``band_keys`` matter for kept rows
only (band keys default to the signature's); ``segments`` (kept or not) are the text's line keys,
which a namespace whose policy keeps the memory of boilerplate counts
(``simstore.text.edges.segments`` of the whole comparison text: ``Item.whole`` when lines were
set aside)."""


class HasScope(Protocol):
    """What ``load`` needs of a store: its ``scope`` (``SimStore`` has one)."""

    @property
    def scope(self) -> Scope: ...


@dataclass(frozen=True)
class LoadReport:
    """What ``load`` wrote: kept rows, duplicate decisions, and rows skipped as already there."""

    kept: int
    duplicates: int
    skipped: int


def band_keys_of(signature: bytes, layout: str) -> tuple[int, ...]:
    """The distinct, sorted MinHash band keys of a stored signature under ``layout`` (the
    namespace policy's ``minhash_bands``, as its ``Policy.sign`` makes them)."""
    return minhash.stored_band_keys([signature], layout)[0]


def load(
    store: HasScope | Scope,
    rows: Iterable[LoadRow | Mapping[str, Any]],
    *,
    at: datetime | None = None,
    batch_size: int = 5_000,
) -> LoadReport:
    """Write a batch result into ``store`` in bulk (see the module docstring)."""
    check_int("batch_size", batch_size, lowest=1)
    if isinstance(rows, (str, bytes, Mapping)):
        raise InvalidType("load takes an iterable of rows, not a single row")
    scope = store if isinstance(store, Scope) else store.scope
    moment = utc_naive(at)
    kept = duplicates = skipped = 0
    for chunk in _chunked(rows, batch_size):
        checked = [_check_row(row, (scope.policy.minhash_bands,)) for row in chunk]
        written = load_decided(scope, checked, moment)
        skipped += len(checked) - len(written)
        kept += sum(1 for row in written if row.kept)
        duplicates += sum(1 for row in written if not row.kept)
    return LoadReport(kept, duplicates, skipped)


def check_rows(rows: Iterable[LoadRow | Mapping[str, Any]]) -> int:
    """Check every row as ``load`` does (fields, types, values), without a database: a first
    pass that lets a load refuse a bad hand-over before writing any of it. The count of rows.
    Without a namespace, a row's band keys may be those of any band layout (``minhash.LAYOUTS``):
    ``load`` holds them to its namespace's."""
    count = 0
    for row in rows:
        _check_row(row, tuple(minhash.LAYOUTS))
        count += 1
    return count


def _chunked(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _check_row(raw: object, layouts: Sequence[str]) -> LoadRow:
    if isinstance(raw, Mapping):
        unknown = set(raw) - set(LoadRow._fields)
        if unknown:
            raise InvalidInput(f"unknown load row fields {sorted(unknown)}")
        try:
            row = LoadRow(**raw)
        except TypeError as error:
            raise InvalidInput(f"a load row needs key, kept and fingerprint ({error})") from None
    elif isinstance(raw, DecidedRow):
        row = raw
    else:
        raise InvalidType(f"a load row is a LoadRow or a mapping, not {type(raw).__name__}")
    key = check_key(row.key)
    check_fingerprint(row.fingerprint)
    if not isinstance(row.kept, bool):
        raise InvalidInput(f"kept must be True or False (key {key!r})")
    if not row.kept and (row.duplicate_of is None or row.distance is None):
        # said first: the fields' own checks would only say that distance is not an int
        raise InvalidInput(f"key {key!r} is a duplicate: it needs duplicate_of and distance")
    _check_fields(key, row)
    segments = _check_segments(key, row.segments)
    signature = None if row.signature is None else bytes(row.signature)
    if signature is not None and not minhash.is_stored_signature(signature):
        raise InvalidInput(
            f"key {key!r}: a signature has {minhash.SIGNATURE_BYTES} bytes, or at least "
            f"{minhash.SIZED_BYTES} with its size, not {len(signature)}"
        )
    if signature is not None:
        try:
            minhash.opening_of(signature)
        except ValueError as error:
            raise InvalidInput(f"key {key!r}: {error}") from None
    if row.kept:
        keys: tuple[int, ...] = ()
        if signature is not None:
            # the signature's own keys: purge and remove recompute them from it, so other keys
            # would stay behind for ever
            # (``layouts``: the namespace's, or any when there is none; the first when none given)
            each = [band_keys_of(signature, layout) for layout in layouts]
            given = None if row.band_keys is None else tuple(sorted(set(row.band_keys)))
            # a text with lines set aside (a text of lines) is found by its whole text's keys
            # too (``Policy.sign``): its signature's are among them
            if given is not None and segments and any(set(own) <= set(given) for own in each):
                each = [given]
            if given is not None and given not in each:
                raise InvalidInput(
                    f"key {key!r}: band_keys are not its signature's band keys under "
                    f"{minhash.SCHEME} with {' or '.join(layouts)} bands (a hand-over made by "
                    "another simstore version or another policy?)"
                )
            # none given: those ``Policy.sign`` makes, its whole text's too (lines set aside)
            keys = given or tuple(sorted({*each[0], *whole_band_keys(row.text, layouts[0])}))
        return row._replace(
            key=key, signature=signature, band_keys=keys, duplicate_of=None, segments=segments
        )
    return row._replace(key=key, duplicate_of=check_key(row.duplicate_of or ""), segments=segments)


def _check_segments(key: str, given: object) -> tuple[int, ...]:
    """A row's line keys: 64-bit integers (``simstore.text.edges.segment_key``), distinct."""
    if given is None:
        return ()
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise InvalidInput(f"key {key!r}: segments must be a list of integers")
    found = list(given)
    for value in found:
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
            raise InvalidInput(f"key {key!r}: segments must be 64-bit integers, not {value!r}")
    return tuple(sorted(set(found)))


def _check_fields(key: str, row: LoadRow) -> None:
    """The text, distance, measure and score as the store would have written them: refused
    alike on every dialect, before anything of the chunk is written."""
    if row.text is not None:
        if not isinstance(row.text, str):
            raise InvalidType(f"key {key!r}: text must be a str, not {type(row.text).__name__}")
        check_text_value(f"key {key!r}: text", row.text)
    if row.kept:
        return  # a kept row's match fields are not written
    check_int(f"key {key!r}: distance", row.distance, lowest=0, highest=64)
    if row.measure is not None and row.measure not in LOAD_MEASURES:
        raise InvalidInput(
            f"key {key!r}: measure must be one of {', '.join(LOAD_MEASURES)} or null, "
            f"not {str(row.measure)[:40]!r}"
        )
    if isinstance(row.score, int) and not isinstance(row.score, bool):
        return  # 0 or 1 read back as an int
    check_fraction(f"key {key!r}: score", row.score)


def made_with(preset: Preset, policy: Policy, max_distance: int) -> str:
    """What made a batch result, as a hand-over file records it and ``read_parquet`` checks it:
    the preset's label and the policy's line (``SimStore``'s ``preset`` and ``policy``)."""
    return f"{preset.label}; {policy.describe(max_distance)}"


def _parquet_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InvalidInput(f"no hand-over file or directory at {path}")
    # Spark's layout: part files, plus _SUCCESS and .crc files that are not data
    found = sorted(
        child
        for child in path.rglob("*.parquet")
        if child.is_file() and not child.name.startswith(("_", "."))
    )
    if not found:
        raise InvalidInput(f"no Parquet files in {path} (a hand-over is written as Parquet)")
    return found


def read_parquet(
    path: str | Path, *, expect: str | None = None, batch_size: int = 5_000
) -> Iterator[LoadRow]:
    """The rows of a hand-over file, or of a directory of them (``simstore spark dedup
    --handover DIR``), one Arrow batch at a time, for ``load``. ``expect``: the ``made_with`` the
    store's preset and policy give; a file made with another is refused (a file without the
    column is taken as it is)."""
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise missing_extra("reading a hand-over needs pyarrow", "parquet") from error
    for name in _parquet_files(Path(path)):
        try:
            parquet = pq.ParquetFile(name)
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise InvalidInput(f"{name} is not a Parquet file: {error}") from None
        columns = set(parquet.schema_arrow.names)
        missing = [c for c in HANDOVER_COLUMNS if c not in columns and c not in OPTIONAL_COLUMNS]
        if missing:
            raise InvalidInput(f"{name} is not a hand-over: it has no column {missing[0]!r}")
        wanted = [c for c in HANDOVER_COLUMNS if c in columns and c != "order"]
        for record in parquet.iter_batches(batch_size=batch_size, columns=wanted):
            try:
                batch = record.to_pylist()
            except UnicodeDecodeError as error:  # pyarrow writes what it is given, unchecked
                raise InvalidInput(
                    f"{name}: a string column holds bytes that are not valid UTF-8 "
                    f"(a lone surrogate?): {error.reason} at byte {error.start}"
                ) from None
            for row in batch:
                stamp = row.pop("made_with", None)
                if expect is not None and stamp is not None and stamp != expect:
                    raise InvalidInput(
                        f"{name} was made with {stamp}, the store decides with {expect}: "
                        "load it into a namespace with that preset and policy"
                    )
                signed = row["fingerprint"]  # null: refused by the checks, with its key
                unsigned = None if signed is None else from_signed(int(signed))
                yield LoadRow(**{**row, "fingerprint": unsigned})
