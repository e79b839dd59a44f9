"""Old module paths of 0.3, kept importable with a ``DeprecationWarning`` until 0.5.

``import simstore.verify`` (or ``from simstore.verify import ...``) still works and gives the very
module at its new path (``simstore.policy.policies``), so ``isinstance`` checks and module state are
shared; only the first import under the old name warns.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

MOVED = {
    f"simstore.{name}": f"simstore.{layer}.{name}"
    for layer, names in {
        "text": ("presets", "fingerprint", "minhash", "similarity", "encoding"),
        "policy": ("batch", "probes"),
        "storage": (
            "schema",
            "db",
            "locking",
            "partitions",
            "retention",
            "maintenance",
            "migrate",
            "namespaces",
        ),
        "io": ("records", "ingest", "export", "handover", "report"),
    }.items()
    for name in names
} | {
    "simstore.verify": "simstore.policy.policies",
    "simstore.policy.verify": "simstore.policy.policies",
    "simstore.policy.validate": "simstore.validate",
}
"""Each public module path that moved: old dotted name -> new dotted name."""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module under its old name and hands out the module at its new path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a throwaway module: exec_module swaps in the real one

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} is now {new}; the old path will be removed in 0.5",
            DeprecationWarning,
            stacklevel=2,
        )
        # the import system reads the module back from sys.modules once this returns
        sys.modules[module.__name__] = importlib.import_module(new)


class Package(types.ModuleType):
    """The ``simstore`` package: an import of an old path must not shadow a top-level function.

    ``simstore.presets`` and ``simstore.fingerprint`` are functions; the import system sets the
    package's attribute to the module after ``import simstore.presets``, which this refuses.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and callable(self.__dict__.get(name)):
            return
        super().__setattr__(name, value)


def install(package: types.ModuleType) -> None:
    """Put the finder on ``sys.meta_path`` (once) and guard the package's functions."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
    package.__class__ = Package
