"""simstore: durable near-duplicate detection of text with 64-bit SimHash fingerprints in SQL.

The top level holds what most users need; everything else lives in submodules
(``simstore.storage.migrate``, ``simstore.text.similarity``, ``simstore.errors``, ...).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from simstore import _moved
from simstore._version import __version__
from simstore.errors import InvalidInput, SimstoreError
from simstore.text.encoding import from_hex, hamming, to_hex
from simstore.text.fingerprint import Analysis, analyze, fingerprint, fingerprint_many
from simstore.text.presets import Preset, get_preset, presets

_moved.install(sys.modules[__name__])

if TYPE_CHECKING:
    from simstore.store import Decision, Match, SimStore

_STORE_NAMES = ("Decision", "Match", "SimStore")


def __getattr__(name: str) -> Any:
    # the store pulls in SQLAlchemy and alembic (about a second): only when it is asked for, so
    # that fingerprinting and ``simstore --help`` start fast
    if name in _STORE_NAMES:
        from simstore import store

        return getattr(store, name)
    raise AttributeError(f"module 'simstore' has no attribute {name!r}")


__all__ = [
    "Analysis",
    "Decision",
    "InvalidInput",
    "Match",
    "Preset",
    "SimStore",
    "SimstoreError",
    "__version__",
    "analyze",
    "fingerprint",
    "fingerprint_many",
    "from_hex",
    "get_preset",
    "hamming",
    "presets",
    "to_hex",
]
