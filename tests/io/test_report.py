"""``simstore report``: every section, counts equal to the README's SQL recipes, everything
escaped, nothing loadable from outside the file, the CLI as a subprocess, and a real headless
browser (Debian's ``chromium``) that renders the page."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.errors import InvalidInput, InvalidType
from simstore.io import report as reporting
from simstore.io._report_html import SECTIONS, diff, tokens
from simstore.io.report import DISTANCE_MEASURE, Report, thresholds
from simstore.policy.policies import MinHashVerification, SimHashOnly, SimHashVerification
from simstore.store import SimStore
from tests.cli.test_commands import CORPUS, Cli
from tests.conftest import HANG, StoreFactory
from tests.storage.test_audit_sql import recipes

pytestmark = pytest.mark.slow  # reports rendered in a headless browser and by CLI subprocesses


def gather(store: SimStore, **options: Any) -> Report:
    """``simstore.io.report.gather`` of a store's namespace, as ``SimStore.report`` calls it."""
    return reporting.gather(store.scope, near_misses=store.near_misses, **options)


START = datetime(2030, 3, 1, 8, 0)
SLICE = 320  # records of the sample corpus: a few hundred keep each test to a few seconds
HOSTILE_KEY = "<script>alert('key')</script>"
HOSTILE_DUPLICATE = '"><img src=x onerror=alert(1)>'
URL_KEY = "https://evil.example/x.js"
HOSTILE_TEXT = (
    "<script>alert('text')</script> The night ferry to Harwick leaves at ten from pier four, "
    "tickets at the kiosk"
)


def corpus_records(count: int = SLICE) -> list[dict[str, Any]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:count]]


def fill(store: SimStore, count: int = SLICE) -> dict[str, str]:
    """A slice of the sample corpus, 15 minutes apart (so over several days), then a hostile
    kept text and two duplicates of it with hostile keys. Returns key -> text."""
    texts = {record["id"]: record["text"] for record in corpus_records(count)}
    items: list[dict[str, Any]] = [
        {"key": key, "text": text, "at": START + timedelta(minutes=15 * i)}
        for i, (key, text) in enumerate(texts.items())
    ]
    last = START + timedelta(minutes=15 * len(items))
    hostile = {
        HOSTILE_KEY: HOSTILE_TEXT,
        HOSTILE_DUPLICATE: HOSTILE_TEXT + " today",
        URL_KEY: HOSTILE_TEXT.replace("ten", "ten sharp"),
    }
    items += [{"key": k, "text": t, "at": last} for k, t in hostile.items()]
    decided = list(store.add_many(items, batch_size=100))
    assert not decided[-2].inserted and not decided[-1].inserted  # both hostile keys duplicates
    return texts | hostile


