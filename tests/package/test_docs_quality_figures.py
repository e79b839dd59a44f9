"""The Detection quality section of docs/policies.md shows what the quality benchmark printed.

The reference is the benchmark's own output, kept in ``benchmarks/results/`` (which file holds
which column is written in ``benchmarks/results/INDEX.md``): every figure of the section's tables
is read back from those files, so a figure edited by hand, or a column left over from an earlier
run, fails here. Running the benchmark again and copying its figures is the way to change them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
GROUPS = ("zh-short", "zh-mid", "zh-long", "en-short", "en-mid", "en-long", "all")

# benchmarks/results/INDEX.md: the default's tables, the stream without the memory of
# boilerplate, and recipe 1's columns ("the default before recipe 2").
DEFAULT = "quality-test-all-classes-skeleton-2026-12-06.txt"
DEFAULT_OLD_CLASSES = "quality-test-old-classes-skeleton-2026-12-06.txt"
NO_MEMORY = "quality-test-all-classes-boilerplate_texts-none-2026-12-06.txt"
RECIPE_1 = "quality-test-all-classes-default-2026-12-06.txt"
RECIPE_1_OLD_CLASSES = "quality-test-old-classes-default-2026-12-06.txt"

# the per-class tables' rows: the benchmark's kinds each row adds up (of the duplicates in the
# first table, of the non-duplicates in the second: "natural" is a kind of both)
KINDS = {
    "a sentence added": ["add_sentence"],
    "a sentence removed": ["remove_sentence"],
    "30-40% of the sentences added or removed": ["sentences_deep"],
    "sentences reordered": ["reorder"],
    "a header or footer added": ["boilerplate"],
    "a recurring footer added (short and mid texts)": ["footer_added"],
    "cut to 80-90%": ["truncate"],
    "cut to 60-70%": ["truncate_deep"],
    "typos, English": ["typos"],
    "typos, Chinese characters": ["cjk_typos"],
    "2-10% of ordinary words replaced": ["replace_words"],
    "punctuation, case, width, whitespace": ["surface"],
    "a repost marker or @mentions in front": ["repost"],
    "two or three of these": ["mixed"],
    "natural copies (found in the sources)": ["natural"],
    "a man page re-wrapped": ["man_reflow"],
    "a table in box or ASCII lines": ["table_box_ascii"],
    "a man page, copyright file or package description edited": [
        "copyright:edit",
        "man:edit",
        "package:edit",
    ],
    "a package description with another package's name": ["sibling_package"],
    "a version bumped": ["version_bump"],
    "another name swapped in everywhere": ["sibling_name"],
    "a language pack for another language": ["sibling_language"],
    "a man page with another command's name": ["sibling_command"],
    "`C++`, `C#`, `.NET`, `--verbose` against `C`, `NET`, `-v`": ["symbol"],
    "short look-alikes of one template": ["lookalike"],
    "sibling package descriptions": ["package_siblings"],
    "copyright files of one licence": ["copyright"],
    "man pages of one family, rendered or raw roff": ["man_family", "man_roff"],
    "texts under one recurring footer": ["recurring_footer"],
    "texts sharing a footer, a phrase, a template or a table frame": [
        "shared_footer",
        "shared_phrase",
        "template",
        "table_frame",
    ],
    "unrelated, nearest or adjacent texts": ["random", "nearest", "adjacent", "natural"],
}

Triple = tuple[float, float, float]


@dataclass
class Run:
    """What one run of ``python -m benchmarks quality`` printed."""

    pairs: dict[str, Triple] = field(default_factory=dict)
    pairs_old_classes: dict[str, Triple] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    stream: dict[str, Triple] = field(default_factory=dict)
    kinds: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    corpus: str = ""
    stream_texts: int = 0


def _read_run(name: str) -> Run:
    run = Run()
    section = ""
    for line in (RESULTS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line.split()[1]
            if section == "2.":
                run.stream_texts = int(line.split()[3])
            continue
        words = line.split()
        if section == "1." and words and words[0] in GROUPS:
            cells = line.split("|")
            run.pairs[words[0]] = _triple(cells[1].split()[:3])
            run.pairs_old_classes[words[0]] = _triple(cells[2].split())
            counted = re.search(r"\(\s*(\d+) dups", line)
            if counted:
                run.duplicates[words[0]] = int(counted.group(1))
        elif section == "1." and len(words) == 4 and words[1] in ("dup", "not"):
            run.kinds[words[1], words[0].lstrip("*+")] = (int(words[2]), float(words[3]))
        elif section == "2." and words and words[0] in GROUPS:
            run.stream[words[0]] = _triple(words[1:4])
        elif section == "3." and line.startswith("reported duplicates"):
            run.corpus = line
    return run


def _triple(words: list[str]) -> Triple:
    precision, recall, f1 = (float(word) for word in words)
    return precision, recall, f1


def _figures(cell: str) -> Triple:
    """``.979 / .811 / **.888**`` as three numbers."""
    precision, recall, f1 = (float(part.strip(" *")) for part in cell.split("/"))
    return precision, recall, f1


def _section() -> str:
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    start = text.index("## Detection quality")
    end = text.index("\n### What it costs", start)
    return text[start:end]


def _tables(section: str) -> list[list[list[str]]]:
    """Each markdown table of the section as rows of cells, the header row and rule left out."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*section.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            tables.append([row for row in rows[2:]])
            rows = []
    return tables


