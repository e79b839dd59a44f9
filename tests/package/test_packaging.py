"""What the wheel says about itself: the licence file matches pyproject's licence."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_file_is_the_licence_pyproject_names() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^license = "MIT"$', pyproject, re.M)
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "simstore developers" in text
