"""Ranking like a careful reader (issue 31), through ``Repository.search``
with made-up notes, default policy (the feedback lane on):

* a lane's absence of evidence is not evidence against: a Chinese question
  about a Latin term (BCPL) finds the one note about it first, ahead of
  notes that share only the question's common words (介绍, 一下), which the
  bigram lane sees and the term it cannot; a question with no Latin term,
  and an English one, rank as before.
"""

from __future__ import annotations

import datetime as dt

import pytest

from sediment import Repository

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

# notes sharing the question's common words, and a few unrelated ones
COMMON = [
    "领导让我下周给新同事介绍一下项目背景。",
    "同事让我给新人介绍一下部门的情况，我讲了半个小时。",
    "主管说周五的分享会上要介绍一下今年的工作重点。",
    "能不能找个时间给我介绍一下你们组的项目？小陈在群里问。",
    "回忆了一下去年的这个时候，好像也这么忙。",
    "提醒我一下明天要交材料，我怕忘了。",
    "帮我看一下这个报错是什么意思，新同事问。",
    "新买的软件用了一下，界面有点复杂。",
    "周末去爬山，天气很好。",
    "晚饭做了番茄炒蛋。",
]


def _add(repo: Repository, texts: list[str]) -> dict[str, str]:
    return {repo.add(t, now=T0 + dt.timedelta(hours=i)).id: t for i, t in enumerate(texts)}


@pytest.fixture
def root(tmp_path):
    return tmp_path / "root"


@pytest.mark.parametrize("question, term", [
    ("能给我介绍一下什么是BCPL么？", "BCPL"),
    ("能介绍一下什么是 RAG 吗？", "RAG"),
])
def test_a_latin_term_in_a_chinese_question_ranks_its_note_first(root, question, term):
    notes = COMMON + [
        "晚上翻到一篇讲 BCPL 的文章：Martin Richards 1966 年在剑桥设计的，C 语言从它演变而来。",
        "听了一个讲座，RAG 就是先检索相关文档，再把它们塞进提示里让模型回答。",
    ]
    with Repository(root) as repo:
        _add(repo, notes)
        hits = repo.search(question, record=False)
        assert term in hits[0].entry.body, [h.entry.body[:20] for h in hits[:5]]
        # the notes with only the common words are still found, behind it
        assert sum("介绍一下" in h.entry.body or "一下" in h.entry.body for h in hits) >= 4


def test_a_question_without_a_latin_term_ranks_as_the_lanes_agree(root):
    with Repository(root) as repo:
        _add(repo, COMMON + ["小陈给我介绍了一下他们组的新项目，做推荐系统。"])
        hits = repo.search("能给我介绍一下小陈他们组的项目吗？", record=False)
        assert "小陈" in hits[0].entry.body


# ------------------------------------------------------------------ two questions in one

BOOK_CLUB = [
    "上个月的读书会来了 12 个人，比上次多。",
    "上个月的读书会在咖啡馆办的，来的人说环境不错。",
    "上个月的读书会读的是《三体》，讨论到很晚。",
    "上个月的读书会改到周六了，来了几个新朋友。",
    "读书会上个月来了一位作家，大家都很兴奋。",
    "上个月去了两次读书会，来回坐地铁。",
    "上个月的读书会有人带了自己做的蛋糕来。",
    "上个月读书会的场地是朋友帮忙找来的。",
]


@pytest.mark.parametrize("question", [
    "我舅舅今年多大了？另外，上个月的读书会来了多少人？",
    "上个月的读书会来了多少人？还有，我舅舅今年多大了？",
    "我舅舅今年多大了，另外上个月的读书会来了多少人？",
])
def test_both_halves_of_a_two_part_question_are_in_the_top_5(root, question):
    uncle = "舅舅今年五十八了，头发全白了。"
    with Repository(root) as repo:
        _add(repo, COMMON + BOOK_CLUB + [uncle, "舅舅家的狗叫旺财。", "今年夏天特别热。"])
        top = [h.entry.body.strip() for h in repo.search(question, limit=5, record=False)]
        assert uncle in top, top
        assert BOOK_CLUB[0] in top, top


