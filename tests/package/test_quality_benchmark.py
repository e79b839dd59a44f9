"""The quality benchmark's pure parts: edits, labels, text extraction and policies.

The benchmark itself (``benchmarks/quality``) reads Debian and PyPI packages and runs for minutes;
these tests need neither and run in well under a second.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

QUALITY = Path(__file__).resolve().parents[2] / "benchmarks" / "quality"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(QUALITY))
    spec = importlib.util.spec_from_file_location(name, QUALITY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


edits = _load("edits")
sources = _load("sources")
build_dataset = _load("build_dataset")
evaluate = _load("evaluate")

ZH = (
    "今天天气很好，我们去公园散步吧。公园里的花都开了，很多人在拍照。"
    "晚上我们一起吃饭，然后回家休息。"
)
EN = (
    "The package manager keeps a list of installed files. It can remove them again. "
    "Configuration files are kept unless you purge the package. Ask on the list if unsure."
)


@pytest.mark.parametrize("name", sorted(edits.EDITS))
@pytest.mark.parametrize(("text", "lang"), [(ZH, "zh"), (EN, "en")])
def test_edits_are_seeded_and_bounded(name: str, text: str, lang: str) -> None:
    for level in (1, 2, 3):
        first = edits.EDITS[name](
            random.Random(level), text, lang, level, EN if lang == "en" else ZH
        )
        again = edits.EDITS[name](
            random.Random(level), text, lang, level, EN if lang == "en" else ZH
        )
        assert first == again
        if first is not None and name not in ("surface", "reorder", "typos", "mixed"):
            # added or removed material stays within the share of the level (a little slack
            # for the spaces and ellipses an edit may add); the deep edits have shares of their own
            deep = name in ("sentences_deep", "truncate_deep")
            share = (edits.DEEP_SHARE if deep else edits.SHARE)[level]
            assert abs(len(first) - len(text)) <= share * len(text) + 12


def test_wrap_reaches_about_its_share() -> None:
    before, after = edits.wrap(random.Random(1), EN, "en", 3, 0.6)
    assert 0 < len(before + after) <= 0.6 / 0.4 * len(EN)


def test_natural_labels_need_a_whole_run() -> None:
    contained = build_dataset.contained
    assert contained(
        "Keep out of reach of children.", "Caution: keep out of reach of children!", "en"
    )
    assert not contained(
        "Nostalgia isn't what it used to be.", "Entropy isn't what it used to be.", "en"
    )
    assert contained("１．做工差强人意，不影响使用", "1. 做工差强人意，不影响使用；", "zh")
    assert build_dataset.coverage(ZH, "装系统比较麻烦，建议找专业人员安装。", "zh") <= 0.4


def test_size_classes() -> None:
    assert build_dataset.size_of("a" * 10, "b" * 139) == "short"
    assert build_dataset.size_of("a" * 501, "b" * 900) == "long"
    assert build_dataset.size_of("a" * 200, "b" * 300) == "mid"
    assert build_dataset.size_of("a" * 100, "b" * 300) is None


def test_windows_join_consecutive_paragraphs() -> None:
    paragraphs = ["a" * 50, "b" * 60, "c" * 500, "d" * 40]
    found = list(build_dataset.windows(paragraphs, 100, 200))
    assert found == [(0, "a" * 50 + "\n" + "b" * 60)]


def test_roff_paragraphs() -> None:
    page = (
        ".TH LS 1\n.SH NAME\nls \\- list directory contents\n.SH DESCRIPTION\n"
        ".B ls\nlists\nfiles.\n.PP\nSecond \\fBone\\fP.\n"
    )
    assert sources.roff_paragraphs(page) == [
        "NAME",
        "ls - list directory contents",
        "DESCRIPTION",
        "ls lists files.",
        "Second one.",
    ]
    assert sources.roff_paragraphs(".so man1/other.1\n") is None


def test_sections_take_the_last_heading() -> None:
    text = "1.1. Intro\n1.2. More\n\n1.1. Intro\nbody one\n1.2. More\nbody two\n"
    assert sources.sections(text) == {"1.1": "1.1. Intro\nbody one", "1.2": "1.2. More\nbody two"}


def test_language() -> None:
    assert sources.language(ZH) == "zh"
    assert sources.language(EN) == "en"
    assert sources.language("12345 !!!") is None


def test_policy_applies_by_length() -> None:
    rule = evaluate.Rule
    policy = evaluate.Policy(140, rule(8, "jaccard3", 0.5), rule(3))
    dist = np.array([6, 6, 5, 2])
    scores = {"jaccard3": np.array([0.6, 0.4, 0.9, 0.0])}
    qlen = np.array([50, 50, 600, 600])
    assert evaluate.apply(policy, dist, scores, qlen).tolist() == [True, False, False, True]
    assert evaluate.prf(np.array([True, False]), np.array([True, True])) == (1.0, 0.5, 2 / 3)