class _Page(HTMLParser):
    """What a page is made of: tags, attributes, section ids, text outside <style>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.texts: list[str] = []
        self.styles: list[str] = []
        self.sections: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._open.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]
        if tag == "section":
            self.sections += [value or "" for name, value in attrs if name == "id"]

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        (self.styles if self._open and self._open[-1] == "style" else self.texts).append(data)


def parsed(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def assert_self_contained(html: str) -> None:
    """Nothing a browser would load: no script, no embedded or linked resource, no URL in an
    attribute or in CSS; 'http://' and 'https://' appear only inside escaped text."""
    page = parsed(html)
    loaders = {"script", "link", "img", "iframe", "object", "embed", "base", "frame", "audio",
               "video", "source", "image", "use", "picture", "meta"}  # fmt: skip
    assert not (set(page.tags) & loaders - {"meta"}), set(page.tags) & loaders
    for name, value in page.attributes:
        assert not name.startswith("on"), name
        if name in {"src", "href", "xlink:href", "action", "srcset", "poster", "data", "content"}:
            allowed = value.startswith("#") or (name == "content" and "://" not in value)
            assert allowed, (name, value)
    style = "".join(page.styles).lower()
    assert "url(" not in style and "@import" not in style
    for scheme in ("http://", "https://"):
        in_text = sum(text.count(scheme) for text in page.texts)
        assert html.count(scheme) == in_text, f"{scheme} outside escaped text"


def section_html(html: str, ident: str) -> str:
    start = html.index(f'<section id="{ident}">')
    return html[start : html.index("</section>", start)]


def test_every_section_is_there(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    # a long text (over short_length) and a copy: decided by the estimate, drawn at its threshold
    long = " ".join(f"Paragraph {n} of the harbour authority's annual notice." for n in range(24))
    store.add(long, key="notice", at=START)
    store.add(long + " Updated.", key="notice-again", at=START + timedelta(minutes=1))
    html = store.report(now=START + timedelta(days=10))
    page = parsed(html)
    assert page.sections == [ident for ident, _title in SECTIONS]
    assert html.count("<svg") >= 3  # duplicates per day, and a score and a distance histogram
    scores = section_html(html, "scores")
    assert 'class="mark"' in scores  # the policy's thresholds are drawn
    assert "short texts 0.55" in scores and "long texts 0.7" in scores
    nearest = section_html(html, "nearest")
    assert nearest.count('class="pair"') >= 5 and " explain d" in nearest
    assert "not stored: simstore never keeps the text of a duplicate" in nearest
    clusters = section_html(html, "clusters")
    assert " explain " in clusters and "2030-03-0" in clusters
    assert "not recorded" in section_html(html, "counts")  # replays write nothing
    assert_self_contained(html)


def test_counts_equal_the_sql_recipes(make_store: StoreFactory, engine: Engine) -> None:
    store = make_store()
    fill(store)
    report = gather(store, now=START + timedelta(days=10))
    sql = {
        name: text.replace("n.name = 'default'", f"n.name = '{store.namespace}'")
        for name, text in recipes(engine.dialect.name).items()
    }
    with engine.connect() as connection:
        rejected = connection.execute(sa.text(sql["rejected"])).all()
        per_day = connection.execute(sa.text(sql["per-day"])).all()
        clusters = connection.execute(sa.text(sql["clusters"])).all()
    stats = store.stats()
    assert len(per_day) >= 3  # the slice spans several days
    assert report.duplicates == len(rejected) == stats.duplicates > 0
    assert report.decisions == stats.decisions == SLICE + 3
    assert report.kept == report.kept_rows == stats.kept
    days = [(day.day, day.duplicates) for day in report.days if day.duplicates]
    assert days == [(str(day)[:10], int(count)) for day, count in per_day]
    assert [(c.key, c.size) for c in report.clusters] == [(k, int(n)) for k, n in clusters]
    assert sum(m.duplicates for m in report.measures) == report.duplicates
    score_histograms = [h for h in report.histograms if h.unit == "score"]
    scored = sum(m.duplicates for m in report.measures if m.measure != DISTANCE_MEASURE)
    assert sum(h.total for h in score_histograms) == scored
    html = store.report(now=START + timedelta(days=10))
    for day, count in per_day:
        assert f"<td>{str(day)[:10]}</td>" in html and f"{int(count):,}" in html


def test_hostile_text_is_escaped(make_store: StoreFactory) -> None:
    store = make_store(namespace="<u>ns</u>")
    texts = fill(store, 40)
    html = store.report(texts=texts)
    assert "<script" not in html.lower() and "<img" not in html and "<u>" not in html
    assert "&lt;script&gt;alert(&#x27;key&#x27;)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;u&gt;ns&lt;/u&gt;" in html
    assert URL_KEY in html  # as text: the check below tells text from a reference
    assert_self_contained(html)
    # the reference check can fail: a loadable reference is caught
    for bad in ('<img src="https://evil.example/a.png">', "<style>@import 'x.css';</style>",
                '<a href="http://evil.example/">x</a>', "<script>1</script>"):  # fmt: skip
        with pytest.raises(AssertionError):
            assert_self_contained(html.replace("</main>", bad + "</main>"))


def test_pairs_nearest_the_threshold_with_both_texts(make_store: StoreFactory) -> None:
    store = make_store()
    texts = fill(store)
    asked: list[frozenset[str]] = []

    def source(wanted: frozenset[str]) -> dict[str, str]:
        asked.append(wanted)
        return {key: texts[key] for key in wanted if key in texts}

    report = gather(store, sample=12, texts=source)
    # the keys of the sampled pairs only: two a pair nearest a threshold, and a refused pair's
    # whose texts the store does not keep
    assert len(report.nearest) == 12 and len(asked) == 1
    assert len(asked[0]) <= 2 * (len(report.nearest) + len(report.refused))
    margins = [abs(near.margin) for near in report.nearest if near.measure != DISTANCE_MEASURE]
    assert margins == sorted(margins)  # nearest first
    everything = gather(store, sample=10_000)
    measured = [n for n in everything.nearest if n.measure != DISTANCE_MEASURE]
    assert margins[0] == min(abs(near.margin) for near in measured)
    assert all(near.source_new is not None for near in report.nearest)
    html = store.report(sample=12, texts=source)
    assert "<ins>" in html and "<del>" in html
    short = [near for near in report.nearest if near.kept_text is not None]
    assert short, "short kept texts keep their normalised text"
    without = store.report(sample=12)
    # the duplicates' own texts are never stored: their section shows no diff without texts
    # (the refused section after it compares two kept texts, which the store does keep)
    nearest_section = without[without.index('id="nearest"') : without.index('id="refused"')]
    assert "<ins>" not in nearest_section and "--texts" in nearest_section


def test_since_limits_to_recent_decisions(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    everything = gather(store)
    end = START + timedelta(minutes=15 * SLICE)
    recent = gather(store, since="1d", now=end)
    assert 0 < recent.decisions < everything.decisions
    assert {day.day for day in recent.days} <= {f"{end - timedelta(days=1):%Y-%m-%d}",
                                                f"{end:%Y-%m-%d}"}  # fmt: skip
    assert gather(store, since="1d", now=end + timedelta(days=30)).decisions == 0
    empty = store.report(since="1d", now=end + timedelta(days=30))
    assert "No decisions in this period." in empty
    assert [ident for ident in parsed(empty).sections] == [ident for ident, _ in SECTIONS]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"since": "soon"}, InvalidInput),
        ({"since": "-1d"}, InvalidInput),
        ({"sample": 0}, InvalidInput),
        ({"sample": "5"}, InvalidType),
        ({"clusters": 0}, InvalidInput),
        ({"texts": 5}, InvalidType),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], error: type[Exception]) -> None:
    with SimStore("sqlite://") as store, pytest.raises(error):
        store.report(**options)


def test_report_written_to_a_path(tmp_path: Path) -> None:
    with SimStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        fill(store, 30)
        html = store.report(tmp_path / "r.html")
        assert (tmp_path / "r.html").read_text(encoding="utf-8") == html
        with pytest.raises(InvalidInput, match="cannot write the report"):
            store.report(tmp_path / "missing" / "r.html")


def test_thresholds_of_each_policy() -> None:
    scores, radii = thresholds(MinHashVerification(), 3)
    assert {k: [t.value for t in v] for k, v in scores.items()} == {
        "jaccard": [0.55],
        "minhash": [0.70, 0.60],
        # the containment rules (short texts' exact one, long texts' from the estimate) have lines
        "containment": [0.8, 0.95],
    }
    scores, radii = thresholds(SimHashVerification(threshold=0.7), 3)
    assert [t.value for t in scores["jaccard"]] == [0.7] and [t.value for t in radii] == [7, 3]
    assert thresholds(SimHashOnly(), 5) == ({}, thresholds(SimHashOnly(), 5)[1])
    assert [t.value for t in thresholds(SimHashOnly(), 5)[1]] == [5]


def test_simhash_policy_report(make_store: StoreFactory) -> None:
    store = make_store(policy="simhash", max_distance=6)
    fill(store, 120)
    report: Report = gather(store)
    assert [m.measure for m in report.measures] == [DISTANCE_MEASURE]
    assert all(near.measure == DISTANCE_MEASURE for near in report.nearest)
    html = store.report()
    assert "radius &lt;= 6" in section_html(html, "scores")


def test_diff_by_word_in_english_and_by_character_in_chinese() -> None:
    assert tokens("the cat sat") == ["the", " ", "cat", " ", "sat"]
    assert tokens("刚入手了咖啡机 ok") == ["刚", "入", "手", "了", "咖", "啡", "机", " ", "ok"]
    left, right = diff("the cat sat", "the dog sat")
    assert left == "the <del>cat</del> sat" and right == "the <ins>dog</ins> sat"
    left, right = diff("刚入手了咖啡机", "刚入手了面包机")
    assert left == "刚入手了<del>咖啡</del>机" and right == "刚入手了<ins>面包</ins>机"
    left, right = diff("a <b> c", "a <i> c")
    assert left == "a <del>&lt;b&gt;</del> c"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def write_slice(folder: Path, count: int = SLICE) -> Path:
    path = folder / "slice.jsonl"
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:count]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_report(cli: Cli, tmp_path: Path) -> None:
    source = write_slice(tmp_path)
    assert cli("--quiet", "ingest", str(source)).returncode == 0
    ran = cli("report", "--out", "report.html", "--sample", "20")
    assert ran.returncode == 0, ran.stderr
    assert "wrote the report of namespace default to report.html" in ran.stdout
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert parsed(html).sections == [ident for ident, _title in SECTIONS]
    nearest_part, refused_part = html.split('id="refused"')
    assert nearest_part.count('class="pair"') == 20
    assert 1 <= refused_part.count('class="pair"') <= 20  # both sides of the thresholds, bounded
    assert_self_contained(html)
    both = cli("--json", "report", "--out", "-", "--texts", str(source), "--sample", "5")
    assert both.returncode == 0 and both.stdout.startswith("<!DOCTYPE html>")
    assert both.stdout.split('id="refused"')[0].count('class="pair"') == 5
    assert "<ins>" in both.stdout
    summary = json.loads(cli("--json", "report", "--out", "r.html").stdout)
    assert summary["out"] == "r.html" and summary["bytes"] > 10_000
    for bad in (("--since", "soon"), ("--since", "0d"), ("--sample", "0"), ("--clusters", "0")):
        refused = cli("report", "--out", "x.html", *bad)
        assert refused.returncode == 4 and "simstore: error:" in refused.stderr, bad
    assert not (tmp_path / "x.html").exists()
    unknown = cli("--namespace", "nope", "report", "--out", "x.html")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    assert cli("report", "--help", db=None).returncode == 0


# --- a real browser ---------------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium (``.ci/run`` installs it); missing: a skip, but a failure in CI."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("SIMSTORE_REQUIRE_SERVERS") == "1":
            pytest.fail("chromium is required in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return str(found)


def png_rows(path: Path) -> Iterator[bytes]:
    """The filtered scanlines of an 8-bit RGB or RGBA PNG (stdlib only: zlib over IDAT)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and colour in (2, 6)
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    stride = 1 + width * (3 if colour == 2 else 4)
    assert len(pixels) == stride * height
    for row in range(height):
        yield pixels[row * stride : (row + 1) * stride]


