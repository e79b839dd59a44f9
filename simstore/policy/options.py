"""What each policy option means, for people: ``simstore policies``, the docs and error messages.

The options themselves, their names, types and defaults, are the policies' dataclass fields
(``simstore.policy.policies.policy_options``); this module only says in one line what each one
does, and ``option_rows`` joins the two. A test checks that every field of every policy has its
line here, so a new option cannot be listed without one.
"""

from __future__ import annotations

from typing import NamedTuple

from simstore.policy.policies import DEFAULT_POLICY, POLICIES, POLICY_NAMES, policy_options
from simstore.validate import DEFAULT_MAX_DISTANCE

_SHARED = {
    "measure": "the exact similarity of two short texts: jaccard (character 3-grams), cosine or "
    "edit (normalised edit distance)",
    "threshold": "short texts: the exact measure a duplicate must reach (also --threshold)",
}
_EVERY = {
    "expire_by_last_seen": "a duplicate found moves its kept text's time (and expiry) to its "
    "own, so retention and max_kept drop what has not been seen for longest",
}

MEANINGS: dict[str, dict[str, str]] = {
    "minhash": {
        **_SHARED,
        "short_length": "normalised characters below which a text is short: its text is kept "
        "and decided by the exact measure; longer texts by the MinHash estimate",
        "prefilter": "short texts: the MinHash estimate a candidate needs before the exact "
        "measure is computed",
        "long_threshold": "long texts: the estimated 5-gram Jaccard similarity a duplicate "
        "must reach (also --long-threshold)",
        "cjk_long_threshold": "long_threshold for a text mostly in Chinese or Japanese "
        "(none: long_threshold)",
        "min_bands": "long texts: band keys a kept text must share to be a candidate",
        "short_min_bands": "short texts: band keys a kept text must share to be a candidate",
        "minhash_bands": "the MinHash band keys of every text: bands x signature values a band "
        "(24x3; 16x4 in namespaces recorded before it, 20x3 and 32x3 possible)",
        "max_replaced": "short texts, when identity_rule is off: places where other words stand "
        "in beyond which two texts are look-alikes, not duplicates (none: no check)",
        "numbers_matter": "short texts, when identity_rule is off: a number replaced by another "
        "makes a look-alike",
        "typos": "when identity_rule is off: a small edit inside a word counts as a typo, not as "
        "a replaced word",
        "containment": "short texts under the threshold: the share of the smaller text's 3-grams "
        "the bigger must hold to be a duplicate (a header or footer added, a copy cut short; "
        "none: the measure alone)",
        "min_contained": "for containment: the smaller text's size relative to the bigger's, at "
        "least",
        "long_containment": "long texts under their threshold: the estimated share of the "
        "smaller's 5-grams the bigger must hold to be a duplicate (none: the estimate alone)",
        "opening_length": "long texts: normalised characters of the opening kept with the "
        "signature to tell one template's documents apart (none: not kept)",
        "max_opening_replaced": "long texts, when identity_rule is off: replaced places in the "
        "openings beyond which two texts are look-alikes",
        "strip_markup": "compare without roff requests and escapes, HTML tags and entities",
        "strip_social": "compare without URLs, @mentions and repost markers",
        "fold_traditional": "compare traditional Chinese as simplified (OpenCC)",
        "keep_symbols": "compare with the symbols that carry meaning (C++, C#, .NET, 1.2.3); "
        "false: word characters only",
        "identity_rule": "look-alikes are told by what differs (names, numbers, products, "
        "versions: a template filled in twice is not a duplicate); false: by how many words "
        "differ (max_replaced, max_opening_replaced)",
        "merge_identity_swaps": "texts that differ only by their identity (one template's "
        "product pages) are duplicates too",
        "cjk_replaced": "Chinese: a noun put for another (a name, product, place, time, by "
        "jieba's part-of-speech tags) makes a look-alike; other words put for others at up to "
        "this many places are an edit, as are words at four places or more, none a name (none: "
        "any Chinese word put for another makes a look-alike)",
        "shared_lines_rest": "short texts: the whole lines both hold at their start and end (a "
        "footer, a disclaimer, a signature) are set aside, and what remains must reach this "
        "3-gram Jaccard (or containment) to be a duplicate (none: the whole texts decide)",
        "cjk_titles": "long texts mostly in Chinese or Japanese: the first words in Latin letters "
        "of the opening (a command, a product) are kept, and one put for another there makes "
        "a look-alike",
        "boilerplate_texts": "short texts of several lines: a line that at least this many "
        "earlier texts carried (a footer, a disclaimer) is set aside before the text is signed "
        "and compared (none: every line counts)",
        **_EVERY,
    },
    "simhash-verified": {
        **_SHARED,
        "short_length": "normalised characters below which a text is short and verified by the "
        "exact measure",
        "short_radius": "short texts: the SimHash radius of their candidates (at least "
        "max_distance)",
        "long_radius": "long texts: the SimHash radius (none: max_distance)",
        "long_threshold": "long texts: the exact measure they must reach too (none: the radius "
        "alone decides)",
        **_EVERY,
    },
    "simhash": {
        "min_features": "a text with fewer features matches only at distance 0 (the same "
        "normalised content)",
        **_EVERY,
    },
}
"""One line per option of each policy (``POLICY_NAMES``)."""

RADIUS_MEANING = (
    f"max_distance (--max-distance, default {DEFAULT_MAX_DISTANCE}): the SimHash radius in bits "
    "within which a kept text makes a new one a duplicate; a namespace records it (a query may "
    "search wider)"
)


class OptionRow(NamedTuple):
    """One option of a policy: its name, default and meaning."""

    name: str
    default: object
    meaning: str


def summary(name: str) -> str:
    """The first line of a policy's docstring: what it does."""
    doc = POLICIES[name].__doc__ or ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split()).replace("``", "")


def option_rows(name: str) -> list[OptionRow]:
    """The options of policy ``name`` in their declared order, with defaults and meanings."""
    meanings = MEANINGS.get(name, {})
    return [
        OptionRow(option, default, meanings.get(option, ""))
        for option, default in policy_options(name).items()
    ]


def default_name() -> str:
    """The name of the default policy."""
    return DEFAULT_POLICY.name


__all__ = [
    "MEANINGS",
    "POLICY_NAMES",
    "RADIUS_MEANING",
    "OptionRow",
    "default_name",
    "option_rows",
    "summary",
]
