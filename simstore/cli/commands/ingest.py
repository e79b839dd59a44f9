"""``ingest`` and ``dedup``: records read from files, added by ``simstore.io.ingest.ingest``."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from simstore.cli._app import (
    EMITTED,
    Failure,
    Interrupted,
    Settings,
    Terminated,
    main,
    open_store,
)
from simstore.cli.output import emit, output_file, pairs
from simstore.errors import InvalidInput
from simstore.io.ingest import Rejected, ingest
from simstore.io.outputs import check_paths
from simstore.io.records import (
    FORMATS,
    KEY_FROM,
    STDIN_NAME,
    InputOptions,
    Meter,
    Record,
    format_of,
    read_records,
    require_pyarrow,
)
from simstore.storage.db import redact
from simstore.validate import DEFAULT_MAX_DISTANCE

if TYPE_CHECKING:
    from rich.progress import Progress

    from simstore.results import Decision
    from simstore.store import SimStore

F = TypeVar("F", bound=Callable[..., Any])
LISTED = 1000  # skipped records listed in the JSON summary (all are counted, and warned about)
OnDecision = Callable[[Record, "Decision"], None]


@dataclass
class Tally:
    """What a run did. Every record read is kept, a duplicate or skipped."""

    kept: int = 0
    duplicates: int = 0
    skipped: int = 0
    replayed: int = 0  # of the kept and duplicates: keys added before, their decision replayed
    seconds: float = 0.0
    stopped_at: Rejected | None = None
    stop_error: InvalidInput | None = None
    rejected: list[Rejected] = dataclasses.field(default_factory=list)  # the first LISTED
    interrupted: bool = False  # Ctrl-C: the input was cut short, what was read is committed
    terminated: bool = False  # the same, by SIGTERM

    @property
    def committed(self) -> int:
        """Records whose decision is in the store (added now, or replayed)."""
        return self.kept + self.duplicates

    @property
    def read(self) -> int:
        return self.kept + self.duplicates + self.skipped

    def counts(self) -> dict[str, int]:
        return {
            "records read": self.read,
            "kept": self.kept,
            "duplicates": self.duplicates,
            "skipped": self.skipped,
            "replayed": self.replayed,
        }

    @property
    def rate(self) -> float:
        return self.read / self.seconds if self.seconds > 0 else 0.0


def exact_copy(record: Record | Rejected, decision: Decision) -> bool:
    """A record keyed by its text whose text is already kept under that key: a duplicate.

    Its decision is the replay of the kept one (``simstore.io.records``: the key is the text's
    hash), so it is counted and written as an exact copy of that key, not as kept again.
    """
    return (
        isinstance(record, Record)
        and record.keyed_by_text
        and decision.replayed
        and (decision.inserted)
    )


def _warn(bar: _Bar | None, message: str) -> None:
    if bar is not None:
        bar.progress.console.print(message, markup=False, highlight=False, soft_wrap=True)
    else:
        click.echo(message, err=True)


def _count(
    tally: Tally,
    outcome: Decision | Rejected,
    record: Record | Rejected,
    on_decision: OnDecision,
    options: InputOptions,
) -> str | None:
    """Count one outcome (and hand a decision on); the warning to show for a rejected record."""
    if isinstance(outcome, Rejected):
        tally.skipped += 1
        if len(tally.rejected) < LISTED:
            tally.rejected.append(outcome)
        if options.strict:
            tally.stopped_at = outcome
            return str(outcome)
        return f"{outcome} (skipped)"
    if outcome.inserted and not exact_copy(record, outcome):
        tally.kept += 1
    else:
        tally.duplicates += 1
    tally.replayed += outcome.replayed
    if isinstance(record, Record):
        on_decision(record, outcome)
    return None


def _run(
    store: SimStore,
    items: Iterator[Record | Rejected],
    options: InputOptions,
    on_decision: OnDecision,
    progress: _Bar | None,
) -> Tally:
    """Feed the records to ``ingest``; each outcome is paired with its record (one per record)."""
    tally = Tally()
    started = time.perf_counter()
    fed, read = itertools.tee(items)
    outcomes = ingest(
        store, fed, batch_size=options.batch_size, strict=options.strict, workers=options.workers
    )
    try:
        # one outcome per record, in order; tee holds the records ingest read ahead (a batch)
        for outcome, record in zip(outcomes, read, strict=False):
            warning = _count(tally, outcome, record, on_decision, options)
            if warning is not None:
                _warn(progress, warning)
            if progress is not None:
                progress.update(tally.read)
    except InvalidInput as error:  # a file that cannot be read at all: stop after the rest
        tally.stop_error = error
    tally.seconds = time.perf_counter() - started
    return tally


class _StopReading(BaseException):
    """Raised by the SIGINT handler while the input is being read: end the input there (a
    BaseException, as KeyboardInterrupt is, so that no reader's ``except Exception`` takes it)."""


class _Interrupt:
    """Ctrl-C (or SIGTERM) during ingest or dedup ends the input, not the run: the batch being
    written is committed and the summary printed, then exit 130 (143 for SIGTERM). A second one
    stops at once (the batch being written is rolled back). Records are cut only between reads,
    or inside a read that waits (stdin), never inside a transaction."""

    def __init__(self) -> None:
        self.interrupted = False
        self.terminated = False
        self.reading = False

    def _handle(self, signum: int, _frame: object) -> None:
        self.interrupted = True
        if signum == signal.SIGTERM:
            self.terminated = True
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the second one is at once
        else:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if self.reading:
            raise _StopReading

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Interrupt]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {
            signum: signal.signal(signum, self._handle)
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def cut(self, items: Iterator[Record | Rejected]) -> Iterator[Record | Rejected]:
        """``items`` until Ctrl-C."""
        while not self.interrupted:
            self.reading = True
            try:
                item = next(items)
            except (StopIteration, _StopReading):
                return
            finally:
                self.reading = False
            yield item


@dataclass
class _Bar:
    """The progress display of a run on a terminal: a bar of the bytes read with the records,
    their rate and the time left when the input is files, a spinner and a count for stdin."""

    progress: Progress
    meter: Meter
    total: int | None
    started: float = dataclasses.field(default_factory=time.perf_counter)

    def update(self, records: int) -> None:
        rate = records / max(time.perf_counter() - self.started, 1e-9)
        completed = records if self.total is None else self.meter.read
        self.progress.update(self.progress.task_ids[0], completed=completed, records=records,
                             rate=rate)  # fmt: skip


def _progress(
    settings: Settings, paths: tuple[str, ...], meter: Meter
) -> contextlib.AbstractContextManager[_Bar | None]:
    """A progress display on stderr when it is a terminal (never with --quiet)."""
    if settings.quiet or not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    total = Meter.total(paths)
    counts = TextColumn("{task.fields[records]:,} records, {task.fields[rate]:,.0f}/s")
    if total is None:  # stdin: no size to measure against
        columns: tuple[Any, ...] = (SpinnerColumn(), TextColumn("{task.description}"), counts,
                                    TimeElapsedColumn())  # fmt: skip
    else:
        columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), counts,
                   TextColumn("ETA"), TimeRemainingColumn())  # fmt: skip
    progress = Progress(*columns, console=Console(stderr=True), transient=True)
    progress.add_task("adding", total=total, records=0, rate=0.0)

    @contextlib.contextmanager
    def shown() -> Iterator[_Bar]:
        with progress:
            yield _Bar(progress, meter, total)

    return shown()


