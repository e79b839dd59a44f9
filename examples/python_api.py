"""A short tour of simstore's Python API on a temporary SQLite file.

Run: ``python examples/python_api.py`` (nothing to set up; the file is deleted at the end).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from simstore import fingerprint, hamming, to_hex
from simstore.store import Decision, SimStore

NEWS = (
    "The Lakeside council approved a new cycle lane along the river on Tuesday evening, after a "
    "public consultation that drew more than two thousand comments. Work starts in April and "
    "should take about four months; the cost is shared between the city and the regional "
    "transport fund. Shop owners on Mill Street asked for loading bays to be kept, and the "
    "council said the final design would include them."
)
NEWS_ZH = (
    "本市今天召开新闻发布会，宣布滨江公园二期工程将于下月正式开工。工程包括一条沿江步道、三处儿童活动场地"
    "和一个小型图书馆，预计明年夏天完工。市民可以在官网查看设计方案并在本月底前提出意见，"
    "相关部门表示会认真研究每一条建议。"
)


def describe(decision: Decision) -> str:
    match = decision.duplicate_of
    if decision.inserted or match is None:
        return f"{decision.key}: kept ({decision.hex})"
    return f"{decision.key}: duplicate of {match.key} at distance {match.distance}"


def main() -> None:
    # 1. Fingerprints are pure functions: no database involved.
    original = fingerprint(NEWS)
    repost = fingerprint("RT @citydesk: " + NEWS)
    print(f"fingerprint {to_hex(original)}, repost {to_hex(repost)}, ", end="")
    print(f"distance {hamming(original, repost)}")

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'tour.db'}"  # created and migrated on open
        with SimStore(url, namespace="news") as store:  # the default policy: MinHash similarity
            # 2. add(): check and insert in one atomic step.
            print(describe(store.add(NEWS, key="article-1")))
            print(describe(store.add("RT @citydesk: " + NEWS + " #news", key="article-2")))

            # 3. add_many(): one transaction per batch, a Decision per item, in input order.
            batch = [
                ("zh-1", NEWS_ZH),
                ("zh-2", "转发:" + NEWS_ZH),
                ("zh-3", NEWS_ZH + "（来自手机客户端）"),
            ]
            for decision in store.add_many(batch):
                print(describe(decision))
            # zh-3 may well be kept: a footer is a large share of a short text's features.

            # 4. query(): look without adding; get(): the decision recorded for a key.
            for match in store.query(NEWS_ZH.replace("，", ", ")):
                print(f"query match {match.key}: {match.measure} {match.score} ({match.hex})")
            print("get('zh-2'):", store.get("zh-2"))

            # 5. stats(): what the namespace holds.
            print(store.stats())


if __name__ == "__main__":
    main()
