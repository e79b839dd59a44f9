"""simstore: durable near-duplicate detection of text with 64-bit SimHash in SQL."""

from __future__ import annotations

from simstore.encoding import from_hex, hamming, to_hex
from simstore.errors import InvalidInput, SimstoreError
from simstore.fingerprint import Analysis, fingerprint, fingerprint_many
from simstore.presets import Preset, get_preset, presets

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "InvalidInput",
    "Preset",
    "SimstoreError",
    "__version__",
    "fingerprint",
    "fingerprint_many",
    "from_hex",
    "get_preset",
    "hamming",
    "presets",
    "to_hex",
]
