"""Chinese questions against what memories hold (issue 31).

A CJK query word no memory holds is read as its pieces that memories do hold
(search/pieces.py): jieba glues a name to its neighbour in a short question
(王沈是) where the memory about him was cut 王沈. A number written against
Chinese text gives the bigram lane its pairs (1994年), so the lane is not
blind to it."""

from __future__ import annotations

from sediment import Repository
from sediment.search.pieces import in_vocabulary
from sediment.search.tokenize import Tokenizer


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


def test_a_number_written_against_chinese_counts_in_the_bigram_lane_too(tmp_path):
    with Repository(tmp_path / "root") as repo:
        repo.add("1994年，他从青年队升上来，加盟了当地的一支球队，踢了三个赛季。", title="球员生涯")
        for i, text in enumerate(["他加盟了新球队，新球队很强。", "加盟费用很高，他还是加盟了。",
                                  "这支球队去年加盟了联赛。", "他想加盟那家公司，加盟条件不错。"]):
            repo.add(text, title=f"笔记{i}")
        hits = repo.search("1994年他加盟了什么队？", limit=3, record=False)
        assert hits[0].entry.title == "球员生涯" and hits[0].lanes["bigrams"] == 1


def test_which_pairs_a_number_against_chinese_gives():
    tok = Tokenizer()
    assert {"19", "99", "94", "4年"} <= set(tok.terms("1994年他加盟了")[1])
    assert "35" not in tok.terms("今年 35 岁")[1]  # (written apart: the word lane's)
    assert tok.terms("version 1994 of the deploy")[1] == []  # no CJK text: no bigrams, as before
    assert tok.terms("我用的是iPhone15的新款")[1] == ["新款", "我用", "e1", "15"]  # (iphone: the word lane's)


def test_a_compound_in_the_question_counts_once_against_a_rare_name_beside_it(tmp_path):
    # jieba's search mode cuts 少数民族 as 少数, 民族 and 少数民族: a memory with the
    # compound matched three of the question's words, and three such memories
    # ranked above the one with the name asked about (query.longest_only)
    with Repository(tmp_path / "root") as repo:
        name = repo.add("白岳峰出生在湘西，是土家族人。")
        for text in ("少数民族的传统节日很多，各有特色。", "我们在博物馆看了少数民族的服饰展。",
                     "这个少数民族村寨以刺绣闻名。", "民族文化节下周开幕。", "班上有几个少数同学住校。"):
            repo.add(text)
        hits = repo.search("白岳峰是哪一个少数民族的？", record=False)
        assert hits[0].entry.id == name.id
        # a part alone still matches, in the bigram lane
        part = [h for h in hits if h.entry.body.startswith("民族文化节")]
        assert part and set(part[0].lanes) == {"bigrams"}
        # a memory's parts stay: a question of the part finds the memory holding only the compound
        # in the word lane as before
        village = [h for h in repo.search("民族", record=False) if h.entry.body.startswith("这个少数民族村寨")]
        assert village and "words" in village[0].lanes


def test_only_the_parts_search_mode_adds_of_a_compound_are_left_out():
    from sediment.search.query import longest_only
    assert longest_only(["白岳峰", "少数", "民族", "少数民族", "哪", "一个"]) == ["白岳峰", "少数民族", "哪", "一个"]
    # a part also written on its own keeps that occurrence; so does what jieba never adds as a
    # part (one character); a part of a part owes nothing (共和 of 共和国 in 中华人民共和国)
    assert longest_only(["少数", "民族", "少数民族", "和", "民族"]) == ["少数民族", "和", "民族"]
    assert longest_only(["三", "张三"]) == ["三", "张三"]
    assert longest_only(["人", "人民"]) == ["人", "人民"]
    nested = ["中华", "华人", "人民", "共和", "共和国", "中华人民共和国", "共和"]
    assert longest_only(nested) == ["中华人民共和国", "共和"]
    words = ["python", "py", "读书会"]  # (Latin words are not CJK compounds)
    assert longest_only(words) is words
