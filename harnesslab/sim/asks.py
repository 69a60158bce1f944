"""Requests that do not answer the user: the wordings by which a harness asks the model for a
summary (compaction), a title or a memory extraction, in English and Chinese, wherever the
instruction stands (docs/understanding.md lists them).

An ask is an imperative ("Summarize the conversation", "Write a concise summary", "请总结以上
对话"), not a mention: "Summary of the conversation earlier: ..." presents a summary and is no
ask, nor is "以下是之前对话的总结". Classification and other tasks the fake model cannot do are
recognised only to be reported as such (the bench says it could not read the request).
"""

from __future__ import annotations

import functools
import re
from typing import Literal

__all__ = ["Ask", "asks_in"]

Ask = Literal["summary", "title", "memory", "classify"]

_EN_VERB = r"(?:write|produce|create|generate|provide|give|return|output|make|compose|draft|" \
           r"prepare|update|extend|maintain|build)"
_ASKS: tuple[tuple[Ask, re.Pattern[str]], ...] = (
    ("title", re.compile(
        r"\b" + _EN_VERB + r"\b[^.\n]{0,40}\b(?:title|headline|topic name)\b"
        r"|\btitle (?:for|of) (?:this|the) (?:conversation|chat|dialog(?:ue)?)\b"
        r"|(?:生成|起|取|写)[^。\n]{0,8}标题", re.IGNORECASE)),
    ("memory", re.compile(
        r"\b(?:extract|identify|capture|record|store|save)\b[^.\n]{0,60}"
        r"\b(?:memor(?:y|ies)|facts? about the user|user(?:'s)? (?:facts|preferences|information|"
        r"memories))\b"
        r"|\b(?:memory|memories) (?:extraction|manager|to (?:add|store|create|update))\b"
        r"|(?:提取|抽取|记录)[^。\n]{0,12}(?:记忆|偏好|用户信息|事实)", re.IGNORECASE)),
    ("summary", re.compile(
        r"\b(?:summari[sz]e|condense|compress|compact|recap|distill)\b"
        r"|\b" + _EN_VERB + r"\b[^.\n]{0,40}\b(?:summary|recap|synopsis|digest|handoff note)\b"
        r"|\bsummari[sz]ation (?:task|assistant|prompt|of)\b|\byour (?:task|job) is to summar"
        r"|(?:请|帮我|帮忙|你需要|你的任务是|需要)[^。\n]{0,6}(?:总结|概括|压缩|归纳|摘要)"
        r"|(?:总结|概括|压缩|归纳)(?:一下|以下|上述|上面|这段|这些|之前|前面|对话|历史|内容|成)"
        r"|(?:生成|写|撰写|输出|给出|更新)[^。\n]{0,8}(?:摘要|总结|概要)", re.IGNORECASE)),
    ("classify", re.compile(
        r"\b(?:classify|categori[sz]e|label (?:the|this))\b|(?:分类|归类)", re.IGNORECASE)),
)

@functools.lru_cache(maxsize=256)  # a harness sends the same system prompt call after call
def asks_in(text: str) -> Ask | None:
    """What ``text`` asks the model to do instead of answering, if it asks anything: the first
    kind (in the order title, memory, summary, classify) whose wording it holds."""
    for kind, pat in _ASKS:
        if pat.search(text):
            return kind
    return None

