"""Notices of removed conversation: the sentence a harness writes where it dropped earlier
messages (a truncation fallback, a sliding window that says so), in any common wording, English
and Chinese (docs/understanding.md lists the forms). The judge's ``notes_removed`` check reads
them; the fake model answers from what is left either way.

Read: a sentence naming earlier conversation (``earlier/previous/older/some messages``, ``the
conversation history``, ``N turns``, ``之前的消息``, ``部分对话``, ...) and a removal
(``truncated``, ``removed``, ``omitted``, ``dropped``, ``trimmed``, ``deleted``, ``pruned``,
``discarded``, ``elided``, ``截断``, ``删除``, ``移除``, ``省略``, ``裁剪``, ``丢弃``, ``清除``) in
either order within one sentence: "Some earlier messages were truncated for limited context.",
"[12 earlier messages omitted]", "Older turns have been removed to fit the context window.",
"Removed 3 messages from the conversation history.", "之前的部分对话已被截断。".

Not read: a summary's own wording ("Here is a summary of the conversation so far": compressed,
not removed), a notice inside a tool result (a tool's output, not the harness's), and a removal
stated across two sentences.
"""

from __future__ import annotations

import re

__all__ = ["REMOVED_RE", "removal_notices"]

_WHAT_EN = (r"(?:messages?|conversation(?:[ \t]+history)?|history|turns?|exchanges?|context|"
            r"chat[ \t]+history)")
_GONE_EN = r"(?:truncated|removed|omitted|dropped|trimmed|deleted|pruned|discarded|elided)"
_WHAT_ZH = r"(?:消息|对话|聊天记录|上下文|历史记录|记录)"
_GONE_ZH = r"(?:截断|删除|移除|省略|裁剪|丢弃|清除|删减)"
# One sentence: no sentence end between the two parts (a line feed ends one too).
_SAME = r"[^.!?。！？\n]{0,80}?"
REMOVED_RE = re.compile(
    r"(?<![A-Za-z])(?:(?:earlier|previous|prior|older|old|past|some|\d+)[ \t]+(?:[A-Za-z]+[ \t]+)?"
    + _WHAT_EN + r"|the[ \t]+(?:conversation|chat)[ \t]+history)(?![A-Za-z])" + _SAME
    + r"(?<![A-Za-z])" + _GONE_EN + r"(?![A-Za-z])"
    r"|(?<![A-Za-z])" + _GONE_EN + r"[ \t]+(?:the[ \t]+)?(?:\d+[ \t]+)?(?:earlier|previous|prior|"
    r"older|old|past)?[ \t]*" + _WHAT_EN + r"(?![A-Za-z])"
    r"|(?:之前|此前|先前|早先|较早|更早|前面|早期|部分|历史)的?[^。！？\n]{0,8}?" + _WHAT_ZH
    + r"[^。！？\n]{0,20}?" + _GONE_ZH
    + r"|" + _GONE_ZH + r"了?[^。！？\n]{0,8}?(?:之前|此前|早先|较早|更早|前面|早期|部分|历史)的?"
    + _WHAT_ZH,
    re.IGNORECASE)


def removal_notices(text: str) -> list[tuple[int, str]]:
    """Each removal notice in ``text``: its start and the words matched."""
    return [(m.start(), m.group(0)) for m in REMOVED_RE.finditer(text)]
