"""Fingerprint throughput: simstore's presets side by side with the PyPI ``simhash`` package.

Run from the repository root (needs the ``bench`` or ``test`` extra: simhash 2.1.2 and jieba)::

    python -m benchmarks fingerprint [--docs N] [--rounds R] [--slice S] [--wall]

It builds N deterministic ~500-character Chinese documents and N ~60-character short texts from a
fixed vocabulary with a seeded RNG (nothing is downloaded), then measures, in interleaved rounds,
docs/s for:

- the PyPI ``simhash`` package, ``simhash.Simhash(text).value`` one text at a time (the peer);
- simstore ``pypi-simhash`` through ``fingerprint_many`` (its values are checked to be identical);
- simstore ``default`` through ``fingerprint_many``;
- jieba segmentation alone, ``list(jieba.cut(text))``: the floor of every jieba-based preset;
- simstore ``jieba-tfidf`` through ``fingerprint_many``.

Each measurement is repeated ``--rounds`` times; within a round the rows take turns on slices of
``--slice`` texts (each slice one ``fingerprint_many`` call), so that a slow moment of the machine
hits every row alike. The table gives the median docs/s over the rounds and, for each ratio, the
median over every slice of every round of the like-for-like ratio on that slice. Every row runs in
this one thread, so the clock is this process's CPU time by default: other work on a shared
machine then distorts the ratios less; ``--wall`` uses the wall clock instead. Ratios come from
the same run: the simstore MD5/default rows against the package, the jieba-tfidf row against
segmentation alone. Targets (issue 2): pypi-simhash >= 3x the package, default >= 8x, jieba-tfidf
within 1.3x of segmentation alone (at least 0.77x its speed).
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jieba
import simhash

from simstore import fingerprint_many

from .common import cli

SEED = 20240611

# A fixed vocabulary of common Chinese words (news / forum register), with a few Latin tokens.
VOCABULARY = """
今天 明天 昨天 我们 你们 他们 大家 自己 这个 那个 什么 怎么 为什么 因为 所以 但是 如果 虽然
已经 正在 可以 应该 需要 希望 认为 觉得 知道 发现 表示 提出 进行 开始 继续 完成 发展 提高
经济 社会 文化 教育 科技 历史 政策 市场 企业 公司 政府 部门 城市 农村 地区 国家 世界 国际
中国 北京 上海 广州 深圳 杭州 成都 武汉 南京 西安 重庆 天津 香港 台湾 美国 日本 欧洲 亚洲
人民 群众 学生 老师 医生 记者 专家 领导 工人 农民 员工 用户 客户 朋友 家人 孩子 父母 老人
天气 温度 下雨 阳光 春天 夏天 秋天 冬天 早上 中午 晚上 周末 假期 节日 新年 春节 中秋 国庆
公园 学校 医院 银行 商场 超市 餐厅 酒店 机场 车站 地铁 公交 道路 桥梁 房子 小区 办公室
手机 电脑 网络 软件 数据 系统 平台 服务 产品 技术 信息 安全 隐私 算法 模型 智能 云计算
价格 成本 收入 消费 投资 增长 下降 上涨 稳定 风险 机会 挑战 问题 办法 方案 措施 结果 影响
重要 主要 基本 全面 积极 明显 迅速 持续 进一步 有效 不断 共同 相关 具体 特别 非常 比较
会议 报告 新闻 消息 文章 评论 视频 图片 音乐 电影 游戏 体育 足球 比赛 冠军 球队 运动员
健康 疫情 疫苗 治疗 药品 医疗 保险 养老 就业 工资 住房 交通 环境 污染 能源 气候 保护
研究 调查 统计 分析 显示 报道 发布 宣布 通过 实施 推动 加强 促进 支持 改善 解决 建设
散步 吃饭 睡觉 工作 学习 旅游 购物 聊天 运动 跑步 读书 写字 唱歌 跳舞 开车 做饭 休息
美丽 幸福 快乐 辛苦 困难 简单 复杂 方便 安静 热闹 干净 漂亮 新鲜 便宜 昂贵 年轻 古老
AI Python 5G iPhone GDP CEO App 2024 100 3.5
"""
WORDS = VOCABULARY.split()
CLAUSE_END = "，，，、；"
SENTENCE_END = "。。。！？"


def make_text(rng: random.Random, length: int) -> str:
    """A pseudo-sentence text of about ``length`` characters from the fixed vocabulary."""
    parts: list[str] = []
    size = 0
    while size < length:
        for _ in range(rng.randint(2, 6)):
            word = rng.choice(WORDS)
            parts.append(word)
            size += len(word)
        mark = rng.choice(SENTENCE_END if rng.random() < 0.3 else CLAUSE_END)
        parts.append(mark)
        size += 1
    return "".join(parts)[:length]


def make_corpus(count: int, length: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [make_text(rng, rng.randint(length * 9 // 10, length * 11 // 10)) for _ in range(count)]


def peer_simhash(texts: Sequence[str]) -> list[int]:
    return [simhash.Simhash(text).value for text in texts]


def jieba_segment(texts: Sequence[str]) -> list[list[str]]:
    return [list(jieba.cut(text)) for text in texts]


Method = Callable[[Sequence[str]], object]
PEER = "simhash package, Simhash(t).value"
SEGMENTATION = "jieba segmentation alone, list(jieba.cut(t))"


@dataclass(frozen=True)
class Row:
    name: str
    method: Method
    baseline: str | None = None  # the row its ratio is taken against
    target: float | None = None  # the target for that ratio


ROWS = [
    Row(PEER, peer_simhash),
    Row(
        "simstore pypi-simhash, fingerprint_many",
        lambda t: fingerprint_many(t, preset="pypi-simhash"),
        PEER,
        3.0,
    ),
    Row(
        "simstore default, fingerprint_many",
        lambda t: fingerprint_many(t, preset="default"),
        PEER,
        8.0,
    ),
    Row(SEGMENTATION, jieba_segment),
    Row(
        "simstore jieba-tfidf, fingerprint_many",
        lambda t: fingerprint_many(t, preset="jieba-tfidf"),
        SEGMENTATION,
        1 / 1.3,  # "within 1.3x of segmentation alone": at least 0.77x its speed
    ),
]


Timings = dict[str, float]  # seconds each row took on the same slice of texts


def measure(
    corpus: Sequence[str], rounds: int, slice_size: int, clock: Callable[[], float]
) -> list[list[Timings]]:
    """For each round, the seconds each row took on each consecutive slice of ``corpus``.

    The rows take turns slice by slice, so that a busy moment of the machine hits every row alike
    and each slice gives a like-for-like sample of every ratio.
    """
    results: list[list[Timings]] = []
    for _ in range(rounds):
        slices: list[Timings] = []
        for first in range(0, len(corpus), slice_size):
            part = corpus[first : first + slice_size]
            spent: Timings = {}
            for row in ROWS:
                start = clock()
                row.method(part)
                spent[row.name] = max(clock() - start, 1e-9)
            slices.append(spent)
        results.append(slices)
    return results


def docs_per_second(rounds: list[list[Timings]], name: str, count: int) -> float:
    """The median over rounds of the row's throughput on the whole corpus."""
    return statistics.median(count / sum(s[name] for s in slices) for slices in rounds)


