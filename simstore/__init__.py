"""simstore: durable near-duplicate detection of text with 64-bit SimHash fingerprints in SQL.

The top level holds what most users need; everything else lives in submodules
(``simstore.migrate``, ``simstore.similarity``, ``simstore.errors``, ...).
"""

from __future__ import annotations

from simstore._version import __version__
from simstore.encoding import from_hex, hamming, to_hex
from simstore.errors import InvalidInput, SimstoreError
from simstore.fingerprint import Analysis, analyze, fingerprint, fingerprint_many
from simstore.presets import Preset, get_preset, presets
from simstore.store import Decision, Match, SimStore

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
