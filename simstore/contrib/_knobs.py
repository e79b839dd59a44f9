"""The decision knobs of the Flask and Django settings, with the same meaning as the CLI's.

``POLICY`` names the policy (``simstore.policy.verify.policy_from``), ``THRESHOLD`` is its
similarity
threshold, ``MAX_DISTANCE`` the SimHash radius. Under a policy that decides texts by similarity
(``minhash``) the radius only governs bare fingerprints, so a radius set there is logged as a
warning that names the knob that does decide, never taken silently.
"""

from __future__ import annotations

import logging
from typing import Any

from simstore.policy.verify import policy_from

log = logging.getLogger("simstore")


def store_knobs(
    policy: str | None, threshold: float | None, max_distance: int | None, setting: str
) -> dict[str, Any]:
    """``SimStore`` keyword arguments for these settings; ``setting`` is how the host names one
    (``"SIMSTORE_{}"``, ``'SIMSTORE["{}"]'``), for the warning."""
    chosen = policy_from(policy or "minhash", threshold=threshold)
    knobs: dict[str, Any] = {"policy": chosen}
    if max_distance is not None:
        if not chosen.decides_texts_by_distance:
            log.warning(
                "%s is the SimHash radius, but the %s policy decides texts by similarity: it "
                "only applies to bare fingerprints (set %s instead, or %s = 'simhash')",
                setting.format("MAX_DISTANCE"),
                chosen.name,
                setting.format("THRESHOLD"),
                setting.format("POLICY"),
            )
        knobs["max_distance"] = max_distance
    return knobs