def _summary(
    settings: Settings, paths: tuple[str, ...], tally: Tally, store: SimStore
) -> tuple[dict[str, Any], str | None]:
    """The run's summary: as JSON data, and as text (None with --quiet)."""
    preset, policy = store.preset.label, store.policy.describe(store.max_distance)
    data = {
        "db": redact(settings.url),
        "namespace": settings.namespace,
        "preset": preset,
        "policy": policy,
        "max_distance": store.max_distance,
        "read": tally.read,
        "kept": tally.kept,
        "duplicates": tally.duplicates,
        "skipped": tally.skipped,
        "replayed": tally.replayed,
        "seconds": round(tally.seconds, 3),
        "rate": round(tally.rate, 1),
        "stopped_at": None if tally.stopped_at is None else str(tally.stopped_at),
        "skipped_records": [
            {"where": rejected.where, "key": rejected.key, "reason": rejected.reason}
            for rejected in tally.rejected
        ],
        "interrupted": tally.interrupted,
        "committed": tally.committed,
        "error": None if tally.stop_error is None else str(tally.stop_error),  # input unreadable
    }
    sources = ", ".join(STDIN_NAME if path == "-" else path for path in paths)
    counts = {
        "namespace": f"{settings.namespace} (preset {preset})",
        "policy": policy,
        **{name: f"{count:>9,}" for name, count in tally.counts().items()},
        "rate": f"{tally.rate:>9,.0f} records/s ({tally.seconds:.2f} s)",
    }
    text = None if settings.quiet else f"{sources} -> {redact(settings.url)}\n{pairs(counts)}"
    return data, text


