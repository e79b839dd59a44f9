"""``simstore.io.whatif``: the what-if page escapes what it shows, loads nothing, is written whole,
and a real headless browser (Debian's ``chromium``) renders it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from simstore.errors import InvalidInput
from simstore.io import whatif as page
from simstore.policy import whatif
from simstore.policy.policies import DEFAULT_POLICY
from tests.conftest import HANG
from tests.io.test_report import chromium, png_rows, png_size
from tests.policy.test_whatif import KEYS, TEXTS

HOSTILE = '<script>alert("x")</script> & "quoted"'


def flipped(keys: list[str]) -> whatif.WhatIf:
    looser = whatif.proposal(DEFAULT_POLICY, options={"threshold": 0.45})
    return whatif.compare(TEXTS, keys=keys, current=DEFAULT_POLICY, proposed=looser)


def test_the_page_shows_each_flip_escaped_and_loads_nothing() -> None:
    result = flipped([HOSTILE + key for key in KEYS])  # the keys of every flip are shown
    html = page.render(result, database="postgresql://u:secret@h/db", namespace="<ns>",
                       preset="default", source="a.jsonl")  # fmt: skip
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;ns&gt;" in html
    assert "secret" not in html
    assert "src=" not in html and "http" not in html.replace("http-equiv", "")
    for flip in result.of_kind("merged"):
        assert flip.key.startswith(HOSTILE) and flip.key.endswith(tuple(KEYS))
    assert html.count('<div class="pair">') == len(result.flips) > 0


def test_the_page_is_refused_over_an_input_and_replaces_a_file_whole(tmp_path: Path) -> None:
    result = flipped(KEYS)
    source = tmp_path / "a.jsonl"
    source.write_text("{}\n", encoding="utf-8")
    database = f"sqlite:///{tmp_path / 's.db'}"

    def write(path: Path, inputs: dict[str, str] | None = None) -> str:
        return page.write(result, path, database=database, namespace="n", preset="p",
                          source=str(source), inputs=inputs)  # fmt: skip

    with pytest.raises(InvalidInput, match="same file as the input"):
        write(source, {"FILE": str(source)})
    with pytest.raises(InvalidInput, match="database file"):
        write(tmp_path / "s.db")
    out = tmp_path / "w.html"
    out.write_text("old", encoding="utf-8")
    html = write(out)
    assert out.read_text(encoding="utf-8") == html and html.endswith("</html>\n")


def test_a_real_browser_renders_the_page(tmp_path: Path) -> None:
    browser = chromium()
    out = tmp_path / "whatif.html"
    page.write(flipped(KEYS), out, database="sqlite:///x.db", namespace="n", preset="default",
               source="news.jsonl")  # fmt: skip
    shot = tmp_path / "whatif.png"
    ran = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1280,1000", out.as_uri()],
        capture_output=True, text=True, timeout=HANG, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert png_size(shot) == (1280, 1000)
    assert len(set(png_rows(shot))) > 200  # not a blank page (test_png_check_tells_a_blank_page)