def ratio_cell(rounds: list[list[Timings]], row: Row) -> tuple[str, bool]:
    """The median, over every slice of every round, of the row's speed relative to its baseline,
    and whether it meets the target."""
    if row.baseline is None:
        return "", True
    baseline = row.baseline
    value = statistics.median(s[baseline] / s[row.name] for slices in rounds for s in slices)
    return f"{value:.2f}x", row.target is None or value >= row.target


def table(
    long_rounds: list[list[Timings]], short_rounds: list[list[Timings]], count: int
) -> list[list[str]]:
    header = ["method", "docs/s ~500 chars", "ratio", "docs/s ~60 chars", "ratio"]
    cells = [[*header, "ratio against", "target"]]
    for row in ROWS:
        long_ratio, long_ok = ratio_cell(long_rounds, row)
        short_ratio, short_ok = ratio_cell(short_rounds, row)
        target = ""
        if row.target is not None:
            target = f">= {row.target:.2f}x: " + ("met" if long_ok and short_ok else "MISSED")
        cells.append(
            [
                row.name,
                f"{docs_per_second(long_rounds, row.name, count):,.0f}",
                long_ratio,
                f"{docs_per_second(short_rounds, row.name, count):,.0f}",
                short_ratio,
                "" if row.baseline is None else row.baseline.split(",")[0],
                target,
            ]
        )
    return cells


def print_table(cells: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    numeric = {1, 2, 3, 4}
    for index, line in enumerate(cells):
        padded = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        print("| " + " | ".join(padded) + " |")
        if index == 0:
            print(
                "|"
                + "|".join(
                    ("-" * (w + 1) + ":") if i in numeric else "-" * (w + 2)
                    for i, w in enumerate(widths)
                )
                + "|"
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("fingerprint", __doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000, help="texts of each kind (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--wall", action="store_true", help="time by wall clock, not CPU time")
    parser.add_argument(
        "--slice", type=int, default=250, help="texts per batch call and turn (default 250)"
    )
    args = parser.parse_args(argv)

    long_docs = make_corpus(args.docs, 500, SEED)
    short_texts = make_corpus(args.docs, 60, SEED + 1)

    # warm up: load jieba's dictionary and IDF table outside the timed rounds
    jieba.setLogLevel(logging.WARNING)
    fingerprint_many(long_docs[:20], preset="jieba-tfidf")
    for corpus in (long_docs, short_texts):
        expected = peer_simhash(corpus)
        if fingerprint_many(corpus, preset="pypi-simhash") != expected:
            raise SystemExit("pypi-simhash differs from the simhash package: benchmark aborted")

    clock = time.perf_counter if args.wall else time.process_time
    long_rounds = measure(long_docs, args.rounds, args.slice, clock)
    short_rounds = measure(short_texts, args.rounds, args.slice, clock)

    mean_long = sum(map(len, long_docs)) / len(long_docs)
    mean_short = sum(map(len, short_texts)) / len(short_texts)
    print(
        f"{args.docs} Chinese documents (mean {mean_long:.0f} chars) and {args.docs} short texts "
        f"(mean {mean_short:.0f} chars) in batches of {args.slice}; medians over {args.rounds} "
        "interleaved rounds by "
        f"{'wall clock' if args.wall else 'CPU time'}; "
        "pypi-simhash values identical to the package"
    )
    print_table(table(long_rounds, short_rounds, args.docs))


if __name__ == "__main__":
    main()
