"""The ``simstore`` group: global options declared once, the Settings they make, exit codes.

``SIMSTORE_URL`` is read here and nowhere else (through ``simstore.storage.db.default_url``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import click

from simstore._version import __version__
from simstore.errors import (
    DatabaseUnavailable,
    InvalidInput,
    KeyConflict,
    MissingExtra,
    PresetMismatch,
    SchemaOutOfDate,
    SimstoreError,
)
from simstore.policy.policies import (
    DEFAULT_POLICY,
    POLICY_NAMES,
    MinHashVerification,
    Policy,
    SimHashVerification,
    policy_with,
)
from simstore.storage.db import default_url, scrub
from simstore.validate import MAX_TEXT_LENGTH

if TYPE_CHECKING:
    from simstore.store import SimStore

EMITTED = "simstore.emitted"  # ctx.meta: a JSON document went to stdout already


@dataclass(frozen=True)
class Settings:
    """The global options, resolved once by the ``main`` group."""

    url: str
    namespace: str
    preset: str | None
    json: bool
    quiet: bool
    debug: bool
    policy: str | None = None  # None: the namespace's recorded policy (the default when new)
    threshold: float | None = None
    long_threshold: float | None = None
    policy_options: tuple[tuple[str, str], ...] = ()  # --policy-option KEY=VALUE, in order
    keep: str | None = None  # the retention window (SimStore keep): rows older never match
    max_text_length: int | None = None  # None: SimStore's default (MAX_TEXT_LENGTH)


class Failure(click.ClickException):
    """An error shown as one line ``simstore: error: ...``; exit 1 (bad records, check failed)."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"simstore: error: {self.format_message()}", err=True)


class DatabaseFailure(Failure):
    """The database is unavailable or its schema is out of date."""

    exit_code = 3


class UsageFailure(Failure):
    """A usage error of a command (unknown option, missing argument): exit 2."""

    exit_code = 2


class ExtraFailure(Failure):
    """An optional dependency is missing: exit 5, with the pip line that installs it."""

    exit_code = 5


class InputFailure(Failure):
    """Invalid input: a text, key, preset, distance or duration simstore refuses."""

    exit_code = 4


def failure_for(error: SimstoreError) -> type[Failure]:
    """How a simstore error is shown: exit 3 for the database, 4 for invalid input, else 1."""
    cause = error.__cause__ if isinstance(error.__cause__, SimstoreError) else error
    if isinstance(error, MissingExtra) or isinstance(cause, MissingExtra):
        return ExtraFailure
    if isinstance(cause, (DatabaseUnavailable, SchemaOutOfDate)):
        return DatabaseFailure
    if isinstance(cause, (InvalidInput, PresetMismatch, KeyConflict)):
        return InputFailure
    return Failure


def _without_password(message: str, url: str) -> str:
    """Belt and braces: the library redacts URLs, and a password never reaches the terminal."""
    return scrub(message, url)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program Ctrl-C stopped
EXIT_TERMINATED = 143  # 128 + SIGTERM: stopped by kill or a service manager, as Ctrl-C would
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what ``yes | head`` reports; the run did not finish


class Interrupted(Failure):
    """Ctrl-C: exit 130 (what was committed is said by the command that was interrupted)."""

    exit_code = EXIT_INTERRUPTED


class Terminated(Failure):
    """SIGTERM during ingest or dedup: exit 143, after saying what was committed."""

    exit_code = EXIT_TERMINATED


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (``simstore dedup ... | head``): exit 141 without a word.

    141 rather than 0: the command stopped before its end (the records after the closed pipe were
    not added), and 141 is what a shell shows for any program stopped by SIGPIPE, so that
    ``set -o pipefail`` scripts can tell it from a finished run and ignore it on purpose.
    stdout is pointed at /dev/null so that the interpreter's final flush cannot complain.
    """
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    raise click.exceptions.Exit(EXIT_BROKEN_PIPE)


def json_document(data: object) -> str:
    """``data`` as indented JSON, non-ASCII text as it is; a string that is not valid Unicode
    (a lone surrogate from a bad record) makes the whole document ASCII with escapes, so that
    it is still written and read back as valid JSON."""
    document = json.dumps(data, ensure_ascii=False, indent=2)
    try:
        document.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, indent=2)
    return document


def json_error(ctx: click.Context, message: str, exit_code: int) -> None:
    """Under --json, an error is a JSON document on stdout too, unless one was printed already."""
    settings = ctx.find_object(Settings)
    if settings is None or not settings.json or ctx.find_root().meta.get(EMITTED):
        return
    document = {"error": message, "exit_code": exit_code}
    with contextlib.suppress(OSError):
        click.echo(json_document(document))


class _Main(click.Group):
    """Turns simstore's errors into one line on stderr and an exit code (traceback: --debug);
    with --json also into ``{"error": ..., "exit_code": ...}`` on stdout."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke(ctx)
        except click.UsageError as error:
            # one line like every other error, with where to look, instead of click's three
            where = error.ctx.command_path if error.ctx is not None else "simstore"
            message = f"{error.format_message()} (see '{where} --help')"
            json_error(ctx, message, error.exit_code)
            raise UsageFailure(message) from error
        except click.ClickException as error:
            json_error(ctx, error.format_message(), error.exit_code)
            raise

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SimstoreError as error:
            settings = ctx.find_object(Settings)
            url = settings.url if settings else default_url()
            if settings and settings.debug:
                traceback.print_exc()
            raise failure_for(error)(_without_password(str(error), url)) from error
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None
        except BrokenPipeError:
            _quiet_broken_pipe()
            raise  # not reached
        except OSError as error:
            raise InputFailure(str(error)) from error
        except ImportError as error:
            if "pip install" not in str(error):  # not a missing extra: a bug, shown as one
                raise Failure(f"unexpected ImportError: {error}") from error
            raise Failure(str(error)) from error  # a missing extra, named with its install line
        except Exception as error:
            settings = ctx.find_object(Settings)
            if settings and settings.debug:
                raise
            message = f"unexpected {type(error).__name__}: {error} (--debug shows the traceback)"
            raise Failure(message) from error


