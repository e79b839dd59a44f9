"""The seeds' two-day window: N texts (or bare fingerprints) kept over two days, then query and
add latency cold and warm, bytes per kept text, memory and the purge of day 1.

    python -m benchmarks window [--rows N] ...                     bare fingerprints, SQLite
    python -m benchmarks window --policy default [--rows N] ...    text in, default policy, SQLite
    python -m benchmarks window --url SERVER_URL [--rows N] ...    text in, PostgreSQL or MariaDB
    python -m benchmarks tail --rows N --before CHECKOUT           the slowest warm queries

``bare``, ``default`` and ``server`` hold each setting's run (``--help`` after the options above
shows its own), ``fill`` the composed texts' fill through ``SimStore.load`` and its checks, and
``tail`` the query tail of two checkouts on the default setting's file. The submodules are
imported when run, so that ``tail``'s child step imports no more of simstore than it needs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Run the setting the options name: ``--url`` a server, ``--policy default`` SQLite with
    text in, otherwise SQLite with bare fingerprints."""
    args = list(sys.argv[1:] if argv is None else argv)
    policy = None
    if "--policy" in args:
        at = args.index("--policy")
        policy = args[at + 1] if at + 1 < len(args) else ""
        del args[at : at + 2]
    if policy not in (None, "bare", "default"):
        raise SystemExit(f"--policy is bare or default, not {policy!r}")
    if any(arg == "--url" or arg.startswith("--url=") for arg in args):
        if policy == "bare":
            raise SystemExit("a server window runs the default policy (--policy default)")
        from . import server

        server.main(args)
    elif policy == "default":
        from . import default

        default.main(args)
    else:
        from . import bare

        bare.main(args)