def test_two_english_questions_each_get_their_answer(root):
    niece, pharmacy = "My niece turned seven in March; she wants a bike.", \
        "The pharmacy closes at 5 pm on Sundays, an early time."
    # (asked as one, the first half's one word is outweighed by the second's many)
    crowd = [f"Went to the pharmacy on Sunday for {x}, no idea what time it closes now." for x in
             ("vitamins", "sunscreen", "flu shots", "eye drops", "bandages", "cough syrup", "plasters", "pills")]
    with Repository(root) as repo:
        _add(repo, [niece, pharmacy] + crowd)
        top = [h.entry.body.strip() for h in repo.search(
            "How old is my niece now? Also, what time does the pharmacy close on Sundays?",
            limit=5, record=False)]
        assert niece in top[:2] and pharmacy in top[:2], top


@pytest.mark.parametrize("query, parts", [
    ("我舅舅今年多大了？另外，上个月的读书会来了多少人？", ["我舅舅今年多大了？", "上个月的读书会来了多少人？"]),
    ("When is the quarterly review? Btw, what's the name of the new designer?",
     ["When is the quarterly review?", "what's the name of the new designer?"]),
    ("Who did Evan meet in Canada, and who did he come back with?",
     ["Who did Evan meet in Canada", "who did he come back with?"]),
    # one question: a joiner inside it, a request after it, a clause too thin to ask alone
    ("除了电话窃听，还有哪些东西容易被窃听？", None),
    ("泰国皇家军队除了效忠国王，还有什么职责？", None),
    ("你知道 SaaS 是什么吗？介绍一下。", None),
    ("What did Caroline and Melanie do at the park?", None),
    ("What challenges does Sam face, and how does he address them?", None),
])
def test_a_query_is_split_only_where_it_asks_two_questions(query, parts):
    from sediment.search import query as Q
    from sediment.search.tokenize import shared

    asked = Q.ask(shared(), query)
    assert [p.text for p in asked.parts] == (parts or [])


def test_a_single_question_ranks_as_before(root):
    with Repository(root) as repo:
        _add(repo, COMMON + BOOK_CLUB)
        q = "上个月的读书会来了多少人？"
        asked = repo.search(q, limit=10, record=False)
        assert asked[0].entry.body.strip() == BOOK_CLUB[0]


def test_the_same_files_rank_the_same_however_the_index_was_built(tmp_path):
    """A lane's cut through documents tied at one score (the rare-term lane
    gives every memory holding only the speaker's name the same) is settled
    by the memory's key, or in the rare-term lane keeps none of them, rather
    than those of the highest slots: slots follow the order of adds in the
    process that wrote the notes and the walk's order after a cold open, so
    the same files ranked otherwise on another machine."""
    import random
    import shutil

    from sediment.search.index import lane_depth
    rnd = random.Random(4)
    words = ["garden", "music", "dinner", "trip", "school", "painting", "weekend", "coffee", "movie", "book",
             "friend", "family", "morning", "dog", "park", "game", "beach", "class", "city", "art"]
    root = tmp_path / "root"
    questions = ["What did Caroline research?", "What books does Caroline read?", "Where did Caroline go?"]
    n = 3 * lane_depth(10)
    with Repository(root) as repo:
        for i in range(n):  # (the name in every one, another word now and then)
            extra = " research" if i % 37 == 0 else " book" if i % 41 == 0 else ""
            repo.add(f"Caroline: {' '.join(rnd.sample(words, 6))}{extra}",
                     now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i))
        built = {q: [h.entry.id for h in repo.search(q, limit=10, record=False)] for q in questions}
    shutil.rmtree(root / "_system" / "cache")
    with Repository(root) as repo:  # (a cold open: slots in the walk's order)
        assert {q: [h.entry.id for h in repo.search(q, limit=10, record=False)] for q in questions} == built


