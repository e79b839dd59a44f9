"""Running one step of a benchmark against another simstore checkout (``--before DIR``).

The step runs in a child process whose ``simstore`` is the checkout's and whose ``benchmarks``
is this tree's: ``simstore`` is imported first with the checkout at the front of ``sys.path``
(its submodules then come from the checkout's package), then this tree is put in front for
``benchmarks``. The child prints its figures as JSON on its last line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .corpus import ROOT

_BOOT = """
import runpy, sys
checkout, root, module = sys.argv[1:4]
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.path.insert(0, checkout)
import simstore
sys.path.insert(0, root)
sys.argv = [module, *sys.argv[4:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def run_in(checkout: Path, module: str, *arguments: str) -> dict[str, Any]:
    """Run ``python -m MODULE ARGUMENTS`` with ``checkout``'s simstore; its last line as JSON."""
    command = [sys.executable, "-c", _BOOT, str(checkout), str(ROOT), module, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{module} in {checkout} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
