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