def _finish(tally: Tally) -> None:
    """The exit of a run: 130 when interrupted (143 by SIGTERM), its read error, 1 for a strict
    stop or skipped records, else 0."""
    if tally.interrupted:
        stop = Terminated if tally.terminated else Interrupted
        word = "terminated" if tally.terminated else "interrupted"
        raise stop(
            f"{word}: {tally.committed:,} record{'' if tally.committed == 1 else 's'} "
            "committed (the same command again replays them and goes on)"
        )
    if tally.stop_error is not None:
        raise tally.stop_error
    if tally.stopped_at is not None:
        good = tally.kept + tally.duplicates
        raise Failure(
            f"stopped at {tally.stopped_at.where} (--strict); "
            f"{good} good record{'' if good == 1 else 's'} before it committed"
        )
    if tally.skipped:
        raise click.exceptions.Exit(1)  # the bad records were reported above


def _add_records(
    settings: Settings,
    paths: tuple[str, ...],
    options: InputOptions,
    on_decision: OnDecision,
    describe: dict[str, Any],
    *,
    summary_to_stderr: bool = False,
) -> Tally:
    """The shared body of ingest and dedup: add and print the summary; ``_finish`` it after."""
    for path in paths:
        # a usage error or a missing extra before anything is opened
        if format_of(path, options.format) == "parquet":
            require_pyarrow()
    radius = options.max_distance
    with (
        open_store(settings, create=True, max_distance=radius) as store,
        _progress(settings, paths, meter := Meter()) as progress,
        _Interrupt().installed() as interrupt,
    ):
        items = interrupt.cut(read_records(paths, options, meter))
        tally = _run(store, items, options, on_decision, progress)
        tally.interrupted = interrupt.interrupted
        tally.terminated = interrupt.terminated
    data, text = _summary(settings, paths, tally, store)
    emit(settings, {**describe, **data}, text, err=summary_to_stderr)
    return tally


