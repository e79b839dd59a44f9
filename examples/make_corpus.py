"""Write ``examples/corpus.jsonl``: simstore's sample corpus, deterministic, written from scratch.

Run ``python examples/make_corpus.py`` (same output on every run and platform; ``--check`` only
compares). Each line is one record::

    {"id": "d00042", "text": "...", "group": "g0017", "lang": "zh", "edit": "repost"}

Records with the same ``group`` are near-duplicates of each other: an original and its reposts
("转发:", "RT @..."), small edits, typos, punctuation changes and added boilerplate footers. Every
other pair is a non-duplicate, including the *look-alikes*: documents made from the same template
as another one but with different content (another city, train, score, product...), which a
near-duplicate detector must keep apart. ``edit`` says how a record was made (``original`` for the
first of each group). Chinese and English, short (under 140 characters) and long (over 500).

Everything here (templates, vocabulary, places, names) was written for this project.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

SEED = 20240604
GROUPS = 1800  # originals (look-alikes included); variants come on top
LONG_SHARE = 0.2  # originals that are long documents
VARIANT_SHARE = 0.45  # originals that get near-duplicate variants
LOOKALIKE_SHARE = 0.15  # originals that copy another original's template with new content
SHORT_MAX_CHARS = 140  # short documents stay under this, variants included
LONG_MIN_CHARS = 560  # long documents start above this, so edited copies stay over 500
OUT = Path(__file__).with_name("corpus.jsonl")

# --- vocabulary -------------------------------------------------------------------------------

EN_WORDS: dict[str, Sequence[str]] = {
    "city": (
        "Riverton",
        "Lakeside",
        "Port Maren",
        "Oakridge",
        "Millbrook",
        "Eastvale",
        "Northwick",
        "Harborview",
        "Cedar Falls",
        "Stonebridge",
        "Fairhaven",
        "Glenmoor",
        "Westbury",
        "Ashford",
        "Brightwater",
        "Kingsport",
        "Elmwood",
        "Redcliff",
        "Silverton",
        "Marlow Bay",
    ),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "cond": (
        "light rain",
        "heavy rain",
        "sunny spells",
        "thick fog",
        "strong winds",
        "clear skies",
        "scattered showers",
        "snow flurries",
        "humid and cloudy",
        "thunderstorms",
    ),
    "advice": (
        "Take an umbrella.",
        "Sunscreen recommended.",
        "Drive carefully.",
        "Dress in layers.",
        "Expect slow traffic.",
        "A good day for a walk.",
        "Keep windows closed tonight.",
    ),
    "reason": (
        "a signal fault",
        "track maintenance",
        "a late incoming train",
        "staff shortages",
        "a power outage",
        "flooding near the line",
        "a medical emergency on board",
    ),
    "brand": (
        "Nordel",
        "Quillo",
        "Brava",
        "Tenmark",
        "Lumio",
        "Corvex",
        "Pelham",
        "Zantic",
        "Orbel",
    ),
    "product": (
        "wireless earbuds",
        "coffee grinder",
        "standing desk",
        "e-reader",
        "air fryer",
        "robot vacuum",
        "hiking boots",
        "mechanical keyboard",
        "smart watch",
        "rice cooker",
    ),
    "opinion": (
        "Battery life is great but the app is clunky.",
        "Solid build, a bit noisy.",
        "Exactly as described, fast delivery.",
        "Looks nice, stopped working after a week.",
        "Much better than my old one.",
        "Overpriced for what you get.",
        "Setup took five minutes and it just works.",
    ),
    "project": (
        "Tessera",
        "Kiwi DB",
        "Ferrule",
        "Ostrich",
        "Mapleleaf",
        "Quartzite",
        "Hopscotch",
        "Lanternfish",
        "Pebble UI",
        "Driftwood",
    ),
    "feature": (
        "faster startup",
        "a new plugin API",
        "dark mode",
        "offline sync",
        "streaming export",
        "better error messages",
        "ARM builds",
        "incremental indexing",
        "a smaller install size",
    ),
    "team": (
        "Riverton Rovers",
        "Eastvale United",
        "Kingsport Harriers",
        "Oakridge Owls",
        "Port Maren Mariners",
        "Glenmoor Giants",
        "Ashford Arrows",
        "Silverton Stags",
    ),
    "player": (
        "Okafor",
        "Lindqvist",
        "Moreau",
        "Tanaka",
        "Castillo",
        "Brennan",
        "Novak",
        "Adeyemi",
    ),
    "action": (
        "log in",
        "export reports",
        "upload attachments",
        "reset my password",
        "print invoices",
        "sync contacts",
        "open the dashboard",
        "change the language",
    ),
    "error": (
        "session expired",
        "permission denied",
        "timeout after 30s",
        "invalid token",
        "disk quota exceeded",
        "unknown field 'owner'",
        "connection reset by peer",
    ),
    "dish": (
        "lemon chicken",
        "mushroom risotto",
        "spicy noodles",
        "lentil soup",
        "fish tacos",
        "vegetable curry",
        "garlic prawns",
        "stuffed peppers",
    ),
    "ingredient": (
        "fresh basil",
        "sweet potato",
        "chickpeas",
        "spring onions",
        "feta",
        "brown rice",
        "ginger",
        "roasted peppers",
        "spinach",
        "toasted sesame",
    ),
    "issue": (
        "a new cycle lane",
        "longer library hours",
        "parking fees downtown",
        "a riverside park",
        "school bus routes",
        "a ban on night flights",
        "the harbour redevelopment",
    ),
    "handle": ("citydesk", "newsbot", "maria_k", "jtravels", "dailyfeed", "techwatch", "foodie42"),
    "official": (
        "the mayor",
        "a council spokesperson",
        "the transport director",
        "the project lead",
        "the head coach",
        "the support manager",
        "a local shop owner",
    ),
    "month": ("March", "April", "May", "June", "July", "September", "October", "November"),
}

ZH_WORDS: dict[str, Sequence[str]] = {
    "city": (
        "北京",
        "上海",
        "广州",
        "深圳",
        "杭州",
        "成都",
        "武汉",
        "西安",
        "南京",
        "重庆",
        "苏州",
        "天津",
        "长沙",
        "郑州",
        "青岛",
        "厦门",
        "昆明",
        "大连",
        "沈阳",
        "哈尔滨",
    ),
    "day": ("周一", "周二", "周三", "周四", "周五", "周六", "周日", "今天", "明天"),
    "cond": (
        "小雨",
        "大雨",
        "晴转多云",
        "大雾",
        "大风",
        "晴",
        "阵雨",
        "小雪",
        "闷热多云",
        "雷阵雨",
    ),
    "advice": (
        "出门记得带伞。",
        "注意防晒。",
        "开车请减速慢行。",
        "早晚温差大，注意添衣。",
        "路上可能拥堵。",
        "适合出门散步。",
        "夜间请关好门窗。",
    ),
    "reason": (
        "信号故障",
        "线路检修",
        "前序列车晚点",
        "人员不足",
        "临时停电",
        "沿线积水",
        "车上有旅客突发疾病",
    ),
    "brand": ("星河", "青木", "远航", "白鹭", "云图", "知行", "麦田", "北辰", "拾光"),
    "product": (
        "无线耳机",
        "咖啡机",
        "升降桌",
        "电子书阅读器",
        "空气炸锅",
        "扫地机器人",
        "登山鞋",
        "机械键盘",
        "智能手表",
        "电饭煲",
    ),
    "opinion": (
        "续航很好但是应用不太好用",
        "做工扎实，就是有点吵",
        "和描述一致，物流很快",
        "外观不错，用了一周就坏了",
        "比我以前那个好多了",
        "性价比不高",
        "五分钟装好，直接能用",
    ),
    "project": ("青松", "磐石", "流萤", "飞鸢", "墨竹", "星图", "锦鲤", "长风", "山海", "明镜"),
    "feature": (
        "启动更快",
        "全新的插件接口",
        "深色模式",
        "离线同步",
        "流式导出",
        "更清楚的报错信息",
        "支持ARM架构",
        "增量索引",
        "安装包更小",
    ),
    "team": ("江城队", "海港队", "山城队", "古都队", "春城队", "冰城队", "湘江队", "鹭岛队"),
    "player": ("王磊", "李晨", "张伟", "刘洋", "陈思", "赵宇", "孙浩", "周杰"),
    "action": (
        "登录",
        "导出报表",
        "上传附件",
        "重置密码",
        "打印发票",
        "同步通讯录",
        "打开首页",
        "切换语言",
    ),
    "error": (
        "会话已过期",
        "没有权限",
        "请求超时",
        "令牌无效",
        "磁盘配额已满",
        "未知字段",
        "连接被重置",
    ),
    "dish": (
        "柠檬鸡",
        "蘑菇烩饭",
        "麻辣拌面",
        "扁豆汤",
        "鱼肉卷饼",
        "蔬菜咖喱",
        "蒜蓉虾",
        "酿青椒",
    ),
    "ingredient": (
        "罗勒",
        "红薯",
        "鹰嘴豆",
        "小葱",
        "豆腐",
        "糙米",
        "生姜",
        "彩椒",
        "菠菜",
        "芝麻",
    ),
    "issue": (
        "新建自行车道",
        "延长图书馆开放时间",
        "市中心停车收费",
        "滨江公园建设",
        "校车线路调整",
        "夜间航班限制",
        "老港区改造",
    ),
    "official": (
        "市长",
        "市政府发言人",
        "交通局负责人",
        "项目负责人",
        "主教练",
        "客服主管",
        "一位店主",
    ),
    "month": ("三月", "四月", "五月", "六月", "七月", "九月", "十月", "十一月"),
}

NUMBERS: dict[str, tuple[int, int]] = {
    "n": (3, 95),
    "hi": (18, 36),
    "lo": (-5, 17),
    "win": (2, 6),
    "lose": (0, 1),
    "rating": (1, 5),
    "train": (100, 9999),
    "ticket": (10000, 99999),
    "major": (1, 9),
    "minor": (0, 30),
    "date": (1, 28),
    "pct": (5, 60),
    "money": (2, 900),
}

SHORT_EN = (
    "{city} weather for {day}: {cond}, high {hi}°C, low {lo}°C. {advice}",
    "Train {train} from {city} to {city2} is delayed by {n} minutes because of {reason}.",
    "Just tried the new {product} from {brand}. {opinion} {rating}/5.",
    "{project} {major}.{minor} is out: {feature} and {n} bug fixes. Upgrade notes on the blog.",
    "{team} beat {team2} {win}-{lose} on {day}; {player} scored twice.",
    "Ticket #{ticket}: cannot {action} after updating to version {major}.{minor}. Error: {error}.",
    "Recipe of the day: {dish} with {ingredient} and {ingredient2}, ready in {n} minutes.",
    "{city} council votes on {issue} next {day}; residents can comment until {month} {date}.",
)

SHORT_ZH = (
    "{city}{day}天气：{cond}，最高{hi}度，最低{lo}度。{advice}",
    "{train}次列车从{city}开往{city2}，因{reason}晚点{n}分钟。",
    "刚入手了{brand}的{product}，{opinion}，给{rating}分。",
    "{project}发布{major}.{minor}版：{feature}，修复了{n}个问题，升级说明见官网。",
    "{team}{day}以{win}比{lose}战胜{team2}，{player}独中两元。",
    "工单{ticket}：升级到{major}.{minor}版后无法{action}，报错“{error}”。",
    "今日菜谱：{dish}配{ingredient}和{ingredient2}，{n}分钟就能做好。",
    "{city}将于{day}讨论{issue}，市民可在{month}{date}日前提交意见。",
)

# Long documents: an opening sentence of a topic, then body sentences drawn from a shared pool.
LONG_OPEN_EN = (
    "{city}, {month} {date}. Residents woke up to {cond} on {day}, and forecasters expect the "
    "pattern to hold for at least {n} more hours across the region.",
    "Commuters between {city} and {city2} faced another difficult morning as train {train} was "
    "held for {n} minutes after {reason}.",
    "The {project} team has released version {major}.{minor}, headlined by {feature} and "
    "{feature2}, after {n} weeks of public testing.",
    "{team} came from behind to beat {team2} {win}-{lose} on {day}, with {player} settling the "
    "match in the closing minutes.",
    "{city} council will hold a public hearing on {issue} next {day}, after a petition gathered "
    "{ticket} signatures in {n} days.",
    "Our reviewer spent {n} days with the {brand} {product}, a device that promises a lot for "
    "{money} dollars.",
)
LONG_BODY_EN = (
    "According to {official}, the first figures show a change of about {pct} percent compared "
    "with the same period last year.",
    "{official} told reporters on {day} that more details would follow within {n} days.",
    "Several people we spoke to in {city} said they had not been told about the plans in advance.",
    "The cost, estimated at {money} thousand dollars, will be shared between the city and "
    "private partners.",
    "A similar attempt in {city2} ended early when {reason} forced organisers to rethink.",
    "Critics argue that {issue} deserves a longer consultation and a clearer budget.",
    "Supporters point out that {feature} was the most requested change in a survey of "
    "{ticket} users.",
    "Local shops near the station reported {pct} percent fewer customers during the disruption.",
    "The next update is planned for {month}, and {official} promised to publish the data in full.",
    "Volunteers handed out maps and water at {n} points along the route on {day} morning.",
    "An independent review found {n} issues, most of them minor, and two that need urgent work.",
    "Readers can send questions to the newsroom; we will answer the most common ones next {day}.",
    "Weather permitting, the work will continue through {month}, with night shifts where needed.",
    "In {city2}, where a comparable scheme started {n} months ago, satisfaction rose to {pct} "
    "percent.",
    "{player}, speaking after training, said the squad was focused on the game against {team2}.",
    "Prices for the {product} start at {money} dollars, with a two-year warranty included.",
    "The council's transport committee will publish its recommendation by {month} {date}.",
    "Engineers replaced {n} kilometres of cable and tested every signal between {city} and "
    "{city2}.",
    "Anyone affected can claim a refund online within {n} days by quoting ticket {ticket}.",
    "The {project} maintainers thanked {n} first-time contributors in the release notes.",
)
LONG_CLOSE_EN = (
    "We will keep this story updated as more information becomes available.",
    "This article was written by our {city} desk and checked by the editors.",
    "For the full timetable and background, see our earlier coverage.",
)

LONG_OPEN_ZH = (
    "{month}{date}日，{city}{day}出现{cond}天气，气象部门预计这一过程还将持续至少{n}个小时，请市民合理安排出行。",
    "{city}往返{city2}的旅客今天早上又遇到了麻烦，{train}次列车因{reason}停车等待了{n}分钟。",
    "{project}团队正式发布{major}.{minor}版本，主要更新包括{feature}和{feature2}，此前已经公开测试了{n}周。",
    "{team}{day}在落后的情况下以{win}比{lose}逆转{team2}，{player}在比赛最后阶段打入制胜一球。",
    "{city}将于{day}就{issue}召开听证会，此前一份请愿书在{n}天内收集到{ticket}个签名。",
    "我们的评测编辑用了{n}天时间体验{brand}{product}，这款售价{money}元的产品宣传得很好。",
)
LONG_BODY_ZH = (
    "{official}表示，初步数据显示与去年同期相比变化约为百分之{pct}。",
    "{official}{day}对记者说，更多细节将在{n}天内公布。",
    "我们在{city}采访的几位市民都说事先并不知道这项计划。",
    "整个项目预计花费{money}万元，由政府和社会资本共同承担。",
    "{city2}此前也做过类似尝试，但因为{reason}而提前结束。",
    "也有人认为，{issue}需要更长的征求意见期和更清楚的预算。",
    "支持者指出，在一项覆盖{ticket}名用户的调查中，{feature}是呼声最高的改进。",
    "车站附近的商户反映，受影响期间客流减少了百分之{pct}左右。",
    "下一次更新计划在{month}进行，{official}承诺届时将完整公开相关数据。",
    "{day}上午，志愿者在沿线{n}个点位发放地图和饮用水。",
    "一份独立评估报告列出了{n}个问题，大部分并不严重，但有两个需要尽快处理。",
    "读者可以把问题发给编辑部，我们会在{day}集中回答最常见的问题。",
    "如果天气允许，施工将持续到{month}，必要时安排夜间作业。",
    "在{n}个月前推出类似方案的{city2}，市民满意度已经上升到百分之{pct}。",
    "{player}在训练结束后表示，全队正在专心备战与{team2}的比赛。",
    "这款{product}的起售价为{money}元，并提供两年质保服务。",
    "交通委员会将在{month}{date}日前公布最终建议。",
    "工程人员更换了{n}公里电缆，并逐一测试了{city}到{city2}之间的全部信号设备。",
    "受影响的旅客可以在{n}天内凭票号{ticket}在网上申请退款。",
    "{project}的维护者在发布说明中感谢了{n}位首次参与贡献的开发者。",
    "据了解，相关部门已经成立专门小组，由{official}牵头，计划每{n}天通报一次进展情况。",
    "不少网友在社交平台上留言，认为{issue}关系到每一位市民的日常生活，希望听到更多不同的声音。",
    "记者注意到，{city}的多个社区已经贴出通知，提醒居民在{month}{date}日前完成登记。",
    "业内人士分析，这次调整的影响将主要集中在{city}和{city2}两地，其他地区暂时不会有明显变化。",
    "有专家建议，在推进{issue}的同时，还应该同步完善配套设施，避免出现新的问题。",
    "按照目前的安排，第一阶段工作预计在{n}周内完成，第二阶段将视评估结果再作决定。",
    "{brand}方面回应称，已经注意到用户反映的情况，将在下一批产品中改进{feature}。",
    "截至发稿时，已有{ticket}人通过线上渠道提交了意见，其中约百分之{pct}表示支持。",
)
LONG_CLOSE_ZH = (
    "本报将继续关注事件进展。",
    "本文由本报{city}记者站采写，编辑部审核。",
    "完整的时间表和背景资料请参阅本报此前的报道。",
)

# --- near-duplicate edits ---------------------------------------------------------------------

REPOST_EN = ("RT @{handle}: ", "Fwd: ", "Reposting: ", "via @{handle}: ")
REPOST_ZH = ("转发:", "转发微博：", "【转】", "//转自@{handle}：")
FOOTER_EN = (
    " Sent from my phone",
    "\n\n-- Follow us for more local updates.",
    "\n\nYou received this because you subscribed to the Daily Digest. Unsubscribe any time.",
    " #news",
)
FOOTER_ZH = (
    "（来自手机客户端）",
    "\n\n—— 欢迎关注我们，获取更多本地资讯。",
    "【本文转载自网络，如有侵权请联系删除】",
    " #新闻#",
)
SYNONYMS_EN = {
    "great": "excellent",
    "delayed": "held up",
    "new": "latest",
    "next": "coming",
    "fast": "quick",
    "difficult": "hard",
    "Several": "Many",
    "cost": "price",
    "because of": "due to",
    "minor": "small",
    "reported": "said there were",
}
SYNONYMS_ZH = {
    "很好": "非常好",
    "但是": "不过",
    "因": "由于",
    "刚": "刚刚",
    "表示": "说",
    "已经": "已",
    "预计": "估计",
    "问题": "缺陷",
    "今天": "今日",
    "全部": "所有",
}
CONFUSED_ZH = {"的": "得", "在": "再", "已": "以", "做": "作", "他": "她", "那": "哪", "再": "在"}
PUNCT_ZH = {"，": ",", "。": ".", "：": ":", "“": '"', "”": '"', "！": "!"}


@dataclass(frozen=True)
class Document:
    lang: str
    templates: tuple[str, ...]  # one for a short text; opener, body..., closer for a long one
    text: str


def _fill(template: str, words: dict[str, Sequence[str]], rng: random.Random) -> str:
    chosen: dict[str, str] = {}
    for name in string.Formatter().parse(template):
        field = name[1]
        if field is None or field in chosen:
            continue
        base = field.rstrip("0123456789")
        if base in NUMBERS:
            low, high = NUMBERS[base]
            chosen[field] = str(rng.randint(low, high))
            continue
        pool = [word for word in words[base] if word not in chosen.values()]
        chosen[field] = rng.choice(pool)
    return template.format(**chosen)


def _words(lang: str) -> dict[str, Sequence[str]]:
    return ZH_WORDS if lang == "zh" else EN_WORDS


def _render(lang: str, templates: tuple[str, ...], rng: random.Random) -> str:
    words = _words(lang)
    parts = [_fill(template, words, rng) for template in templates]
    return ("" if lang == "zh" else " ").join(parts)


def new_document(lang: str, long: bool, rng: random.Random) -> Document:
    if not long:
        template = rng.choice(SHORT_ZH if lang == "zh" else SHORT_EN)
        return Document(lang, (template,), _render(lang, (template,), rng))
    opener, body, closer = (
        (LONG_OPEN_ZH, LONG_BODY_ZH, LONG_CLOSE_ZH)
        if lang == "zh"
        else (LONG_OPEN_EN, LONG_BODY_EN, LONG_CLOSE_EN)
    )
    pool = rng.sample(body, len(body))
    templates: tuple[str, ...] = (rng.choice(opener),)
    target = LONG_MIN_CHARS + rng.randrange(240)
    while pool and len(_render(lang, templates, random.Random(0))) < target:  # noqa: S311
        templates += (pool.pop(),)
    templates += (rng.choice(closer),)
    return Document(lang, templates, _render(lang, templates, rng))


def lookalike(of: Document, rng: random.Random) -> Document:
    """The same template (same sentences in the same order) filled with other content."""
    for _attempt in range(50):
        text = _render(of.lang, of.templates, rng)
        if text != of.text and (len(text) < SHORT_MAX_CHARS) == (len(of.text) < SHORT_MAX_CHARS):
            return Document(of.lang, of.templates, text)
    raise RuntimeError("could not vary a template")  # pragma: no cover


# Each edit maps (text, lang, rng) to a near-duplicate of text.


def repost(text: str, lang: str, rng: random.Random) -> str:
    prefix = rng.choice(REPOST_ZH if lang == "zh" else REPOST_EN)
    return prefix.format(handle=rng.choice(EN_WORDS["handle"])) + text


def footer(text: str, lang: str, rng: random.Random) -> str:
    footers: Sequence[str] = FOOTER_ZH if lang == "zh" else FOOTER_EN
    if len(text) < SHORT_MAX_CHARS:  # a short text stays short
        footers = [end for end in footers if len(text + end) < SHORT_MAX_CHARS] or [""]
    return text + rng.choice(footers)


def typo(text: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        spots = [i for i, char in enumerate(text) if char in CONFUSED_ZH]
        if spots:
            i = rng.choice(spots)
            return text[:i] + CONFUSED_ZH[text[i]] + text[i + 1 :]
        hanzi = [i for i, char in enumerate(text) if "\u4e00" <= char <= "\u9fff"]
        i = rng.choice(hanzi)
        return text[:i] + text[i + 1 :]  # a dropped character
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", text)]
    if not words:
        return text.replace(" ", "  ", 1)
    word = rng.choice(words)
    j = rng.randrange(word.start() + 1, word.end() - 2)
    return text[:j] + text[j + 1] + text[j] + text[j + 2 :]  # two letters swapped


def small_edit(text: str, lang: str, rng: random.Random) -> str:
    synonyms = SYNONYMS_ZH if lang == "zh" else SYNONYMS_EN
    present = [word for word in synonyms if word in text]
    if present:
        word = rng.choice(present)
        return text.replace(word, synonyms[word], 1)
    if lang == "zh":
        return text.replace("，", "，真的", 1) if "，" in text else text + "真的"
    return text.replace(" is ", " is really ", 1) if " is " in text else text + " Really."


def punctuation(text: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        table = str.maketrans(PUNCT_ZH)
        return text.translate(table) if rng.random() < 0.5 else text.replace("。", "！！", 1)
    choice = rng.randrange(3)
    if choice == 0:
        return text.replace(",", "").replace(";", ",")
    if choice == 1:
        return text.rstrip(".") + "!!!"
    return text.replace(". ", "... ", 1).replace(":", " -", 1)


def casing(text: str, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        return text.replace("，", "， ", 2)  # full-width comma followed by a space
    return text.upper() if rng.random() < 0.3 else text.lower()


EDITS: dict[str, Callable[[str, str, random.Random], str]] = {
    "repost": repost,
    "footer": footer,
    "typo": typo,
    "small-edit": small_edit,
    "punctuation": punctuation,
    "casing": casing,
}


def variant(text: str, lang: str, rng: random.Random) -> tuple[str, str]:
    """One near-duplicate of ``text``: one edit, sometimes two (a repost of a typo'd copy)."""
    for _attempt in range(20):
        names = rng.sample(sorted(EDITS), 2 if rng.random() < 0.25 else 1)
        edited = text
        for name in names:
            edited = EDITS[name](edited, lang, rng)
        if (len(edited) < SHORT_MAX_CHARS) == (len(text) < SHORT_MAX_CHARS):
            break
    return edited, "+".join(names)


def _content(text: str) -> str:
    """A text without case, spacing and punctuation: equal contents are the same document."""
    return "".join(re.findall(r"\w+", text.casefold()))


def _originals(rng: random.Random) -> list[Document]:
    """GROUPS documents whose contents all differ (look-alikes included)."""
    originals: list[Document] = []
    contents: set[str] = set()
    while len(originals) < GROUPS:
        if originals and rng.random() < LOOKALIKE_SHARE:
            document = lookalike(rng.choice(originals), rng)
        else:
            lang = rng.choice(("zh", "en"))
            document = new_document(lang, rng.random() < LONG_SHARE, rng)
        if _content(document.text) not in contents:
            contents.add(_content(document.text))
            originals.append(document)
    return originals


def build(seed: int = SEED) -> list[dict[str, str]]:
    """All records, shuffled, with ids in file order."""
    rng = random.Random(seed)  # noqa: S311 - a fixed seed: the corpus must not change
    originals = _originals(rng)
    owner = {_content(document.text): number for number, document in enumerate(originals)}
    records: list[dict[str, str]] = []
    for number, document in enumerate(originals):
        group = f"g{number + 1:04d}"
        made = {document.text: "original"}
        for _ in range(rng.randint(1, 4) if rng.random() < VARIANT_SHARE else 0):
            text, how = variant(document.text, document.lang, rng)
            if owner.get(_content(text), number) == number:  # never another group's content
                made.setdefault(text, how)
        records.extend(
            {"text": text, "group": group, "lang": document.lang, "edit": how}
            for text, how in made.items()
        )
    rng.shuffle(records)
    return [{"id": f"d{number:05d}", **record} for number, record in enumerate(records, start=1)]


def render(records: list[dict[str, str]]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT})")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="only compare with --out")
    args = parser.parse_args(argv)
    content = render(build(args.seed))
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == content
        print(f"{args.out}: {'up to date' if same else 'differs from the generator'}")
        return 0 if same else 1
    args.out.write_text(content, encoding="utf-8", newline="\n")
    print(f"wrote {content.count(chr(10))} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
