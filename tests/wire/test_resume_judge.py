"""The black-box route judges a restart from the program's first request after it: every
message of the history it last showed must be there, as it was or grown in place. An image the
restored session replaced by its reminder (the image limit over the restored images plus the
new ones) is context management, not history lost; a changed text or a lost image is."""

from __future__ import annotations

from harnesslab.adapters.cmd import _restored
from harnesslab.messages import DataBlock, HintBlock, Message, TextBlock

PNG = "iVBORw0KGgo="


def _image(name: str) -> DataBlock:
    return DataBlock("image/png", PNG, name)


OLD = Message("user", (TextBlock("这是包裹外箱的照片。"), _image("a.png"), _image("b.png")))


def test_a_message_brought_back_as_it_was_or_with_an_image_replaced_by_its_reminder() -> None:
    assert _restored(OLD, [OLD])
    reminded = Message("user", (TextBlock("这是包裹外箱的照片。"),
                                TextBlock("The image named 'a.png' is removed"), _image("b.png")))
    assert _restored(OLD, [Message("assistant", (TextBlock("好的"),)), reminded])
    hinted = Message("user", (TextBlock("这是包裹外箱的照片。"), HintBlock("removed"),
                              _image("b.png")))
    assert _restored(OLD, [hinted])


def test_a_changed_text_a_dropped_image_or_another_role_is_not_the_message() -> None:
    # Controls: each differs from OLD in what a restore must keep.
    assert not _restored(OLD, [Message("user", (TextBlock("这是里面衣服的照片。"),
                                                _image("a.png"), _image("b.png")))])
    assert not _restored(OLD, [Message("user", (TextBlock("这是包裹外箱的照片。"),
                                                _image("b.png")))])
    assert not _restored(OLD, [Message("assistant", OLD.content)])
    # A text never stands for another text, even where an image may stand for its reminder.
    text_only = Message("user", (TextBlock("原话"),))
    assert not _restored(text_only, [Message("user", (TextBlock("改过的话"),))])
