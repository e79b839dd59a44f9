"""Output files that cannot destroy data: ``check_paths`` before anything is written, then
``replaced`` to write each one.

``check_paths`` refuses an output that is the database file (for SQLite also its ``-wal``,
``-shm`` and ``-journal`` files), one of the inputs, or another output: the same path, or the
same file through a symlink or a hard link (``st_dev`` and ``st_ino``). ``replaced`` writes to a
temporary file in the target's folder and renames it into place only when the writing ended
without an error, so a failed run leaves an existing file as it was. Through a symlink the file
it points to is replaced (the link stays). Devices and pipes (``/dev/null``, a FIFO) are written
directly: there is nothing to truncate, and several outputs may name the same one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from simstore.errors import InvalidInput
from simstore.storage.db import redact

__all__ = ["check_paths", "database_files", "replaced"]

Paths = Mapping[str, "str | os.PathLike[str] | None"]
STDOUT = "-"
_SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def database_files(url: str | URL | None) -> list[str]:
    """The files of a SQLite database URL (the file, its log and shared memory); [] for a
    server, a memory database or a URL that does not parse."""
    if url is None:
        return []
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except (ArgumentError, ValueError):
        return []
    if parsed.get_backend_name() != "sqlite":
        return []
    database = parsed.database or ""
    if database.startswith("file:"):  # a URI filename: file:path?mode=ro
        database = database[len("file:") :].split("?", 1)[0]
    if database in ("", ":memory:") or database.startswith(":memory:"):
        return []
    return [database + suffix for suffix in _SQLITE_COMPANIONS]


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of an existing regular file, else None."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def _special(path: str) -> bool:
    """An existing file that is not a regular one (a device, a pipe, a socket)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not os.path.isdir(path)
    except (OSError, ValueError):
        return False


def _stream_name(path: str) -> bool:
    """``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``: an open stream, whatever it is
    redirected to (a regular file there is the shell's, written in place)."""
    return os.path.abspath(path).startswith(("/dev/", "/proc/"))


def _same(a: str, b: str) -> bool:
    if _special(a) or _special(b):
        return False
    first, second = _identity(a), _identity(b)
    if first is not None and second is not None:
        return first == second
    return os.path.realpath(a) == os.path.realpath(b)


def check_paths(
    outputs: Paths,
    *,
    inputs: Paths | None = None,
    database: str | URL | None = None,
) -> None:
    """Refuse (InvalidInput) an output that is the database, an input or another output.

    ``outputs`` and ``inputs`` map a name to show (``--out``) to a path; None and ``-`` (stdout,
    stdin) are left out. Call it before anything is opened or written.
    """
    named = [(name, os.fspath(path)) for name, path in outputs.items() if path is not None]
    named = [(name, path) for name, path in named if path != STDOUT]
    sources = [
        (name, os.fspath(path))
        for name, path in (inputs or {}).items()
        if path is not None and os.fspath(path) != STDOUT
    ]
    store_files = database_files(database)
    for name, path in named:
        for store_file in store_files:
            if _same(path, store_file):
                which = "" if store_file == store_files[0] else f" ({store_file})"
                raise InvalidInput(
                    f"{name} {path} is the database file{which} of {redact(str(database))}: "
                    "refusing to overwrite it; write the output somewhere else"
                )
        for source, input_path in sources:
            if _same(path, input_path):
                raise InvalidInput(
                    f"{name} {path} is the same file as the input {source} {input_path}: "
                    "refusing to overwrite it; write the output somewhere else"
                )
    for index, (name, path) in enumerate(named):
        for other, other_path in named[index + 1 :]:
            if _same(path, other_path):
                raise InvalidInput(
                    f"{name} {path} and {other} {other_path} are the same file: give each "
                    "output a file of its own"
                )


def _mode_for_new_file() -> int:
    """What ``open(path, "w")`` would give a new file: 0o666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def replaced(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text stream whose contents replace ``path`` when the block ends without an error.

    Written to a temporary file in the same folder, synced and renamed over the target
    (``os.replace``); an error (or Ctrl-C) removes the temporary file and leaves ``path`` as it
    was. A device, a pipe or a stream name (``/dev/stdout``) is written directly.
    """
    target = os.path.realpath(os.fspath(path))
    if _special(target) or _stream_name(os.fspath(path)):
        # appended: /dev/stdout redirected to a file is not truncated under the shell's offset
        with open(os.fspath(path), "a", encoding=encoding) as stream:
            yield stream
        return
    folder = os.path.dirname(target)
    try:
        existing = os.stat(target)
        mode = stat.S_IMODE(existing.st_mode)
    except FileNotFoundError:
        mode = _mode_for_new_file()
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{Path(target).name}.", suffix=".tmp", dir=folder
        )
    except OSError as error:
        raise InvalidInput(f"cannot write {os.fspath(path)}: {error.strerror}") from error
    try:
        with open(handle, "w", encoding=encoding) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