def _close(shown: Triple, printed: Triple) -> bool:
    """The docs' figures are the printed ones rounded to at most three places."""
    return all(abs(a - b) <= 0.0005 for a, b in zip(shown, printed, strict=True))


@pytest.fixture(scope="module")
def tables() -> list[list[list[str]]]:
    return _tables(_section())


def test_the_groups_table_is_the_default_and_recipe_1_as_printed(
    tables: list[list[list[str]]],
) -> None:
    default, recipe_1 = _read_run(DEFAULT), _read_run(RECIPE_1)
    rows = tables[0]
    assert [row[0] for row in rows] == list(GROUPS)
    for group, duplicates, pairs, pairs_1, stream, stream_1 in rows:
        if group != "all":
            assert int(duplicates.replace(",", "")) == default.duplicates[group], group
        else:
            assert int(duplicates.replace(",", "")) == sum(default.duplicates.values())
        assert _close(_figures(pairs), default.pairs[group]), (group, pairs)
        assert _close(_figures(pairs_1), recipe_1.pairs[group]), (group, pairs_1)
        assert _close(_figures(stream), default.stream[group]), (group, stream)
        assert _close(_figures(stream_1), recipe_1.stream[group]), (group, stream_1)


def test_the_memory_table_is_the_stream_with_and_without_it(
    tables: list[list[list[str]]],
) -> None:
    default, no_memory = _read_run(DEFAULT), _read_run(NO_MEMORY)
    rows = tables[1]
    assert [row[0] for row in rows] == list(GROUPS)
    for group, without, with_memory in rows:
        assert _close(_figures(without), no_memory.stream[group]), (group, without)
        assert _close(_figures(with_memory), default.stream[group]), (group, with_memory)


def test_the_table_without_look_alikes_is_the_old_classes_as_printed(
    tables: list[list[list[str]]],
) -> None:
    default, recipe_1 = _read_run(DEFAULT), _read_run(RECIPE_1)
    rows = tables[2]
    assert [row[0] for row in rows] == list(GROUPS)
    for group, pairs, pairs_1 in rows:
        assert _close(_figures(pairs), default.pairs_old_classes[group]), (group, pairs)
        assert _close(_figures(pairs_1), recipe_1.pairs_old_classes[group]), (group, pairs_1)

    stream = re.search(
        r"In the stream of these texts \(([\d,]+)\): (.+?), recipe 1 (.+?)\.\n", _section()
    )
    assert stream is not None
    assert int(stream.group(1).replace(",", "")) == _read_run(DEFAULT_OLD_CLASSES).stream_texts
    assert _close(_figures(stream.group(2)), _read_run(DEFAULT_OLD_CLASSES).stream["all"])
    assert _close(_figures(stream.group(3)), _read_run(RECIPE_1_OLD_CLASSES).stream["all"])


def _share(run: Run, label: str, kinds: list[str]) -> tuple[int, float]:
    """The kinds' pairs and the share of them called duplicates.

    A share printed to three places of a kind under 1,000 pairs gives back its exact count.
    """
    assert all(run.kinds[label, kind][0] < 1000 for kind in kinds)
    pairs = sum(run.kinds[label, kind][0] for kind in kinds)
    called = sum(round(run.kinds[label, kind][0] * run.kinds[label, kind][1]) for kind in kinds)
    return pairs, called / pairs


def test_the_class_tables_are_each_kinds_share_as_printed(
    tables: list[list[list[str]]],
) -> None:
    default, recipe_1 = _read_run(DEFAULT), _read_run(RECIPE_1)
    rows = [("dup", row) for row in tables[3]] + [("not", row) for row in tables[4]]
    assert sorted(row[0] for _, row in rows) == sorted(KINDS)
    # every kind the benchmark prints is in exactly one row
    shown = [(label, kind) for label, row in rows for kind in KINDS[row[0]]]
    assert sorted(shown) == sorted(default.kinds)
    for label, (name, pairs, share, share_1) in rows:
        kinds = KINDS[name]
        total, expected = _share(default, label, kinds)
        assert int(pairs.replace(",", "")) == total, name
        assert abs(float(share) - expected) <= 0.0005, (name, share, round(expected, 4))
        assert abs(float(share_1) - _share(recipe_1, label, kinds)[1]) <= 0.0005, (name, share_1)


def test_the_sample_corpus_figures_are_as_printed() -> None:
    sentence = re.search(r"\*\*The sample corpus\*\*.+?\)\.\n", _section(), re.DOTALL)
    assert sentence is not None
    shares = re.findall(r"(\d+\.\d)%", sentence.group(0))
    printed = [
        re.findall(r"\((\d+\.\d)%\)", run.corpus)
        for run in (_read_run(DEFAULT), _read_run(RECIPE_1))
    ]
    # crossing and found, default then recipe 1, in the order the sentence gives them
    assert shares == [printed[0][0], printed[1][0], printed[0][1], printed[1][1]]