def png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return int(width), int(height)


def test_a_real_browser_renders_the_report(tmp_path: Path) -> None:
    browser = chromium()
    with SimStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        texts = fill(store, 200)
        store.report(tmp_path / "report.html", sample=20, texts=texts)
    shot = tmp_path / "report.png"
    ran = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1280,2000", (tmp_path / "report.html").as_uri()],
        capture_output=True, text=True, timeout=HANG, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 20_000
    assert png_size(shot) == (1280, 2000)
    # a blank or single-colour page has a handful of distinct scanlines (one per PNG filter)
    distinct = set(png_rows(shot))
    assert len(distinct) > 200, len(distinct)


def test_png_check_tells_a_blank_page(tmp_path: Path) -> None:
    """The screenshot check can fail: a single-colour PNG has few distinct rows."""
    width, height = 64, 40
    raw = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    blank = tmp_path / "blank.png"
    blank.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )  # fmt: skip
    assert png_size(blank) == (width, height) and len(set(png_rows(blank))) == 1


def test_a_removed_kept_key_is_said_so(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store, 120)
    before = gather(store)
    biggest = before.clusters[0]
    assert biggest.kept_at is not None and before.orphaned == 0
    assert store.remove(biggest.key)
    after = gather(store, sample=10_000)
    assert after.orphaned == biggest.size - 1
    gone = [cluster for cluster in after.clusters if cluster.key == biggest.key]
    assert gone and gone[0].kept_at is None and gone[0].text is None
    pairs = [near for near in after.nearest if near.duplicate_of == biggest.key]
    assert pairs and not any(near.kept_row for near in pairs)
    html = store.report(sample=10_000)
    assert "the kept row has since been removed or purged" in section_html(html, "clusters")


