"""simstore's exception family: every error the library raises derives from SimstoreError."""

from __future__ import annotations


class SimstoreError(Exception):
    """Base class of every error simstore raises on purpose."""


class InvalidInput(SimstoreError, ValueError):
    """An argument has the wrong type or value (also a ValueError, so callers may catch either)."""


class InvalidType(InvalidInput, TypeError):
    """An argument has the wrong type: a TypeError as well as an InvalidInput."""


class UnknownPreset(InvalidInput):
    """A preset name that simstore does not know; the message lists the valid names."""


class PresetMismatch(SimstoreError):
    """A store was opened with a preset other than the one it was made with."""


class NamespaceDropped(SimstoreError):
    """The store's namespace was dropped after the store opened it: nothing was read or written.

    Namespace ids are never reused, so a store opened before a drop can never reach a namespace
    created after it; open a new store to create the namespace again.
    """


class PolicyMismatch(PresetMismatch):
    """A namespace was opened with a policy other than the one it records; the message names both
    and how to make a new namespace."""


class KeyConflict(SimstoreError):
    """A key already stored with a different fingerprint was added again."""


class SchemaOutOfDate(SimstoreError):
    """The database schema is behind (or ahead of) this simstore; the message names the fix."""


class DatabaseUnavailable(SimstoreError):
    """The database cannot be reached or used; the URL in the message never shows a password."""


class BatchFailed(SimstoreError):
    """A batch of ``add_many`` failed and was not written; ``committed`` items before it were."""

    def __init__(self, message: str, committed: int) -> None:
        super().__init__(message)
        self.committed = committed


class MissingExtra(SimstoreError, ImportError):
    """An optional dependency is not installed: the message names the extra and its pip line
    (also an ``ImportError``, as a failed import of it would be)."""


def missing_extra(what: str, extra: str) -> MissingExtra:
    """The error for ``what`` (e.g. "reading Parquet needs pyarrow") without ``simstore[extra]``."""
    return MissingExtra(
        f"{what}: pip install 'simstore[{extra}]' (from a checkout: pip install '.[{extra}]')"
    )
