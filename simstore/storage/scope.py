"""What the layers above storage hold of an open store: its connections and its namespace.

The facade makes one ``Scope`` when it opens a namespace and hands it to ``simstore.io`` and
``simstore.spark``, which call storage functions with it; they never reach into the facade.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from simstore.policy.policies import Policy
from simstore.storage._connections import Connections
from simstore.text.presets import Preset


@dataclass(frozen=True)
class Scope:
    """One open namespace: where it lives and the recipe it decides by.

    :param connections: the store's connection scopes (transactions, reads, lookups).
    :param ns_id: the namespace's row id (never reused, even after a drop).
    :param namespace: the namespace's name, for messages.
    :param partition_seconds: the length of one time partition.
    :param keep: the retention window (None keeps everything).
    :param preset: the fingerprint preset the namespace's rows were made with.
    :param policy: the policy the namespace decides by.
    :param max_distance: the store's SimHash radius.
    """

    connections: Connections
    ns_id: int
    namespace: str
    partition_seconds: int
    keep: timedelta | None
    preset: Preset
    policy: Policy
    max_distance: int

    @property
    def dialect(self) -> str:
        """The database's dialect name (``sqlite``, ``postgresql``, ``mysql``)."""
        return self.connections.dialect
