"""``simstore whatif``'s page: what a proposed recipe would flip, as one self-contained HTML file
in the report's style (``simstore.io._whatif_html``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone

from simstore.io._whatif_html import page, summary_lines
from simstore.io.outputs import check_paths
from simstore.io.report import write_page
from simstore.policy.whatif import WhatIf
from simstore.storage.db import redact

__all__ = ["render", "summary_lines", "write"]


def render(result: WhatIf, *, database: str, namespace: str, preset: str, source: str) -> str:
    """The page for ``result`` (``SimStore.whatif``), the database URL shown without its
    password."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    return page(result, database=redact(database), namespace=namespace, preset=preset,
                source=source, at=now)  # fmt: skip


def write(
    result: WhatIf,
    path: str | os.PathLike[str],
    *,
    database: str,
    namespace: str,
    preset: str,
    source: str,
    inputs: Mapping[str, str] | None = None,
) -> str:
    """``render`` written to ``path`` (refused when it is the database file or an input;
    replaced whole, never left half-written); the page is returned."""
    check_paths({"--report": path}, inputs=inputs, database=database)
    html = render(result, database=database, namespace=namespace, preset=preset, source=source)
    write_page(path, html)
    return html
