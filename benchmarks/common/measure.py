"""Timing and the conditions of a run: percentiles, timers, memory, the machine, the load."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from simstore import __version__ as simstore_version

from .corpus import ROOT

T = TypeVar("T")


def percentile(samples: Iterable[float], fraction: float) -> float:
    """The sample at ``fraction`` of the sorted samples (no interpolation)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(call: Callable[[], T], samples: list[float]) -> T:
    """``call()``, its wall time in microseconds appended to ``samples``."""
    start = time.perf_counter()
    result = call()
    samples.append((time.perf_counter() - start) * 1e6)
    return result


def timed_calls(calls: Iterable[Callable[[], object]]) -> list[float]:
    """Microseconds of each call, in order."""
    samples: list[float] = []
    for call in calls:
        timed(call, samples)
    return samples


def latency(samples: list[float]) -> dict[str, int]:
    """p50 / p99 / mean in microseconds, and the count."""
    return {
        "p50_us": round(percentile(samples, 0.5)),
        "p99_us": round(percentile(samples, 0.99)),
        "mean_us": round(sum(samples) / len(samples)),
        "count": len(samples),
    }


def memory() -> dict[str, int]:
    """This process's resident memory in MiB: anonymous and file-backed (a mapped database)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) // 1024
    return fields


def rss_bytes() -> int:
    """Resident set size of this process (VmRSS), in bytes."""
    return memory().get("VmRSS", 0) * 1024 * 1024


def _proc_field(path: str, name: str) -> str:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def git(*args: str) -> str:
    """``git ARGS`` in this checkout, or ``?``."""
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """What the figures were measured on, and with which code."""
    dirty = git("status", "--porcelain", "--", "simstore", "migrations")
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "memory": _proc_field("/proc/meminfo", "MemTotal"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "numpy": version("numpy"),
        "faiss-cpu": version("faiss-cpu"),
        "simhash": version("simhash"),
        "simstore": simstore_version,
        "git": git("rev-parse", "--short", "HEAD") + (" + uncommitted simstore/" if dirty else ""),
    }


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def wait_for_quiet(minutes: float) -> str:
    """Wait (at most ``minutes``) for a 1-minute load average under 3; ``uptime``'s line."""
    deadline = time.monotonic() + minutes * 60
    while os.getloadavg()[0] > 3 and time.monotonic() < deadline:
        print(f"  load average {os.getloadavg()[0]:.2f} > 3: waiting", flush=True)
        time.sleep(30)
    return uptime()