@click.group(
    cls=_Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Exit codes:
  0  ok
  1  bad records (skipped, or the run stopped at one with --strict),
     db check failed, key not found, or an unexpected error
  2  usage error (unknown option, missing argument, unreadable file)
  3  database unavailable, or its schema is out of date (run: simstore db upgrade)
  4  invalid input (bad text, key, preset, policy, distance or duration)
  5  an optional dependency is missing: the message gives the pip line of its extra
  130  interrupted (Ctrl-C); ingest and dedup say how many records were committed
  143  terminated (SIGTERM) during ingest or dedup: as Ctrl-C, with its own code
  141  stdout was closed before the end (e.g. piped into head); nothing is printed

A TEXT that starts with '-' goes after '--', which ends the options: simstore query -- '-20% off'.

Errors are one line on stderr: "simstore: error: ..."; --debug adds the traceback. With --json
an error is also a JSON document on stdout: {"error": ..., "exit_code": ...}.""",
)
@click.version_option(__version__, prog_name="simstore")
@click.option(
    "--db",
    "url",
    metavar="URL",
    help="SQLAlchemy database URL [default: $SIMSTORE_URL, else sqlite:///simstore.db here]. "
    "SQLite files are created and upgraded on open; servers need 'simstore db upgrade' first.",
)
@click.option("--namespace", default="default", show_default=True, help="Namespace in the store.")
@click.option(
    "--preset",
    help="Fingerprint preset (see 'simstore presets'); default: the namespace's own, or "
    "'default' for a new namespace.",
)
@click.option(
    "--policy",
    type=click.Choice(POLICY_NAMES),
    help="What decides a text: 'minhash' (similarity), 'simhash-verified' (SimHash, short texts "
    "confirmed by a similarity) or 'simhash' (plain SimHash; its knob is --max-distance). "
    "Default: the namespace's recorded policy; 'minhash' for a new namespace.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    help="Short texts' similarity a duplicate must reach (minhash: jaccard, default "
    f"{MinHashVerification.threshold}; simhash-verified: default {SimHashVerification.threshold}).",
)
@click.option(
    "--long-threshold",
    type=click.FloatRange(0, 1),
    help="Long texts' estimated similarity a duplicate must reach (minhash: default "
    f"{MinHashVerification.long_threshold}; texts mostly in Chinese or Japanese use "
    f"cjk_long_threshold, default {MinHashVerification.cjk_long_threshold}, set with "
    "--policy-option).",
)
@click.option(
    "--policy-option",
    "policy_options",
    metavar="KEY=VALUE",
    multiple=True,
    help="Any option of the policy, repeatable: e.g. fold_traditional=true, strip_social=true, "
    "cjk_long_threshold=0.7; 'simstore policies' lists every policy's options with their "
    "defaults and meanings.",
)
@click.option(
    "--keep",
    metavar="DURATION",
    help="Retention window (30m, 12h, 2d, 1w): older rows never match, and 'purge' deletes them "
    "[default: none, everything matches]. On a partitioned PostgreSQL database, a window no "
    "longer than the database's silences its warning.",
)
@click.option(
    "--max-text-length",
    type=click.IntRange(min=1),
    metavar="CHARS",
    help="The longest text accepted, in characters; a longer one is refused (a bad record) "
    f"[default: {MAX_TEXT_LENGTH:,}].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no ingest/dedup summary.")
@click.option("--debug", is_flag=True, help="Log to stderr and show tracebacks of errors.")
@click.pass_context
def main(
    ctx: click.Context,
    url: str | None,
    namespace: str,
    preset: str | None,
    policy: str | None,
    threshold: float | None,
    long_threshold: float | None,
    policy_options: tuple[str, ...],
    keep: str | None,
    max_text_length: int | None,
    as_json: bool,
    quiet: bool,
    debug: bool,
) -> None:
    """simstore: durable near-duplicate detection of text with 64-bit SimHash in SQL.

    Add texts with 'ingest', filter a file with 'dedup', ask with 'query', and see why a record
    was judged a duplicate with 'explain'.
    """
    if debug:
        logging.basicConfig(
            level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(levelname)s: %(message)s"
        )
    ctx.obj = Settings(
        url or default_url(),
        namespace,
        preset,
        as_json,
        quiet,
        debug,
        policy,
        threshold,
        long_threshold,
        tuple(_option_pair(option) for option in policy_options),
        keep,
        max_text_length,
    )


def _option_pair(option: str) -> tuple[str, str]:
    key, equals, value = option.partition("=")
    if not equals or not key.strip():
        raise click.BadParameter(f"{option!r} is not KEY=VALUE", param_hint="--policy-option")
    return key.strip(), value.strip()


def requested_options(settings: Settings) -> dict[str, object]:
    """The policy options the global options give (--policy-option, --threshold, ...)."""
    options: dict[str, object] = dict(settings.policy_options)
    if settings.threshold is not None:
        options["threshold"] = settings.threshold
    if settings.long_threshold is not None:
        options["long_threshold"] = settings.long_threshold
    return options


def requested_policy(settings: Settings) -> Policy | None:
    """The policy the global options ask for; None when they name none (adopt the namespace's)."""
    options = requested_options(settings)
    if settings.policy is None and not options:
        return None
    return policy_with(settings.policy or "minhash", options)


def check_text_radius(policy: Policy, max_distance: int | None) -> None:
    """``--max-distance`` of a text command, refused where it would not decide the texts.

    Under the minhash policy a text is decided by similarity and the radius only governs bare
    fingerprints, which the CLI never adds: taking it silently would be a knob that does nothing.
    """
    if max_distance is not None and not policy.decides_texts_by_distance:
        raise InvalidInput(
            f"--max-distance is a SimHash radius, but the {policy.name} policy decides texts "
            "by similarity: give --threshold instead (or --policy simhash to decide by distance)"
        )


@contextlib.contextmanager
def open_store(
    settings: Settings, *, create: bool = False, radius: int | None = None, **options: Any
) -> Iterator[SimStore]:
    """The store the global options name; ``options`` that are None are left to SimStore.
    ``radius``: a query's own SimHash radius, checked as ``max_distance`` is but not the
    store's (a namespace records the radius that decides what it keeps).

    Only ``create`` (ingest, dedup) may make the namespace, or a SQLite file, or upgrade its
    schema; every other command opens an existing namespace and writes nothing it was not asked
    to (an unknown namespace is an error, not a new empty one).
    """
    from simstore.storage.namespaces import existing, missing_sqlite_file
    from simstore.storage.retention import parse_duration
    from simstore.store import SimStore
    from simstore.text.presets import get_preset
    from simstore.validate import MAX_NAMESPACE_LENGTH, check_name, check_radius

    given = {name: value for name, value in options.items() if value is not None}
    asked = given.get("max_distance", radius)  # the radius a text command asks for
    if _in_memory(settings.url):
        raise InvalidInput(
            f"{settings.url} is an in-memory database: it ends with this command, so nothing "
            "would be kept; give a file (sqlite:///simstore.db) or a server"
        )
    if asked is not None:
        check_radius(asked)  # bad input first
    policy = requested_policy(settings)
    # without a policy a namespace adopts its own, known once opened; a new file gets the default
    new_file = missing_sqlite_file(settings.url) is not None
    if policy is not None or new_file:
        check_text_radius(policy or DEFAULT_POLICY, asked)
    if settings.keep is not None:
        given["keep"] = parse_duration(settings.keep)
    if settings.max_text_length is not None:
        given["max_text_length"] = settings.max_text_length
    if settings.preset is not None:
        get_preset(settings.preset)
    if not create:
        check_name("namespace", settings.namespace, MAX_NAMESPACE_LENGTH)  # exit 4 first
        existing(settings.url, settings.namespace)
        given["auto_upgrade"] = False
    with SimStore(
        settings.url, namespace=settings.namespace, preset=settings.preset, policy=policy, **given
    ) as store:
        check_text_radius(store.policy, asked)  # the adopted policy's rule
        yield store


def _in_memory(url: str) -> bool:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return False  # SimStore says what is wrong with it
    database = parsed.database or ""
    return parsed.get_backend_name() == "sqlite" and (
        database in ("", ":memory:")
        or "mode=memory" in database
        or database.startswith(":memory")
        or parsed.query.get("mode") == "memory"
    )


def read_argument(value: str) -> str:
    """A TEXT argument, or all of stdin for ``-``."""
    if value != "-":
        return value
    try:
        return sys.stdin.buffer.read().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"stdin is not UTF-8: {error}") from error
