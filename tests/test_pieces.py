"""A CJK query word no memory holds is read as its pieces that memories do
hold (search/pieces.py): jieba glues a name to its neighbour in a short
question (王沈是) where the memory about him was cut 王沈."""

from __future__ import annotations

from sediment import Repository
from sediment.search.pieces import in_vocabulary


def test_a_name_glued_to_its_neighbour_in_the_question_still_finds_its_memory(tmp_path):
    with Repository(tmp_path / "root") as repo:
        repo.add("王沈（？－266年），字处道，太原晋阳人，曹魏至西晋时期大臣。", title="王沈")
        for i, text in enumerate(["他是一个很有名的人，大家都认识他。", "这里的人都很热情，欢迎外地人。",
                                  "哪里人多就去哪里，人是最重要的。"]):
            repo.add(text, title=f"笔记{i}")
        hits = repo.search("王沈是哪里人？", limit=3, record=False)
        assert hits[0].entry.title == "王沈"
        assert "王沈" in hits[0].terms  # (the piece is what it matched)


def test_pieces_are_the_longest_held_ones_left_to_right():
    held = {"王沈", "白岳峰", "岳峰", "少数民族", "少数", "是"}.__contains__
    assert in_vocabulary({"王沈是": 1.0, "人": 1.0}, held) == {"王沈是": 1.0, "人": 1.0, "王沈": 1.0}
    assert in_vocabulary({"白岳峰现": 1.5}, held) == {"白岳峰现": 1.5, "白岳峰": 1.5}
    # a word some memory holds, a Latin word, a piece that is only glue: as they are
    words = {"少数民族": 1.0, "bcpl": 1.0, "这是": 1.0}
    assert in_vocabulary(words, held) is words
    assert in_vocabulary({"是这是": 1.0}, lambda t: t in ("是", "这是")) == {"是这是": 1.0}