def test_a_word_in_hundreds_of_notes_alike_still_finds_them(tmp_path):
    """Notes of one shape (a log: "deploy log entry 0042 ok") score alike on
    their shared word; a lane cut through them settles the tie by key, and
    does not leave the lane, and the search, empty."""
    with Repository(tmp_path / "root") as repo:
        ids = [repo.add(f"deploy log entry {i:04d} ok", title=f"log {i:04d}").id for i in range(300)]
        hits = repo.search("deploy", limit=10, record=False)
        assert len(hits) == 10 and {h.entry.id for h in hits} <= set(ids)
        assert len(repo.search("deploy log", limit=50, record=False)) == 50


def test_a_document_the_bigram_lane_saw_is_not_given_its_share_when_the_lane_left_it_out_as_a_tie():
    """``coverage.abstain`` gives the bigram lane's share only to documents
    that lane could not see (no query bigram). A document holding the
    query's bigram that the lane's cut left out, as the least key of a tie
    the cut split (``toplist.whole_ties``), was seen, and is given nothing."""
    from sediment.search.index import DocTerms, Index, lane_depth
    from sediment.search.rank import RRF_K
    idx = Index()
    for i in range(lane_depth(10) + 10):  # (all alike in the bigram lane: one tie past the cut)
        idx.put(f"n{i:03}", DocTerms({"介绍": 1, f"w{i}": 1}, {"介绍": 1, f"x{i}": 1}))
    idx.put("a-bcpl", DocTerms({"bcpl": 1, "介绍": 1}, {"介绍": 1, "y": 1}))  # (the least key of the tie: left out)
    hits = idx.search({"bcpl": 1.0, "介绍": 1.0}, {"介绍": 1.0}, limit=10)
    assert hits[0].key == "a-bcpl" and "bigrams" not in hits[0].lanes
    assert hits[0].score == sum(1 / (RRF_K + r) for r in hits[0].lanes.values())


def test_a_word_in_every_note_finds_them_when_the_notes_tie(tmp_path):
    """A word every note holds, in notes alike in length: the word lane
    scores them all the same, and the rare-term lane too. A lane that left
    out a tie its cut would split returned nothing (nor did the search, for
    the one word); the word lane breaks such a tie by the memory's key
    instead, which does not depend on the order the notes were indexed in."""
    import shutil

    from sediment.search.index import lane_depth
    words = ["garden", "music", "dinner", "trip", "school", "painting", "weekend", "coffee", "movie", "book"]
    root = tmp_path / "root"
    with Repository(root) as repo:
        for i in range(2 * lane_depth(10)):
            repo.add(f"Caroline {words[i % 10]} {words[i // 10 % 10]}x",
                     now=T0 + dt.timedelta(minutes=i))
        built = {lim: [h.entry.id for h in repo.search("Caroline", limit=lim, record=False)] for lim in (10, 50)}
    assert [len(v) for v in built.values()] == [10, 50]
    shutil.rmtree(root / "_system" / "cache")
    with Repository(root) as repo:  # (a cold open: slots in the walk's order)
        assert {lim: [h.entry.id for h in repo.search("Caroline", limit=lim, record=False)]
                for lim in (10, 50)} == built


def test_the_semantic_blend_ranks_the_same_however_the_index_was_built():
    """The semantic lane's blend (``dense.BlendLane``) takes the first
    ``lexical_depth`` of the word lane's list and its own first ``depth``:
    a cut through a run of equal scores took the highest slots there (the
    order the documents were indexed in), so the same documents, indexed in
    another order, ranked otherwise."""
    from sediment.search.index import DocTerms, Index
    from sediment.semantic.dense import BlendLane
    docs = [(f"k{i:03}", {"alpha": tf, "filler": 4 - tf}) for tf, n in ((3, 40), (2, 30), (1, 30)) for i in
            range(n * tf, n * tf + n)]
    lane = BlendLane(candidates=[], similarity=lambda s: 0.0, other_script=lambda s: False, mean=0.1, top=0.9,
                     alpha=0.5, lexical_depth=50)
    got = []
    for order in (docs, docs[::-1]):
        idx = Index()
        for key, words in order:
            idx.put(key, DocTerms(words, {}))
        got.append([h.key for h in idx.search({"alpha": 1.0}, {}, limit=50, lanes=[lane])])
    assert got[0] == got[1]
