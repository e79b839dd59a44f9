"""The default policy's recipe 2: symbols kept, traditional Chinese folded, look-alikes told by
what differs (identity swaps apart, edits merged), and one option that merges identity swaps, the
same from every door. Recipe 1 (simstore 0.4.0's, recorded by existing namespaces) decides as
before.

Expected decisions follow the documented rules (``simstore.text.lookalike``'s docstring, the
policy's fields): which words differ and of what kind is worked out by hand in each comment; the
3-gram Jaccard similarities that must clear the threshold are recomputed with a plain set
comprehension (the textbook definition), not with simstore's code.
"""

from __future__ import annotations

import json
import random
import shutil
import string
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from simstore.cli import main
from simstore.contrib._knobs import store_options
from simstore.errors import InvalidInput
from simstore.policy import batch
from simstore.policy.policies import (
    RECIPE_VERSION,
    MinHashVerification,
    policy_from_recipe,
    policy_with,
)
from simstore.storage._finder import KEPT_BY_ITS_TEXT
from simstore.store import SimStore
from simstore.text.lookalike import context, skeleton_digests, title_words, tokens
from simstore.text.normalise import compare_normalise
from tests.conftest import StoreFactory

FROZEN = Path(__file__).resolve().parents[1] / "data" / "frozen" / "0015_minhash_int_keys.sqlite"
SIMPLIFIED = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。"
TRADITIONAL = "今天天氣很好，我們一起去公園散步，順便看看湖邊新開的花。"
PLUS, PLAIN = "GNU Objective-C++ compiler", "GNU Objective-C compiler"
STORY = (
    "We met at the old mill by the river and we had tea for an hour or so, then walked back "
    "along the towpath to the station before the last train of the evening left the town."
)
# three ordinary words replaced once each, at scattered places (an edited or reworded copy)
REWORDED = STORY.replace("mill", "barn").replace("towpath", "road").replace("evening", "night")
NOTICE = "Our office in Leeds opens at the new address on the corner of the market square."
OTHER_CITY = NOTICE.replace("Leeds", "York")  # a name in a lowercase sentence: identity


def _jaccard(a: str, b: str) -> float:
    left = {a[i : i + 3] for i in range(len(a) - 2)}
    right = {b[i : i + 3] for i in range(len(b) - 2)}
    return len(left & right) / len(left | right)


def test_fillers_are_refused_like_white_space(make_store: StoreFactory) -> None:
    store = make_store()
    for text in ("\u1160\u1160", "\uffa0\uffa0", "\u3164 \u115f", "   "):
        with pytest.raises(InvalidInput, match="no words or characters"):
            store.add(text, key="blank")
    assert store.add("\u1160a text\u3164", key="text").inserted  # fillers beside text: fine
    with pytest.raises(InvalidInput, match="no words or characters"):
        batch.dedup(["\u1160\u1160", "\uffa0\uffa0"])