def reading_options(command: F) -> F:
    """How records are read, declared once: ingest, dedup, check and whatif."""
    decorators = [
        click.option(
            "--format",
            "format_",
            type=click.Choice(FORMATS),
            help="Input format [default: from the extension: .jsonl/.ndjson, .csv, .txt, .parquet; "
            "a further .gz is read through gzip]. 'parquet' needs pip install 'simstore[parquet]'. "
            "'lines' makes one record per non-blank line (keyed as --key-from says).",
        ),
        click.option(
            "--text-field", default="text", show_default=True, help="Field with the text."
        ),
        click.option(
            "--key-field",
            default="id",
            show_default=True,
            help="Field with the record's key; records without it are keyed as --key-from says.",
        ),
        click.option(
            "--key-from",
            type=click.Choice(KEY_FROM),
            default="text",
            show_default=True,
            help="Key of a record without a key field: 'text', 32 hex digits of BLAKE2b-128 of "
            "its text (the same records fed again, by any path or stdin, replay; a copy of a "
            "kept text is an exact duplicate), or 'line', <file>:<line>.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def input_options(command: F) -> F:
    """The options ingest and dedup share, declared once."""
    decorators = [
        reading_options,
        click.option(
            "--max-distance",
            type=int,
            help="SimHash radius: the largest Hamming distance that counts as a duplicate "
            f"[default: {DEFAULT_MAX_DISTANCE}]; only with --policy simhash or simhash-verified "
            "(minhash decides by similarity: see --threshold).",
        ),
        click.option(
            "--strict",
            is_flag=True,
            help="Stop at the first bad record (exit 1) instead of skipping it; the good "
            "records before it are committed.",
        ),
        click.option(
            "--batch-size",
            type=click.IntRange(min=1),
            default=1000,
            show_default=True,
            help="Records per transaction.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Processes that fingerprint and sign the next batches while this one decides "
            "and writes (0: none; the same decisions; for files of many thousands of records, "
            "with a core free for each).",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


_PATHS = click.Path(exists=True, dir_okay=False, allow_dash=True)


@main.command("ingest")
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=_PATHS)
@input_options
@click.pass_obj
def ingest_files(
    settings: Settings, /, files: tuple[str, ...], format_: str | None, **opts: Any
) -> None:
    """Add the records of files (or stdin) and print a summary.

    FILE '-' reads stdin (give --format). Each record is kept or judged a near-duplicate of an
    earlier one. A bad record (invalid JSON, missing or empty text) is reported on stderr with its
    file and line and skipped (exit 1 at the end), or with --strict stops the run. Re-adding a key
    with the same text replays its first decision, so running the same ingest twice changes nothing.
    A record without a key field is keyed by a hash of its text (--key-from), so feeding the same
    records again through another path or stdin replays too.
    """
    options = InputOptions(format_, max_text_length=settings.max_text_length, **opts)
    describe = {"files": list(files)}
    _finish(_add_records(settings, files, options, lambda _record, _decision: None, describe))


def _writer(unique: IO[str], duplicates: IO[str] | None, key_field: str) -> OnDecision:
    """Writes a record to --out when kept, else to --dups with what it duplicates."""

    def write(record: Record, decision: Decision) -> None:
        data = dict(record.data)
        data.setdefault(key_field, record.key)  # a derived key, so duplicate_of names a record
        if exact_copy(record, decision):
            target: IO[str] | None = duplicates
            data |= {"duplicate_of": record.key, "distance": 0, "measure": "exact", "score": 1.0}
        elif decision.inserted:
            target = unique
        else:
            target = duplicates
            match = decision.duplicate_of
            data["duplicate_of"] = None if match is None else match.key
            data["distance"] = None if match is None else match.distance
            data["measure"] = None if match is None else match.measure
            data["score"] = None if match is None else match.score
        if target is not None:
            target.write(json.dumps(data, ensure_ascii=False) + "\n")

    return write


@main.command()
@click.argument("source", metavar="IN", type=_PATHS)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where the first occurrences go (JSON lines; '-' is stdout).",
)
@click.option(
    "--dups",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where the duplicates go, with the fields duplicate_of and distance added.",
)
@input_options
@click.pass_obj
def dedup(
    settings: Settings,
    /,
    source: str,
    out: str,
    dups: str | None,
    format_: str | None,
    **opts: Any,
) -> None:
    """Copy IN without its near-duplicates (a streaming filter).

    First occurrences go to --out, duplicates to --dups. A streaming filter (records are written in
    input order, a batch at a time). The store remembers what it has seen, so a second run, or a run
    on another file, also drops what earlier runs kept. Records are written as JSON lines, whatever
    the input format.

    --out and --dups may not be IN, the database file or each other (exit 4, nothing written);
    each is written to a temporary file renamed into place once the run has decided every
    record it read, so a run that fails leaves an existing file as it was.
    """
    options = InputOptions(format_, max_text_length=settings.max_text_length, **opts)
    check_paths({"--out": out, "--dups": dups}, inputs={"IN": source}, database=settings.url)
    with contextlib.ExitStack() as stack:
        unique = stack.enter_context(output_file(out))
        duplicates = stack.enter_context(output_file(dups)) if dups else None
        describe = {"input": source, "out": out, "dups": dups}
        to_stderr = "-" in (out, dups)
        if to_stderr:  # stdout holds records: an error is not added to them as JSON
            click.get_current_context().find_root().meta[EMITTED] = True
        write = _writer(unique, duplicates, options.key_field)
        tally = _add_records(
            settings, (source,), options, write, describe, summary_to_stderr=to_stderr
        )
    _finish(tally)  # after the outputs are in place: they hold every record committed
