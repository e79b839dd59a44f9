"""The ``simstore`` command: a thin shell over the public API.

Each command opens the store (or the migration helpers), calls one public function and prints the
result, as text for people or as one JSON document with ``--json``. The logic lives in the
library; what lives here is declaring options, showing results and turning errors into exit codes:

- ``_app``: the ``main`` group, its global options, ``Settings``, errors -> exit codes;
- ``output``: tables, label/value lines, JSON emit, the JSON shapes of matches and decisions;
- ``commands.ingest``: ``ingest`` and ``dedup`` (records from ``simstore.io.records``, added by
  ``simstore.io.ingest.ingest``);
- ``commands.store``: ``query``, ``show``, ``explain``, ``purge``, ``stats``;
- ``commands.fingerprints``: ``fingerprint``, ``presets``, ``policies`` (no database);
- ``commands.report``: ``report`` (one HTML page, ``simstore.io.report``);
- ``commands.check``: ``check`` (a new source against a namespace, read-only);
- ``commands.whatif``: ``whatif`` (what a proposed recipe would flip, ``simstore.policy.whatif``);
- ``commands.db``: ``db upgrade``, ``db current``, ``db check``, ``db partition``, ``db load``;
- ``commands.spark``: ``spark dedup`` (``simstore.spark``; PySpark imported only when it runs).
"""

from simstore.cli._app import main
from simstore.cli.commands import (  # noqa: F401 - importing registers
    check,
    db,
    fingerprints,
    ingest,
    namespaces,
    report,
    spark,
    store,
    whatif,
)

__all__ = ["main"]