def test_reads_aggregates_and_bounded_samples_only(make_store: StoreFactory) -> None:
    """Every query the report makes over the namespace's rows aggregates them or is bounded (a
    LIMIT, or keys of the sample): none reads the namespace row by row."""
    store = make_store()
    fill(store, 120)
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(" ".join(statement.split()).lower())

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        report = gather(store, sample=5, clusters=3)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert len(report.nearest) == 5 and len(report.clusters) == 3
    reads = [s for s in statements if s.startswith("select") and "simstore_" in s]
    assert len(reads) >= 6
    unbounded = [
        statement
        for statement in reads
        if not ("count(" in statement or " limit " in statement or " in (" in statement)
        # one kept key's row: (ns_id, key) is unique (the refused pairs' sample, one key each)
        and not re.search(r"simstore_fingerprints\.[\"`]?key[\"`]? = ", statement)
    ]
    assert unbounded == [], set(unbounded)


def test_long_texts_clusters_show_their_text_when_the_source_is_given(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    long = " ".join(f"Paragraph {n} of the harbour authority's annual notice." for n in range(24))
    store.add(long, key="notice")
    store.add(long + " Updated.", key="notice-again")
    [cluster] = gather(store, clusters=1).clusters
    assert (cluster.key, cluster.size, cluster.text) == ("notice", 2, None)  # not stored
    [given] = gather(store, clusters=1, texts={"notice": long}).clusters
    assert given.text is not None and "harbour authority" in given.text
