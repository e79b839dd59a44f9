"""``simstore whatif``: a namespace's texts (given, or a sample of those it keeps) decided under
its recipe and a proposed one (``simstore.policy.whatif``), and the page of what would flip, as
one self-contained HTML file in the report's style (``simstore.io._whatif_html``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from simstore.errors import InvalidInput
from simstore.io._whatif_html import page, summary_lines
from simstore.io.outputs import check_paths
from simstore.io.report import write_page
from simstore.policy import whatif
from simstore.policy.whatif import WhatIf
from simstore.storage import reads
from simstore.storage.db import redact
from simstore.storage.scope import Scope
from simstore.validate import check_int

__all__ = ["decide", "render", "summary_lines", "write"]


def decide(
    scope: Scope,
    texts: Sequence[str] | None,
    *,
    keys: Sequence[str] | None = None,
    policy: str | None = None,
    options: Mapping[str, object] | None = None,
    sample: int = 1000,
) -> WhatIf:
    """``SimStore.whatif``: ``texts`` (None: the latest ``sample`` kept texts the namespace
    stores, short texts only) decided under the namespace's recipe and under the change."""
    proposed = whatif.proposal(scope.policy, policy=policy, options=options)
    if texts is None:
        check_int("sample", sample, lowest=1)
        kept = reads.kept_texts(scope, sample)
        if not kept:
            raise InvalidInput(
                f"namespace {scope.namespace!r} keeps no text to sample (it is empty, or "
                "holds long texts only, whose text is not kept): give the texts to decide"
            )
        keys, texts = [key for key, _text in kept], [text for _key, text in kept]
    return whatif.compare(
        texts, keys=keys, preset=scope.preset, current=scope.policy, proposed=proposed,
        max_distance=scope.max_distance,
    )  # fmt: skip


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