def test_a_symbol_tells_two_short_texts_apart(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.add(PLUS, key="plus").inserted
    plain = store.add(PLAIN, key="plain")
    assert plain.inserted, plain.duplicate_of
    [judged] = store.near_misses("plain")
    assert judged.key == "plus" and not judged.matched
    # by hand: 20 shared 3-grams of 26, above the 0.55 threshold; the swap is what refuses
    assert judged.score == pytest.approx(20 / 26)
    assert judged.reason == "look-alike: 'objective-c++' -> 'objective-c' (symbol)"


def test_an_edited_copy_is_a_duplicate_and_a_filled_template_is_not(
    make_store: StoreFactory,
) -> None:
    assert _jaccard(compare_normalise(STORY), compare_normalise(REWORDED)) >= 0.55
    assert _jaccard(compare_normalise(NOTICE), compare_normalise(OTHER_CITY)) >= 0.55
    store = make_store()
    store.add(STORY, key="story")
    copy = store.add(REWORDED, key="reworded")
    assert copy.duplicate_of is not None and copy.duplicate_of.key == "story"
    store.add(NOTICE, key="leeds")
    york = store.add(OTHER_CITY, key="york")
    assert york.inserted, york.duplicate_of
    [judged] = [j for j in store.near_misses("york") if j.key == "leeds"]
    assert judged.reason == "look-alike: 'leeds' -> 'york' (name)"
    # recipe 1's rule counted three replaced words (more than max_replaced = 1): a look-alike
    counted = make_store(namespace="counted", policy=MinHashVerification(identity_rule=False))
    counted.add(STORY, key="story")
    assert counted.add(REWORDED, key="reworded").inserted


# a short Chinese note and a review; copies put other words in at places inside them (not their
# last words, which a copy cut short or signed off may replace)
MATCH = "周末我们在学校的操场上举行了一场足球比赛，同学们都踢得非常认真，最后大家一起去吃了晚饭。"
TRIP = "张伟下周一去上海出差，会议结束后他会把项目的进度报告发给大家，请各位注意查收邮件。"
REVIEW = "刚入手了这款咖啡机，做工很扎实，操作也简单，就是声音有点大，总体来说还算满意。"


@pytest.mark.parametrize(
    ("kept", "new", "merged", "reason"),
    [
        # an adjective for another (认真 "earnest" -> 努力 "hard-working"): a reworded copy
        (MATCH, MATCH.replace("认真", "努力"), True, None),
        # words other than nouns at two places: a template's slots filled in
        (
            MATCH,
            MATCH.replace("举行", "组织").replace("认真", "努力"),
            False,
            "look-alike: '举行' -> '组织' (words); '认真' -> '努力' (words)",
        ),
        # a noun for another: another thing (a playground, a lawn; a coffee machine, headphones)
        (MATCH, MATCH.replace("操场", "草地"), False, "look-alike: '操场' -> '草地' (noun)"),
        (
            REVIEW,
            REVIEW.replace("咖啡机", "无线耳机"),
            False,
            "look-alike: '咖啡' -> '无线耳' (noun)",  # (机 is kept: aligned by character)
        ),
        # a person's name, a city's: another trip, not a copy of this one
        (TRIP, TRIP.replace("张伟", "李娜"), False, "look-alike: '张伟' -> '李娜' (name)"),
        (TRIP, TRIP.replace("上海", "广州"), False, "look-alike: '上海' -> '广州' (name)"),
    ],
)
def test_a_chinese_word_put_for_another_is_an_edit_and_a_noun_is_not(
    make_store: StoreFactory, kept: str, new: str, merged: bool, reason: str | None
) -> None:
    assert _jaccard(compare_normalise(kept), compare_normalise(new)) >= 0.55  # the rule's bar
    store = make_store()
    store.add(kept, key="kept")
    added = store.add(new, key="new")
    assert (added.duplicate_of is not None) is merged
    if not merged:
        [judged] = store.near_misses("new")
        assert judged.reason == reason
    # simstore 0.4's rule (cjk_replaced=None): any Chinese word put for another is a look-alike
    strict = make_store(
        namespace=f"{store.namespace}-0.4", policy=MinHashVerification(cjk_replaced=None)
    )
    strict.add(kept, key="kept")
    assert strict.add(new, key="new").inserted


# a Chinese report, and a copy of it with nouns replaced at four places, each once (a reworded
# or corrupted copy: a template's slots are fewer)
NEWS = (
    "今年夏天，学校组织学生去农村参加社会实践活动。同学们白天帮助农民收割庄稼，晚上在教室里整理"
    "调查报告。老师说，这样的活动能让学生了解社会，也能培养他们的责任感。很多家长也表示支持，希望"
    "以后每年都能举办。"
)
NEWS_REWORDED = (
    NEWS.replace("农村", "乡下")
    .replace("庄稼", "粮食")
    .replace("教室", "宿舍")
    .replace("家长", "父母")
)


def test_chinese_words_replaced_at_many_places_are_a_reworded_copy_unless_one_is_a_name(
    make_store: StoreFactory,
) -> None:
    assert _jaccard(compare_normalise(NEWS), compare_normalise(NEWS_REWORDED)) >= 0.55
    store = make_store()
    store.add(NEWS, key="news")
    copy = store.add(NEWS_REWORDED, key="reworded")
    assert copy.duplicate_of is not None and copy.duplicate_of.key == "news"
    # one more place where a city's name stands for a school: another school's report
    named = store.add(NEWS_REWORDED.replace("学校", "北京"), key="named")
    assert named.inserted, named.duplicate_of
    [judged] = [j for j in store.near_misses("named") if j.key == "news"]
    assert judged.reason.startswith("look-alike: '学校' -> '北京' (name); '农村' -> '乡下' (noun)")
    # three places are a template's slots: kept apart
    three = NEWS.replace("农村", "乡下").replace("庄稼", "粮食").replace("教室", "宿舍")
    assert store.add(three, key="three").inserted


def test_the_policy_line_names_the_chinese_rule_and_a_0_4_recipe_keeps_the_strict_one() -> None:
    line = MinHashVerification().describe(3)
    assert "Chinese nouns by jieba (<= 1 other word(s) an edit)" in line
    assert "jieba" not in MinHashVerification(cjk_replaced=None).describe(3)
    # a recipe recorded before the option existed reads as simstore 0.4's rule
    old = json.loads(MinHashVerification().recipe())
    del old["params"]["cjk_replaced"]
    read = policy_from_recipe(json.dumps(old))
    assert isinstance(read, MinHashVerification) and read.cjk_replaced is None


def test_japanese_keeps_the_stricter_rule() -> None:
    from simstore.text.lookalike import noun_kind

    # kana: jieba reads no Japanese, so a word of it counts as a name whatever it means
    assert noun_kind("ともだち") == "name"
    assert noun_kind("认真") is None and noun_kind("张伟") == noun_kind("上海") == "name"
    assert noun_kind("咖啡机") == "noun"


def _manual(version: str, tail: str = "") -> str:
    lines = [
        f"Section {n}: the tool reads its settings from the file named in the first argument "
        "and writes a report of every change it made to standard output."
        for n in range(1, 9)
    ]
    return " ".join(lines) + f" This manual describes release {version} of the tool.{tail}"


def _long_pair_kept_apart(store: SimStore, old: str, new: str, reason: str) -> None:
    """Add two long texts; the second must be kept, refused as a look-alike for ``reason``."""
    assert len(compare_normalise(old)) > 700  # a long text: decided by its estimate
    store.add(old, key="old")
    added = store.add(new, key="new")
    assert added.inserted, added.duplicate_of
    [judged] = store.near_misses("new")
    assert judged.reason == reason


TOWNS = [
    "Leeds", "York", "Oxford", "Exeter", "Durham", "Chester", "Lincoln", "Norwich", "Derby",
    "Hull", "Perth", "Dundee", "Cardiff", "Swansea", "Bangor", "Truro", "Ripon", "Wells",
]  # fmt: skip


def _timetable(first: str, verb: str = "printed") -> str:
    """A long notice naming ``first`` in its opening and eighteen other towns: more names than
    a long text's signature keeps (12), so that it keeps neither of the two swapped below."""
    opening = (
        f"The train from {first} to the coast now stops at {', '.join(TOWNS[:8])} and every "
        "other town on the line, the company said on Monday."
    )
    sections = [
        f"Section {n}: passengers who travel through {TOWNS[8 + n % 8]} should check the "
        f"timetable {verb} at the station and keep their ticket until the end of the journey."
        for n in range(1, 9)
    ]
    return " ".join([opening, *sections])


def test_a_name_swapped_in_a_long_texts_opening_alone_keeps_it_apart(
    make_store: StoreFactory,
) -> None:
    # another town in the opening (a name: capitalised in a lowercase sentence) and one ordinary
    # word edited further on: the skeleton differs (the edit) and the signature's sampled names
    # hold neither town, so only the openings' look-alike step tells the two notices apart
    old, new = _timetable("Bath"), _timetable("Bristol", verb="posted")
    without_openings = MinHashVerification(opening_length=None)
    assert [v.duplicate_of for v in batch.dedup([old, new], policy=without_openings)] == [
        None,
        "0",
    ]  # nothing else refuses them
    store = make_store()
    store.add(old, key="old")
    added = store.add(new, key="new")
    assert added.inserted, added.duplicate_of
    assert [v.duplicate_of for v in batch.dedup([old, new])] == [None, None]
    # the same edit with the town's name mistyped (a letter dropped) is a copy; where typos are
    # not edits (typos=False) the name is another one
    typo = _timetable("Bth", verb="posted")
    assert [v.duplicate_of for v in batch.dedup([old, typo])] == [None, "0"]
    strict = MinHashVerification(typos=False)
    assert [v.duplicate_of for v in batch.dedup([old, typo], policy=strict)] == [None, None]


GAZETTE = (
    "Leeds Gazette | Yorkshire edition | Morning briefing with Anna Smith and Tom Brown | "
    "Weather: Harrogate sunny, Wakefield cloudy, Bradford showers | Markets: Halifax steady, "
    "Barnsley up, Doncaster down | Sport: Rovers win at home, United draw away | Letters to Mary "
    "Jones | Theatre: Hamlet at the Grand, jazz at Belgrave Hall | Traffic: delays near Otley and "
    "Ilkley | Gardens: roses at Temple Newsam | Schools: Ripon term dates | Obituaries: Fred "
    "Lowe | "
)
POST = (
    "Bristol Post | Somerset edition | Evening digest from Claire Hughes and Peter Ward | "
    "Forecast: Taunton drizzle, Yeovil bright, Frome wind | Prices: Clevedon flat, Weston "
    "rising, Keynsham falling | Football: City lose abroad, Town win late | Notes for Ruth Evans | "
    "Stage: Macbeth at the Old Vic, folk at Colston Hall | Roads: queues by Portishead and "
    "Nailsea | Parks: tulips at Ashton Court | Colleges: Bath exam times | Deaths: Joan Pike | "
)


def _syndicated(masthead: str) -> str:
    """One article (600 made-up lowercase words: no names, no numbers) under ``masthead``."""
    rng = random.Random(7)
    letters = string.ascii_lowercase
    words = ("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(600))
    return masthead + " ".join(words)


def test_one_article_under_two_mastheads_that_fill_the_openings_is_a_copy() -> None:
    # two openings that share under 30% of their words are not one template filled in twice
    # (other text in front): the openings' step is not asked. Asked, it would read the two
    # mastheads' names as identity swaps and keep the copy
    old, new = _syndicated(GAZETTE), _syndicated(POST)
    own, other = (Counter(compare_normalise(t)[:500].split()) for t in (new, old))
    fewer = min(own.total(), other.total())
    assert (own & other).total() < 0.3 * fewer  # by hand: the rule's gate, OPENING_SHARED
    assert [v.duplicate_of for v in batch.dedup([old, new])] == [None, "0"]


def test_a_long_text_kept_by_what_its_signature_does_not_hold_is_not_explained_as_a_duplicate(
    make_store: StoreFactory,
) -> None:
    # read back, a long text is judged by its signature, whose names are a sample: the town
    # that kept the notice apart is not among them, and by the signature alone the pair is a
    # duplicate. The explanation must not say so of a text that was kept
    store = make_store()
    store.add(_timetable("Bath"), key="old")
    assert store.add(_timetable("Bristol", verb="posted"), key="new").inserted
    [judged] = store.near_misses("new")
    assert (judged.key, judged.matched) == ("old", False)
    assert judged.reason == KEPT_BY_ITS_TEXT


def test_a_version_bumped_past_the_opening_is_kept_apart(make_store: StoreFactory) -> None:
    store = make_store()
    _long_pair_kept_apart(
        store, _manual("2.3"), _manual("2.4"), "look-alike: '2.3' -> '2.4' (number)"
    )
    # a copy with a line added at the end (no number swapped) is still a duplicate
    longer = store.add(_manual("2.3", " Report bugs to the list."), key="longer")
    assert longer.duplicate_of is not None and longer.duplicate_of.key == "old"


def test_a_version_bumped_in_a_long_text_is_an_edit_where_numbers_do_not_matter() -> None:
    # numbers_matter=False: a number put for another tells no texts apart, long ones included
    # (their signatures' number sketches are not compared)
    pair = [_manual("2.3"), _manual("2.4")]
    assert [v.duplicate_of for v in batch.dedup(pair)] == [None, None]
    lenient = MinHashVerification(numbers_matter=False)
    assert [v.duplicate_of for v in batch.dedup(pair, policy=lenient)] == [None, "0"]


def test_merge_identity_swaps_merges_them(make_store: StoreFactory) -> None:
    store = make_store(policy=MinHashVerification(merge_identity_swaps=True))
    store.add(NOTICE, key="leeds")
    store.add(PLUS, key="plus")
    store.add(_manual("2.3"), key="old")
    for text, kept in ((OTHER_CITY, "leeds"), (PLAIN, "plus"), (_manual("2.4"), "old")):
        decision = store.add(text, key=f"of-{kept}")
        assert decision.duplicate_of is not None and decision.duplicate_of.key == kept


def test_the_option_means_one_thing_from_every_door(tmp_path: Path) -> None:
    wanted = MinHashVerification(merge_identity_swaps=True)
    assert policy_with("minhash", {"merge_identity_swaps": "true"}) == wanted
    # Flask's and Django's settings (one reader for both)
    settings = {"POLICY_OPTIONS": "merge_identity_swaps=true"}
    assert store_options(settings.get, "SIMSTORE_{}")["policy"] == wanted
    # the command line
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    option = ("--policy-option", "merge_identity_swaps=true")
    records = tmp_path / "in.jsonl"
    lines = [{"key": "leeds", "text": NOTICE}, {"key": "york", "text": OTHER_CITY}]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done = CliRunner().invoke(main, ["--db", url, *option, "ingest", str(records)])
    assert done.exit_code == 0, done.output
    with SimStore(url) as store:
        assert store.policy == wanted  # recorded by the namespace, adopted on open
        assert store.kept_text("york") is None


def test_the_default_recipe_is_version_2_and_folds_traditional_chinese(
    make_store: StoreFactory,
) -> None:
    recipe = json.loads(MinHashVerification().recipe())
    assert recipe["recipe"] == RECIPE_VERSION == 2
    assert recipe["params"]["fold_traditional"] is True
    assert recipe["params"]["keep_symbols"] is True and recipe["params"]["identity_rule"] is True
    store = make_store()
    store.add(SIMPLIFIED, key="s")
    copy = store.add(TRADITIONAL, key="t")
    assert copy.duplicate_of is not None and copy.duplicate_of.key == "s"


def test_a_version_1_recipe_is_read_with_its_own_rule() -> None:
    # what simstore 0.4.0 recorded (copied from tests/data/frozen/0015_minhash_int_keys.sqlite)
    recorded = (
        '{"params":{"cjk_long_threshold":0.65,"containment":0.8,"fold_traditional":false,'
        '"long_containment":0.95,"long_threshold":0.75,"max_replaced":1,"measure":"jaccard",'
        '"min_bands":2,"min_contained":0.5,"numbers_matter":true,"prefilter":0.35,'
        '"short_length":700,"short_min_bands":1,"strip_markup":true,"strip_social":false,'
        '"threshold":0.55,"typos":true},"policy":"minhash","recipe":1}'
    )
    made = policy_from_recipe(recorded)
    assert isinstance(made, MinHashVerification)
    assert not made.fold_traditional and not made.keep_symbols and not made.identity_rule
    assert made.opening_length is None and not made.merge_identity_swaps


def test_an_existing_namespace_keeps_deciding_as_it_did(tmp_path: Path) -> None:
    # a database simstore 0.4.0's schema holds, its namespace recorded with recipe 1 (no folding)
    path = tmp_path / "frozen.sqlite"
    shutil.copy(FROZEN, path)
    url = f"sqlite:///{path}"
    with SimStore(url, namespace="default", auto_upgrade=True) as old:
        assert not old.policy.fold_traditional  # type: ignore[attr-defined]
        old.add(SIMPLIFIED, key="s")
        assert old.add(TRADITIONAL, key="t").inserted  # not folded, as recorded
        old.add(PLUS, key="plus")
        merged = old.add(PLAIN, key="plain")  # symbols dropped, as recorded
        assert merged.duplicate_of is not None and merged.duplicate_of.key == "plus"
        old.add(STORY, key="story")
        assert old.add(REWORDED, key="reworded").inserted  # three replaced words: look-alike
    # a new namespace of the same database gets recipe 2
    with SimStore(url, namespace="new") as new:
        new.add(SIMPLIFIED, key="s")
        assert new.add(TRADITIONAL, key="t").duplicate_of is not None
        new.add(PLUS, key="plus")
        assert new.add(PLAIN, key="plain").inserted
        new.add(STORY, key="story")
        assert new.add(REWORDED, key="reworded").duplicate_of is not None
    with SimStore(url, namespace="default") as reopened:  # the record is not rewritten
        assert json.loads(reopened.policy.recipe())["params"]["identity_rule"] is False


# A long text mostly in Chinese: a manual page whose title names its command once (the body
# says "该命令", "this command"), as the Chinese manual pages of one package's commands do.
_BODY = (
    "该命令用来在指定的设备上创建一个新的文件系统，通常是在硬盘的一个分区上。",
    "设备既可以是设备名，也可以是文件系统的挂载点，块数是指该文件系统所用的块的数目。",
    "如果执行成功，返回值为零，反之则返回一个非零的值，并在标准错误上说明原因。",
    "实际上它只是一个前端，会根据指定的类型去调用相应的程序来完成真正的工作。",
    "选项中的类型指定要创建的文件系统的种类，如果没有指定，就使用默认的类型。",
    "详细的选项会被传递给真正的创建程序，大多数程序都支持检查坏块和显示详细信息。",
    "请注意，在一个已经挂载的分区上执行这个命令会破坏其中的数据，使用前务必确认。",
    "在某些系统上，这个命令已经被更具体的程序所取代，建议直接使用那些程序。",
    "本手册页由社区的志愿者翻译，如果发现错误，请向翻译项目报告，我们会尽快修正。",
    "参见相关的手册页，以了解每种文件系统的详细选项和它们在不同版本中的差别。",
    "有关更多的信息，请阅读软件包附带的文档，或者访问项目的网站获取最新的说明。",
    "最后，感谢所有为这份文档的翻译和校对付出时间和精力的朋友们，谢谢你们的帮助。",
)


def _chinese_manual(command: str, body: tuple[str, ...] = _BODY) -> str:
    # its sentences twice, in two orders: a long text (over 700 normalised characters)
    return f"名称 {command} 创建一个 linux 文件系统 总览 -v -t 类型 设备 描述 " + "".join(
        (*body, *reversed(body))
    )


def test_a_long_chinese_text_with_another_command_in_its_title_is_kept_apart(
    make_store: StoreFactory,
) -> None:
    mkfs, fsck = _chinese_manual("mkfs"), _chinese_manual("fsck")
    store = make_store()
    _long_pair_kept_apart(store, mkfs, fsck, "look-alike: 'mkfs' -> 'fsck' (title)")
    # an edited copy (one character changed in the body, 块 -> 快: a typo) is still a duplicate
    edited = (_BODY[0], _BODY[1].replace("块数", "快数"), *_BODY[2:])
    copy = store.add(_chinese_manual("mkfs", edited), key="edited")
    assert copy.duplicate_of is not None and copy.duplicate_of.key == "old"
    # another command in an edited copy: only the title words tell it apart (the two texts'
    # skeletons differ by the edit); without the option (simstore 0.4's rule), nothing does
    fsck_edited = _chinese_manual("fsck", edited)
    titled = make_store(namespace="titled")
    titled.add(mkfs, key="mkfs")
    assert titled.add(fsck_edited, key="fsck").inserted
    before = make_store(namespace="before", policy=MinHashVerification(cjk_titles=False))
    before.add(mkfs, key="mkfs")
    assert before.add(fsck_edited, key="fsck").duplicate_of is not None


# The title rule's definition (``lookalike.title_words``): a long text's title words are the first
# 4 distinct words in Latin letters (two letters or more, no digit) among the first 200
# characters of its comparison text. The texts below are comparison texts already (normalising
# leaves them as they are), so a position in them is a position in the normalised text.
_FILLER = "文件系统" * 60  # CJK characters: no Latin word, and each one a token of its own


def _normalised(text: str) -> str:
    assert compare_normalise(text) == text
    return text


def test_a_title_word_lies_within_the_first_200_characters() -> None:
    # "mkfs" as the 197th to 200th characters (indexes 196-199): within the first 200
    ends_at_200 = _normalised(_FILLER[:196] + "mkfs" + _FILLER[:40])
    assert ends_at_200.index("mkfs") + len("mkfs") == 200
    assert title_words(ends_at_200) == ("mkfs",)
    # "fsck" from the 201st character (index 200) on: past the first 200, no title word
    starts_at_201 = _normalised(_FILLER[:200] + "fsck" + _FILLER[:40])
    assert starts_at_201.index("fsck") == 200
    assert title_words(starts_at_201) == ()
    # a word that starts within the first 200 and runs past them is read whole, not cut short
    across = _normalised(_FILLER[:198] + "mkfs" + _FILLER[:40])
    assert across.index("mkfs") == 198
    assert title_words(across) == ("mkfs",)


def test_the_fifth_latin_word_is_no_title_word() -> None:
    opening = _normalised("名称 mkfs fsck mount umount losetup 创建一个文件系统")
    assert title_words(opening) == ("mkfs", "fsck", "mount", "umount")  # not "losetup"
    # distinct words: one said twice counts once, and the fifth distinct word is still left out
    repeated = _normalised("名称 mkfs mkfs fsck mount umount losetup 创建一个文件系统")
    assert title_words(repeated) == ("mkfs", "fsck", "mount", "umount")


def test_a_typo_inside_an_identifiers_part_is_an_edit(make_store: StoreFactory) -> None:
    text = "Call membarrier_cmd_register_global_expedited once before the threads start work."
    store = make_store()
    store.add(text, key="text")
    typo = store.add(text.replace("_cmd_", "_cd_"), key="typo")  # a letter dropped inside a part
    assert typo.duplicate_of is not None and typo.duplicate_of.key == "text"
    # a part's last letter changed is another name (another package of one family)
    pack = "Install python3-ssl to talk to the servers of this network from your own scripts."
    store.add(pack, key="ssl")
    other = store.add(pack.replace("python3-ssl", "python3-ssh"), key="ssh")
    assert other.inserted, other.duplicate_of
    [judged] = [j for j in store.near_misses("ssh") if j.key == "ssl"]
    assert judged.reason == "look-alike: 'python3-ssl' -> 'python3-ssh' (symbol)"


# a Chinese script note naming the language it is written in (python): a word in Latin letters
SCRIPT = (
    "这个脚本是用 python 写的，每天早上自动整理服务器上的日志文件，再把统计结果发到大家的邮箱里。"
)


def test_a_word_in_latin_letters_in_a_chinese_text_is_a_name(make_store: StoreFactory) -> None:
    store = make_store()
    store.add(SCRIPT, key="python")
    other = store.add(SCRIPT.replace("python", "ruby"), key="ruby")  # another script
    assert other.inserted, other.duplicate_of
    [judged] = store.near_misses("ruby")
    assert judged.reason == "look-alike: 'python' -> 'ruby' (name)"
    typo = store.add(SCRIPT.replace("python", "pyhton"), key="typo")  # two letters swapped
    assert typo.duplicate_of is not None and typo.duplicate_of.key == "python"


def _mixed_manual(command: str) -> str:
    # a Chinese manual page full of options: most of its words are CJK characters, most of its
    # characters are not (the test checks both), and it is long (over 700 normalised characters)
    options = "".join(
        f"选项 -{c} --opt{c * 3} 设置第{n}项参数的值。"
        for n, c in enumerate("abcdefghijklmnopqrstuvwxyzABCDEF")
    )
    return f"名称 {command} 创建文件系统 {options} 该命令 {command} 会调用相应的程序。"


def test_a_long_chinese_text_mostly_in_latin_characters_keeps_its_command_apart(
    make_store: StoreFactory,
) -> None:
    mkfs = compare_normalise(_mixed_manual("mkfs"))
    words = tokens(mkfs)
    cjk = sum(1 for word in words if len(word) == 1 and "\u4e00" <= word <= "\u9fff")
    assert 2 * cjk > len(words)  # mostly CJK by its words
    assert 2 * cjk < len(mkfs) - mkfs.count(" ")  # not by its characters
    store = make_store()
    _long_pair_kept_apart(
        store,
        _mixed_manual("mkfs"),
        _mixed_manual("fsck"),
        "look-alike: 'mkfs' -> 'fsck' (title)",
    )
    longer = store.add(_mixed_manual("mkfs") + "请注意备份数据。", key="longer")  # a sentence added
    assert longer.duplicate_of is not None and longer.duplicate_of.key == "old"


PROVERB = "If there is no wind, row.\n\t\t-- Polish proverb"


def test_the_first_word_of_an_attribution_is_a_name(make_store: StoreFactory) -> None:
    store = make_store()
    store.add(PROVERB, key="polish")
    other = store.add(PROVERB.replace("Polish", "Czech"), key="czech")  # another people's saying
    assert other.inserted, other.duplicate_of
    [judged] = store.near_misses("czech")
    assert judged.reason == "look-alike: 'polish' -> 'czech' (name)"
    reworded = store.add(PROVERB.replace("row", "paddle"), key="reworded")  # an ordinary word
    assert reworded.duplicate_of is not None and reworded.duplicate_of.key == "polish"
    # a line's first word after a dash of a list is a sentence's start, not a name
    assert "install" not in context("Steps:\n- Install the package and restart it.").names
    assert "mark" in context("Never put off till tomorrow.\n\u2014 Mark Twain").names


@pytest.mark.parametrize(
    ("old_tail", "new_tail", "what"),
    [
        (
            " Its plugins are written in C++ and Python.",
            " Its plugins are written in C and Python.",
            "a symbol",
        ),
        (
            " Run it with --verbose to see each step.",
            " Run it with -v to see each step.",
            "an option",
        ),
    ],
)
def test_long_texts_that_differ_only_past_their_opening_by_identity_are_kept_apart(
    make_store: StoreFactory, old_tail: str, new_tail: str, what: str
) -> None:
    old, new = _manual("2.3", old_tail), _manual("2.3", new_tail)
    assert old.index(old_tail) > 500  # past the opening a long text's signature carries
    store = make_store()
    _long_pair_kept_apart(
        store, old, new, "look-alike: nothing but names, numbers or symbols differ (skeleton)"
    )
    # the same text with a sentence added (an edit, its identity the same) is a duplicate
    added = store.add(_manual("2.3", old_tail + " Report bugs to the list."), key="added")
    assert added.duplicate_of is not None and added.duplicate_of.key == "old", what


def test_a_skeleton_masks_identity_and_nothing_else() -> None:
    names = frozenset({"italian", "german"})
    skeleton, whole = skeleton_digests("built for c++ in italian version 2.3 -v", names)
    # other symbols, another name, another number, another option: the same skeleton
    other = skeleton_digests("built for c in german version 2.4 --verbose", names)
    assert other[0] == skeleton and other[1] != whole
    # an ordinary word replaced, or one letter of one: another skeleton
    assert skeleton_digests("made for c++ in italian version 2.3 -v", names)[0] != skeleton
    assert skeleton_digests("built for c++ in italian versoin 2.3 -v", names)[0] != skeleton
    # a word in Latin letters is a name in a text mostly in Chinese, not in an English one
    chinese = skeleton_digests("这个脚本是用 python 写的", frozenset())
    assert skeleton_digests("这个脚本是用 ruby 写的", frozenset())[0] == chinese[0]
    assert (
        skeleton_digests("written in ruby", frozenset())[0]
        != (skeleton_digests("written in python", frozenset())[0])
    )
    # C++ in a raw text reads as the name C: the two forms are one name in the skeleton
    assert (
        skeleton_digests("in c++ only", frozenset({"c"}))[0]
        == (skeleton_digests("in c only", frozenset({"c"}))[0])
    )
    # white space between CJK characters is layout: the same text
    assert skeleton_digests("这个 脚本是用 python 写的", frozenset()) == chinese
    # a table's frame drawn in other characters is layout: the same text
    assert skeleton_digests("| name | size |", frozenset()) == (
        skeleton_digests("\u2502 name \u2502 size \u2502", frozenset())
    )


ALSA = (
    "libasound2-data - Configuration files and profiles for ALSA drivers. This package holds"
    " the configuration files that libasound2 and the applications built on it read at start."
)


def test_a_short_texts_first_identifier_is_what_it_is_about(make_store: StoreFactory) -> None:
    store = make_store()
    store.add(ALSA, key="data")
    # the sibling package named first: its name is cited in the kept text too, so it is not
    # a word put in from nowhere, yet it is another package
    sibling = store.add(ALSA.replace("libasound2-data", "libasound2", 1), key="library")
    assert sibling.inserted, sibling.duplicate_of
    [judged] = store.near_misses("library")
    assert judged.reason == "look-alike: 'libasound2-data' -> 'libasound2' (title)"
    # a typo in the first identifier's part, inside it, is an edit
    typo = store.add(ALSA.replace("libasound2-data", "libasound2-dota", 1), key="typo")
    assert typo.duplicate_of is not None and typo.duplicate_of.key == "data"
