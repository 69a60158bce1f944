"""Filler: seeded, realistic customer-service small talk (Chinese or English) that pushes a
conversation past the compaction trigger at any context_size.

It contains no ids, no digits that look like ids, and no constraint phrases, so it can change
what a harness keeps but never what the fake model understands. It is sized in the harness's
own estimator, as a multiple of trigger_ratio x context_size.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator

from harnesslab.messages import Message
from harnesslab.tokens import CountRule

_ZH_USER = [
    "你们家的客服一般几点下班呀？", "我上次买的那件外套挺暖和的，质量不错。",
    "最近天气变冷了，快递是不是都会慢一些？", "你们有没有会员积分之类的活动？",
    "我朋友也推荐过你们店，说售后挺靠谱的。", "包装能不能用环保一点的材料？",
    "我平时都是晚上才有空收快递。", "你们的小程序界面最近改版了吗？看着不太一样。",
    "上次那个客服小姐姐态度特别好，帮我表扬一下。", "双十一的时候你们是不是特别忙？",
    "我家楼下的快递柜经常满，挺麻烦的。", "你们店里的衣服尺码一般偏大还是偏小？",
    "我想给家里老人也买一件，不知道颜色选哪个好。", "你们支持开发票吗？公司可能要报销。",
    "谢谢你们耐心解答，我再看看别的商品。", "周末的时候你们客服也在线吗？",
]
_ZH_AGENT = [
    "您好，我们的在线客服每天早九点到晚十点都在，随时可以联系我们。",
    "感谢您的认可！我们会继续把好质量关，也欢迎您多提宝贵意见。",
    "天气和节假日确实会影响部分线路的时效，我们会尽量安排最快的配送。",
    "我们有会员积分活动，消费可以累积积分，积分能在下单时抵扣部分金额。",
    "谢谢您和朋友的信任，售后有任何问题都可以直接找我们处理。",
    "您的建议我们已经记录下来，会反馈给仓储和包装团队。",
    "好的，如果您白天不方便，可以在下单时备注希望的收货时间段。",
    "是的，小程序最近做了一次升级，如果使用中遇到问题可以随时告诉我们。",
    "非常感谢您的表扬，我们会转达给同事，这对我们是很大的鼓励。",
    "大促期间订单量确实比较大，我们会增加人手，尽量保证服务质量。",
    "理解您的不便，您也可以选择送货上门或者附近的代收点。",
    "我们的尺码一般是标准码，详情页有尺码表，您可以对照自己的身材选择。",
    "老人穿的话，很多顾客会选深色系，耐脏也比较百搭，您可以参考一下。",
    "支持开具电子发票，您在订单详情页就可以申请，很方便。",
    "不客气，有任何需要随时来找我们，祝您购物愉快！",
    "周末客服照常在线，节假日也有值班同事，您放心。",
]
_EN_USER = [
    "What time does your support team usually go offline?",
    "The jacket I bought last time was really warm, great quality.",
    "Does shipping generally slow down when the weather gets cold?",
    "Do you run any loyalty points programme for regular customers?",
    "A friend recommended your shop, said the after-sales service is reliable.",
    "Could you use more eco-friendly packaging materials?",
    "I usually only have time to pick up parcels in the evening.",
    "Did the app get a redesign recently? It looks a bit different.",
    "The agent I talked to last time was lovely, please pass on my thanks.",
    "Are you very busy during the big shopping festivals?",
    "The parcel lockers near my building are often full, which is annoying.",
    "Do your clothes usually run large or small?",
    "I want to buy one for my parents too, not sure which colour to pick.",
    "Can you issue invoices? My company might reimburse it.",
    "Thanks for your patience, I will browse a few other products.",
    "Is customer support also online at the weekend?",
]
_EN_AGENT = [
    "Hello! Our online support is available every day from nine in the morning until ten at night.",
    "Thank you for the kind words! We keep a close eye on quality and welcome your feedback.",
    "Weather and holidays can affect some routes, and we always book the fastest available option.",
    "Yes, purchases earn loyalty points, and points can be used to reduce the price at checkout.",
    "Thank you and your friend for trusting us; we are happy to help with any after-sales issue.",
    "We have noted your suggestion and will pass it on to our warehouse and packaging team.",
    "If daytime is inconvenient, you can add a preferred delivery window when placing an order.",
    "The app was upgraded recently; if anything does not work as expected, just let us know.",
    "Thank you so much, we will pass your compliments on to our colleague.",
    "Order volumes are high during big sales, so we add staff to keep the service quality up.",
    "Sorry for the trouble; home delivery or a nearby pickup point are also available.",
    "Our sizes are standard; the product page has a size chart you can compare with.",
    "Many customers choose darker colours for their parents, as they are practical and versatile.",
    "Electronic invoices are supported and can be requested from the order details page.",
    "You are welcome! Feel free to come back any time, and enjoy your shopping.",
    "Support is online at weekends too, and colleagues are on duty during holidays.",
]


def _pick(seed: int, key: str, n: int) -> int:
    h = hashlib.sha256(f"{seed}|filler|{key}".encode()).digest()
    return int.from_bytes(h[:8], "big") % n


def exchanges(locale: str, seed: int, start: int = 0) -> Iterator[tuple[Message, Message]]:
    """An endless seeded stream of (user, assistant) small-talk exchanges."""
    users, agents = (_ZH_USER, _ZH_AGENT) if locale == "zh" else (_EN_USER, _EN_AGENT)
    sep = "" if locale == "zh" else " "
    i = start
    while True:
        k = 1 + _pick(seed, f"len{i}", 3)
        u = sep.join(users[_pick(seed, f"u{i}.{j}", len(users))] for j in range(k))
        a = sep.join(agents[_pick(seed, f"a{i}.{j}", len(agents))] for j in range(k))
        yield (Message.text("user", u, id=f"filler-{i}-u"),
               Message.text("assistant", a, id=f"filler-{i}-a"))
        i += 1


def make_filler(rule: CountRule, target_tokens: float, locale: str, seed: int,
                start: int = 0) -> list[tuple[Message, Message]]:
    """Exchanges whose estimate in ``rule`` first reaches ``target_tokens``."""
    out: list[tuple[Message, Message]] = []
    units = 0
    for pair in exchanges(locale, seed, start):
        out.append(pair)
        units += rule.message_units(pair[0]) + rule.message_units(pair[1])
        if rule.finalize(units) >= target_tokens:
            break
    return out


_SENTENCES = frozenset(_ZH_USER + _ZH_AGENT + _EN_USER + _EN_AGENT)
# What filler is made of: no id of any world may occur in it (sim.domain checks a domain's).
SENTENCES = tuple(sorted(_SENTENCES))
_LONGEST = max(len(s) for s in _SENTENCES)


@functools.lru_cache(maxsize=4096)
def is_filler_text(text: str) -> bool:
    """``text`` is one side of a filler exchange (corpus sentences joined as ``exchanges``
    joins them): conversation the bench produced, which the outside view of compaction must
    tell from what a harness writes itself."""
    text = text.strip()
    if not text:
        return False
    ends = {0}  # positions a run of whole sentences (and their separators) reaches
    for i in range(len(text) + 1):
        if i not in ends:
            continue
        if i == len(text):
            return True
        j = i + 1 if text[i] == " " and i > 0 else i
        for k in range(j + 1, min(len(text), j + _LONGEST) + 1):
            if text[j:k] in _SENTENCES:
                ends.add(k)
    return False
