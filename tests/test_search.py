"""Search: what a user of ``Repository.search`` relies on.

* tokenization: Chinese, English and mixed text; 2-character Chinese words
  inside sentences; Chinese tags and titles; English stemming; full-width Latin;
  function characters and stop words never make a match on their own;
* the no-evidence rule: without a lexical term of the query, no strength,
  recency or layer brings a memory into the results;
* tie-breaking: equal lexical evidence → higher value first, then more recent;
  never above better lexical evidence;
* filters: layer, room (and sub-rooms), tags, kind, since/until; archive only
  when asked; purged never;
* each hit: score, matched terms, a snippet that shows a matched term;
* index consistency: after a random sequence of writes (and after index
  compaction) the results equal those of a freshly opened root;
* the derived cache under ``_system/cache/``: deleting it, corrupting it or
  making it stale changes no result; a warm open does not run jieba;
* a memory written by another process becomes searchable without reopening.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import select
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sediment import InvalidInput, Repository
from sediment.search.tokenize import Tokenizer

# these tests pin what the lexical lanes match; the feedback lane (which adds
# memories sharing words with the first results) is tested in test_feedback.py
POLICY = {"destructive_per_hour": 100000, "feedback_docs": 0}
UTC = dt.timezone.utc


def T(year: int, month: int = 1, day: int = 1) -> dt.datetime:
    return dt.datetime(year, month, day, 12, 0, tzinfo=UTC)


_SHARED_JIEBA: dict = {}


@pytest.fixture(scope="session")
def _user_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("user-cache")


@pytest.fixture(autouse=True)
def _fast(monkeypatch, _user_cache):
    """Speed only, no behaviour: durability is not under test here (fsync is
    test_crash's business), and every Repository would otherwise load jieba's
    dictionary again (~1 s); one loaded jieba tokenizer is shared instead.
    The user cache folder (jieba's dictionary cache) is a temporary one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(_user_cache))
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    real = getattr(Tokenizer, "_jieba_tokenizer", None)
    if real is not None:
        def shared(self):
            if getattr(self, "_jieba", None) is None:
                if "tk" not in _SHARED_JIEBA:
                    _SHARED_JIEBA["tk"] = real(self)
                self._jieba = _SHARED_JIEBA["tk"]
            return self._jieba
        monkeypatch.setattr(Tokenizer, "_jieba_tokenizer", shared)


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root", policy=POLICY) as r:
        yield r


def ids(repo: Repository, query: str, **kw) -> list[str]:
    kw.setdefault("limit", 100)
    return [h.entry.id for h in repo.search(query, record=False, **kw)]


def ranked(repo: Repository, query: str, **kw) -> list[tuple[str, float]]:
    kw.setdefault("limit", 100)
    return [(h.entry.id, round(h.score, 9)) for h in repo.search(query, record=False, **kw)]


# ---------------------------------------------------------------------------
# tokenization, through the public search


def test_two_char_chinese_word_inside_a_sentence_is_found(repo):
    target = repo.add("移动客户端无法安全保存密钥", title="客户端的限制")
    repo.add("钥匙丢在门口了", title="家里")          # shares the character 钥, not the word
    repo.add("密码管理器很好用", title="工具")        # shares the character 密, not the word
    repo.add("今天天气很好", title="天气")
    assert ids(repo, "密钥") == [target.id]
    assert ids(repo, "保存") == [target.id]
    assert ids(repo, "安全") == [target.id]


def test_two_char_word_found_where_jieba_cuts_the_sentence_differently(repo):
    # jieba cuts 北京大学 / 生活: the word 学生 exists only as a character bigram
    e = repo.add("他在北京大学生活", title="近况")
    repo.add("今天天气很好", title="天气")
    assert ids(repo, "学生") == [e.id]


def test_chinese_search_zh(repo):
    a = repo.add("决定：移动端登录用授权码流程，不再下发客户端密钥。", title="登录方案")
    b = repo.add("周末去西湖边散步，天气很好。", title="周末")
    assert ids(repo, "登录") == [a.id]
    assert ids(repo, "西湖散步") == [b.id]
    assert ids(repo, "天气怎么样") == [b.id]


def test_english_words_are_case_insensitive_and_stemmed(repo):
    a = repo.add("The artist painted the wall", title="wall")
    b = repo.add("She paints every day", title="habit")
    c = repo.add("Painting classes on Sunday", title="classes")
    repo.add("The wall is blue and the door is red", title="colours")
    for q in ("painted", "paints", "painting", "PAINT", "Painting"):
        assert set(ids(repo, q)) == {a.id, b.id, c.id}, q
    assert set(ids(repo, "studies")) == set()
    d = repo.add("Two studies of sediment transport", title="reading")
    assert ids(repo, "study") == [d.id]


def test_mixed_chinese_and_english(repo):
    a = repo.add("决定：移动端登录用 PKCE，不再下发 client secret。",
                 title="用 PKCE 代替 client secret", tags=["auth", "移动端"])
    b = repo.add("OAuth2登录流程需要重定向地址", title="重定向")
    c = repo.add("The server keeps the secret in a vault", title="vault")
    assert ids(repo, "PKCE")[0] == a.id
    assert ids(repo, "client secret")[0] == a.id
    assert set(ids(repo, "secret")) == {a.id, c.id}
    assert ids(repo, "oauth2") == [b.id]
    assert ids(repo, "登录流程")[0] == b.id
    assert ids(repo, "PKCE 移动端")[0] == a.id
    assert ids(repo, "auth") == [a.id]


def test_chinese_tag_matches_exactly(repo):
    a = repo.add("登录改为授权码流程", title="登录方案", tags=["移动端", "auth"])
    b = repo.add("移动设备的端口配置在路由器里", title="路由器")
    repo.add("今天天气很好", title="天气")
    assert ids(repo, "移动端")[0] == a.id
    assert ids(repo, "移动端", tags=["移动端"]) == [a.id]
    assert ids(repo, "登录", tags=["移动"]) == []         # a tag is matched whole, not by prefix
    assert b.id in ids(repo, "移动")
    # stored as written (not escaped), read back as written
    raw = (repo.root / a.path).read_text(encoding="utf-8")
    assert "移动端" in raw and "\\u" not in raw
    fresh = Repository(repo.root, policy=POLICY)
    assert fresh.get(a.id).tags == ("移动端", "auth")
    assert ids(fresh, "移动端", tags=["移动端"]) == [a.id]


def test_chinese_title_matches_exactly(repo):
    a = repo.add("最后选了便宜的那个", title="猫粮品牌选择")
    repo.add("选择品牌要看口碑和价格", title="品牌")
    repo.add("猫喜欢晒太阳", title="猫")
    repo.add("今天天气很好", title="天气")
    assert ids(repo, "猫粮品牌选择")[0] == a.id
    assert ids(repo, "猫粮")[0] == a.id


def test_full_width_latin_and_digits_match_ascii(repo):
    a = repo.add("移动端登录用 PKCE", title="登录")
    b = repo.add("ＯＡＵＴＨ token 轮换", title="令牌")
    c = repo.add("２０２６年计划", title="计划")
    assert ids(repo, "ＰＫＣＥ") == [a.id]
    assert ids(repo, "pkce") == [a.id]
    assert ids(repo, "OAuth") == [b.id]
    assert ids(repo, "2026") == [c.id]


def test_function_characters_and_stop_words_make_no_match(repo):
    book = repo.add("我的书在这里", title="书架")
    repo.add("这是我们的计划", title="计划")
    repo.add("the dog sleeps on the sofa", title="dog")
    repo.add("It is what it is", title="saying")
    repo.add("对于预算，是不是还要再谈", title="预算")
    for q in ("的", "the", "我", "是的", "the and of", "it is", "我们的", "了吗", "这是", "对于", "是不是"):
        assert ids(repo, q) == [], q
    assert book.id not in ids(repo, "我的猫")      # shares only 我 and 的
    assert ids(repo, "我的猫") == []
    cat = repo.add("猫粮很贵", title="开销")
    assert ids(repo, "我的猫") == [cat.id]
    assert ids(repo, "the cat") == []
    assert ids(repo, "") == [] and ids(repo, "   ") == []


# ---------------------------------------------------------------------------
# the no-evidence rule


def test_no_lexical_evidence_never_returned(repo):
    strong = repo.add("核心原则：永远先备份数据库再迁移。 Always back up the database first.",
                      title="备份原则", kind="core", tags=["原则", "database"], value=1.0,
                      layer="bedrock")
    weak = repo.add("山上有一块花岗岩 granite boulder", title="散步", value=0.0, now=T(2015))
    repo.add("岩石和沙子", title="地貌", value=0.1, now=T(2016))
    for _ in range(5):  # recalled often
        repo.search("备份 数据库 database")
    repo.touch(strong.id, "confirm")
    for q in ("花岗岩", "granite", "granite 花岗岩", "boulder"):
        assert ids(repo, q) == [weak.id], q
        assert strong.id not in ids(repo, q, include_archive=True)
    assert ids(repo, "zebra crossing") == []
    assert ids(repo, "斑马线") == []


# ---------------------------------------------------------------------------
# tie-breaking


@pytest.mark.parametrize("strong_first", [True, False])
def test_identical_text_higher_value_first(repo, strong_first):
    text, title, when = "花岗岩 granite 风化速度的观察", "风化观察", T(2024, 5, 1)
    kw = dict(title=title, now=when)
    # the same index terms; the texts differ by punctuation only, because an
    # exact duplicate is not written twice (add returns the existing memory)
    if strong_first:
        strong = repo.add(text, value=0.9, **kw)
        weak = repo.add(text + "!", value=0.2, **kw)
    else:
        weak = repo.add(text, value=0.2, **kw)
        strong = repo.add(text + "!", value=0.9, **kw)
    for q in ("花岗岩", "granite", "风化"):
        assert ids(repo, q) == [strong.id, weak.id], q
    assert ids(Repository(repo.root), "granite") == [strong.id, weak.id]


@pytest.mark.parametrize("recent_first", [True, False])
def test_identical_text_equal_value_more_recent_first(repo, recent_first):
    text, title = "花岗岩 granite 风化速度的观察", "风化观察"
    if recent_first:  # (punctuation apart: an exact duplicate is not written twice)
        recent = repo.add(text, title=title, value=0.5, now=T(2025, 3, 1))
        old = repo.add(text + "!", title=title, value=0.5, now=T(2020, 3, 1))
    else:
        old = repo.add(text, title=title, value=0.5, now=T(2020, 3, 1))
        recent = repo.add(text + "!", title=title, value=0.5, now=T(2025, 3, 1))
    for q in ("花岗岩", "granite", "风化"):
        assert ids(repo, q) == [recent.id, old.id], q
    assert ids(Repository(repo.root), "granite") == [recent.id, old.id]


def test_strength_and_recency_never_beat_better_evidence(repo):
    filler = " ".join(f"w{i}" for i in range(60))
    good = repo.add("granite granite: 花岗岩的风化", title="花岗岩 granite", value=0.0, now=T(2012))
    poor = repo.add(f"{filler} granite {filler} 花岗岩", title="杂记", value=1.0,
                    layer="bedrock", kind="core")
    for q in ("granite", "花岗岩", "granite 花岗岩"):
        assert ids(repo, q) == [good.id, poor.id], q


# ---------------------------------------------------------------------------
# filters


@pytest.fixture
def filtered(repo):
    common = "花岗岩 granite "
    m = {}
    m["a"] = repo.add(common + "a", title="a", layer="shallow", room="auth", tags=["auth", "移动端"],
                      kind="rule", now=T(2024, 1, 1))
    m["b"] = repo.add(common + "b", title="b", layer="sediment", room="auth/oauth", tags=["auth"],
                      kind="fact", now=T(2025, 6, 1))
    m["c"] = repo.add(common + "c", title="c", layer="bedrock", room="geo", tags=["地质"],
                      kind="fact", now=T(2026, 1, 1))
    m["d"] = repo.add(common + "d", title="d", room="auth", kind="event", now=T(2023, 1, 1))
    m["e"] = repo.add(common + "e", title="e", room="author", kind="event", now=T(2023, 1, 1))
    m["x"] = repo.add(common + "x", title="x", room="auth", kind="rule", now=T(2023, 1, 1))
    m["p"] = repo.add(common + "p", title="p", room="auth", kind="rule", tags=["auth"], now=T(2023, 1, 1))
    m["x"] = repo.archive(m["x"].id, reason="old")
    m["p"] = repo.purge(m["p"].id, confirm=True, reason="wrong")
    return repo, {k: v.id for k, v in m.items()}


def _names(m, found):
    inv = {v: k for k, v in m.items()}
    return {inv[i] for i in found}


def test_filter_layer_room_tags_kind(filtered):
    repo, m = filtered
    q = "granite"
    assert _names(m, ids(repo, q)) == {"a", "b", "c", "d", "e"}
    assert _names(m, ids(repo, q, layer="sediment")) == {"b"}
    assert _names(m, ids(repo, q, layer=["shallow", "bedrock"])) == {"a", "c", "d", "e"}
    assert _names(m, ids(repo, q, room="auth")) == {"a", "b", "d"}          # sub-room included
    assert _names(m, ids(repo, q, room="auth/oauth")) == {"b"}
    assert _names(m, ids(repo, q, room="au")) == set()                      # not a prefix match
    assert _names(m, ids(repo, q, tags=["auth"])) == {"a", "b"}
    assert _names(m, ids(repo, q, tags=["auth", "移动端"])) == {"a"}
    assert _names(m, ids(repo, q, tags=["地质"])) == {"c"}
    assert _names(m, ids(repo, q, tags=["地"])) == set()
    assert _names(m, ids(repo, q, kind="fact")) == {"b", "c"}
    assert _names(m, ids(repo, q, kind=["rule", "event"])) == {"a", "d", "e"}
    assert _names(m, ids(repo, q, room="auth", kind="rule", tags=["auth"])) == {"a"}
    # filters narrow; they never add a memory without evidence
    assert ids(repo, "zebra", room="auth") == []


def test_filter_time_range(filtered):
    repo, m = filtered
    q = "花岗岩"
    assert _names(m, ids(repo, q, since="2025-01-01T00:00:00+00:00")) == {"b", "c"}
    assert _names(m, ids(repo, q, since="2025-01-01")) == {"b", "c"}  # a date: midnight in the root's timezone
    with pytest.raises(InvalidInput):
        repo.search(q, since="the first of January")
    assert _names(m, ids(repo, q, until="2023-06-01T00:00:00+00:00")) == {"d", "e"}
    assert _names(m, ids(repo, q, since=T(2024, 1, 1), until=T(2025, 12, 31))) == {"a", "b"}
    assert _names(m, ids(repo, q, since="2025-06-01T12:00:00+00:00")) == {"b", "c"}   # inclusive


def test_archive_only_when_asked_and_purged_never(filtered):
    repo, m = filtered
    q = "granite"
    assert "x" not in _names(m, ids(repo, q))
    assert "x" not in _names(m, ids(repo, q, room="auth"))
    assert _names(m, ids(repo, q, include_archive=True)) == {"a", "b", "c", "d", "e", "x"}
    assert _names(m, ids(repo, q, layer="archive")) == {"x"}
    assert _names(m, ids(repo, q, layer=["shallow", "archive"])) == {"a", "d", "e", "x"}
    # purged: never, whatever is asked, also by its own words
    for kw in ({}, {"include_archive": True}, {"layer": "archive"}, {"room": "auth", "include_archive": True}):
        assert m["p"] not in ids(repo, q, **kw)
        assert m["p"] not in ids(repo, "p", **kw)
    fresh = Repository(repo.root, policy=POLICY)
    assert m["p"] not in ids(fresh, q, layer="archive")
    assert _names(m, ids(fresh, q, layer="archive")) == {"x"}


# ---------------------------------------------------------------------------
# what a hit carries




LONG_EN = " ".join(f"filler{i}" for i in range(120))
LONG_ZH = "填充" * 150


@pytest.mark.parametrize("body, query", [
    (f"{LONG_ZH}移动客户端无法安全保存密钥{LONG_ZH}", "密钥"),
    (f"{LONG_EN} a granite boulder {LONG_EN}", "granite"),
    (f"{LONG_EN} the artist painted the wall {LONG_EN}", "painting"),
    (f"{LONG_EN} two studies of sediment {LONG_EN}", "study"),
    (f"{LONG_EN} we use ＰＫＣＥ on mobile {LONG_EN}", "pkce"),
], ids=["zh", "en", "en-stem", "en-stem-y", "full-width"])
def test_hit_has_score_terms_and_snippet_with_a_matched_term(repo, body, query):
    e = repo.add(body, title="note")
    repo.add("unrelated 无关", title="other")
    hits = repo.search(query, record=False)
    assert [h.entry.id for h in hits] == [e.id]
    h = hits[0]
    tok = repo.view.tokenizer
    qwords, qbigrams = tok.terms(query)
    assert isinstance(h.score, float) and h.score > 0
    # each term is a word as the note writes it ('painted', 'ＰＫＣＥ'), standing for a term of the query
    assert h.terms and all(t in body and set(sum(tok.terms(t), [])) & set(qwords + qbigrams) for t in h.terms)
    assert 0 < len(h.snippet) <= 120
    assert any(t in h.snippet for t in h.terms), (h.terms, h.snippet)
    d = h.to_dict()
    assert d["id"] == e.id and d["terms"] == list(h.terms) and d["snippet"] == h.snippet


def test_a_hits_words_and_snippet_are_there_after_the_repository_is_closed(tmp_path):
    # a hit's words as written and its snippet are found when first read (they
    # read the hit's text): a hit kept past the repository's close still has them
    from sediment import Repository
    r = Repository(tmp_path / "root")
    e = r.add("The staging Databases run with max_connections = 50, 发布列车每周二出发。")
    r.close()
    r = Repository(tmp_path / "root")  # (a warm open: the text is read from the body store)
    hits = r.search("database 发布列车", record=False)
    other = r.search("max_connections", record=False)
    r.close()
    assert [h.entry.id for h in hits] == [e.id] == [h.entry.id for h in other]
    assert "Databases" in hits[0].terms and "database" not in hits[0].terms
    assert "staging Databases run" in hits[0].snippet
    assert "max_connections" in other[0].terms and other[0].to_dict()["snippet"] == other[0].snippet


def test_hits_are_ordered_by_score_and_terms_are_the_matched_ones(repo):
    repo.add("granite and basalt", title="rocks")
    repo.add("granite only", title="one")
    repo.add("basalt only 玄武岩", title="two")
    hits = repo.search("granite basalt 玄武岩", record=False)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    by_title = {h.entry.title: set(h.terms) for h in hits}
    assert by_title["rocks"] == {"granite", "basalt"}
    assert by_title["one"] == {"granite"}
    assert {"basalt", "玄武岩"} <= by_title["two"] and "granite" not in by_title["two"]


def test_snippets_and_terms_show_the_note_as_written(repo):
    # markup is not shown (headings, list markers, emphasis, code, wikilinks
    # as their text), and a matched term is the word the note writes, not its stem
    e = repo.add("# Login on mobile\n\nUse **PKCE** on mobile, no client secret。\n\n## Evidence\n\n"
                 "- the *staging* Databases run with `max_connections` = 50, see [[Auth review|the review]]\n",
                 title="login")
    repo.add("unrelated", title="other")
    hits = repo.search("database staging max_connections", record=False, explain=True)
    assert [h.entry.id for h in hits] == [e.id]
    h = hits[0]
    assert {"Databases", "staging", "max_connections"} <= set(h.terms)
    assert not {"databas", "stag", "maxconnection"} & set(h.terms)
    assert {"databas", "stag", "maxconnection"} <= set(h.explain["index_terms"])  # what the ranking weighed
    assert h.to_dict()["terms"] == list(h.terms) == h.explain["terms"]
    assert "secret。 Evidence the staging Databases run with max_connections = 50, see" in h.snippet
    for mark in ("#", "*", "`", "[[", "]]", "- ", "Auth review"):
        assert mark not in h.snippet, mark
    (h,) = repo.search("review", record=False)
    assert h.snippet.endswith("see the review") and h.terms == ("review",)



def test_a_note_of_unclosed_marks_is_shown_like_any(repo):
    # long lines of marks that open and never close (emphasis, code, links,
    # comments: pasted text, a log): the snippet is made and shows the words
    # (each unclosed mark used to scan to the end of its line: a 90 KB line
    # took over ten minutes)
    lines = [" *a" * 30_000, " _a" * 30_000, "**a " * 20_000, "==a " * 20_000, "[a" * 40_000,
             "![a" * 30_000, "``a" * 30_000, "<!--a" * 20_000]
    e = repo.add("Rotate the PKCE verifier weekly.\n" + "\n".join(lines), title="pasted")
    (h,) = repo.search("verifier", record=False)
    assert h.entry.id == e.id and "Rotate the PKCE verifier weekly." in h.snippet

# ---------------------------------------------------------------------------
# index consistency

ZH_WORDS = "花岗岩 河流 三角洲 密钥 移动端 客户端 登录 猫粮 北京 上海 天气 咖啡 算法 数据库 缓存 记忆 沉积 基岩".split()
EN_WORDS = ("granite river delta secret mobile client login coffee weather algorithm database cache "
            "memory sediment bedrock painting token oauth").split()
QUERIES = ZH_WORDS + EN_WORDS + ["花岗岩 granite", "移动端 login", "记忆沉积", "coffee 咖啡 天气",
                                 "painted tokens", "北京上海"]


def _snapshot(repo: Repository) -> dict:
    out = {}
    for q in QUERIES:
        for inc in (False, True):
            out[(q, inc)] = ranked(repo, q, include_archive=inc)
    return out


def _first_difference(a: dict, b: dict) -> str:
    for k in a:
        if a[k] != b[k]:
            return f"query {k!r}:\n  live  {a[k][:6]}\n  fresh {b[k][:6]}"
    return ""


def _assert_same_as_fresh_open(repo: Repository) -> None:
    idx = repo.view.index
    every = lambda r: [*r.list(), *r.list(status="purged")]  # noqa: E731  (purged: listed when asked for)
    # (the index holds purged memories too, which no search finds; len(repo) leaves them out)
    assert len(idx) == len(every(repo)) == idx.words.live == idx.bigrams.live
    assert set(idx.slot_of) == {e.id for e in every(repo)}
    fresh = Repository(repo.root, policy=POLICY)
    assert {e.id: e.path for e in every(fresh)} == {e.id: e.path for e in every(repo)}
    # the term vectors the feedback lane reads: the same as a fresh open's
    vec = lambda ix, k: sorted(ix.words.vector(ix.slot_of[k]))  # noqa: E731
    assert all(vec(idx, k) == vec(fresh.view.index, k) for k in idx.slot_of)
    assert fresh.view.index.words.total_len == idx.words.total_len
    assert fresh.view.index.bigrams.total_len == idx.bigrams.total_len
    live, new = _snapshot(repo), _snapshot(fresh)
    n_diff = sum(live[k] != new[k] for k in live)
    assert n_diff == 0, f"{n_diff} of {len(live)} result lists differ; first {_first_difference(live, new)}"


def _padding(i: int) -> str:
    """Gives document ``i`` a length no other document has in either lane (the
    rest of a document here is at most 32 words and 21 bigrams; the padding
    grows in steps of 35 words and 30 bigrams), so no two documents tie in BM25."""
    return " " + " ".join(["zz"] * (20 * (i + 1))) + " " + "填充" * (15 * (i + 1))


@pytest.mark.parametrize("corpus", ["distinct", "with-ties"])
def test_index_equals_fresh_open_after_random_operations(tmp_path, corpus):
    """After 200 random writes the live index ranks exactly as one built from
    the files. 'distinct' documents never tie in BM25; 'with-ties' ones may
    (identical length and term counts), as real notes do."""
    rng = random.Random(7)
    repo = Repository(tmp_path / "root", policy=POLICY)
    words = ZH_WORDS + EN_WORDS
    pad: dict[str, str] = {}

    def text(key: str | None = None):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6)))
        if corpus == "distinct":
            body += pad[key] if key else _padding(len(pad))
        return body

    def tags():
        return rng.sample(["auth", "移动端", "地质", "cache", "咖啡"], rng.randint(0, 2))

    counts = Counter()
    for _ in range(200):
        live = [e for e in repo.list() if e.status != "purged"]
        op = rng.choice(["add"] * 3 + ["update"] * 3 + ["move", "archive", "purge"]) if live else "add"
        counts[op] += 1
        if op == "add":
            t = text()
            e = repo.add(t, title=f"n{len(pad)}", tags=tags(),
                         room=rng.choice([None, "auth", "auth/oauth", "geo"]), value=round(rng.random(), 2))
            pad[e.id] = _padding(len(pad))
            continue
        e = rng.choice(live)
        if op == "update":
            extra = {"tags": tags()} if rng.random() < 0.3 else {}
            repo.update(e.id, text=text(e.id), **extra)
        elif op == "move" and e.status != "active":  # out of archive is restore's job
            repo.restore(e.id, layer=rng.choice(["shallow", "sediment", "bedrock"]))
        elif op == "move":
            repo.move(e.id, rng.choice(["shallow", "sediment", "bedrock"]),
                      room=rng.choice([None, "auth", "geo"]))
        elif op == "archive":
            repo.archive(e.id, reason="random")
        else:
            repo.purge(e.id, confirm=True)
    assert min(counts.values()) > 5
    _assert_same_as_fresh_open(repo)


def test_index_equals_fresh_open_after_compaction(tmp_path):
    repo = Repository(tmp_path / "root", policy=POLICY)
    n = 24

    def text(i, k):  # lengths and counts depend on i only, all different: no two documents tie
        return " ".join(["granite"] * (i + 1) + ["花岗岩"] * (n - i) + ["river"] * (i % 5 + 1)
                        + ["zz"] * (5 * i) + [f"doc{i}", f"v{k}"])

    es = [repo.add(text(i, 0), title=f"t{i}") for i in range(n)]
    slots_before = len(repo.view.index.key_of)
    k = 0
    while True:  # update (and now and then move) until dead slots force a compaction
        k += 1
        assert k < 3000, "the index never compacted"
        i = k % n
        if k % 97 == 0:
            repo.move(es[i].id, ("shallow", "sediment", "bedrock")[k % 3])
        else:
            repo.update(es[i].id, text=text(i, k))
        slots = len(repo.view.index.key_of)
        if slots < slots_before:
            break
        slots_before = slots
    assert k > 1000 and len(repo.view.index.key_of) == n
    for i in range(n):
        assert ids(repo, f"doc{i}") == [es[i].id]
    for q in ("granite", "花岗岩", "river", "granite river", "花岗岩 granite"):
        assert len(ids(repo, q)) == n
    _assert_same_as_fresh_open(repo)
    # and it goes on working after the compaction
    for k2 in range(k + 1, k + 40):
        repo.update(es[k2 % n].id, text=text(k2 % n, k2))
    assert ids(repo, f"v{k + 39}") == [es[(k + 39) % n].id]
    assert len(repo.view.index) == len(repo) == repo.view.index.words.live


# ---------------------------------------------------------------------------
# the derived cache under _system/cache/ (segmentations or an index snapshot:
# these tests only rely on what a user sees)

CACHE_QUERIES = ["密钥", "移动端", "PKCE", "painting", "苹果", "花岗岩", "登录流程", "学生", "client secret",
                 "granite", "天气", "记忆沉积", "coffee 咖啡"]


def _populate(root: Path, ties: bool = False) -> None:
    """Six hand-written memories and 40 random ones with some history. With
    ``ties`` some random ones score alike for a query (same length and counts)."""
    rng = random.Random(3)
    words = ZH_WORDS + EN_WORDS
    with Repository(root, policy=POLICY) as r:
        r.add("决定：移动端登录用 PKCE，不再下发 client secret。\n\n移动客户端无法安全保存密钥",
              title="用 PKCE 代替 client secret", tags=["auth", "移动端"])
        r.add("今天吃了苹果", title="水果")
        r.add("他在北京大学生活", title="近况")
        r.add("The artist painted the wall", title="wall")
        r.add("OAuth2登录流程需要重定向地址", title="重定向", room="auth")
        r.add("山上有一块花岗岩 granite boulder", title="散步", layer="sediment")

        def text(i):
            return " ".join(rng.choice(words) for _ in range(rng.randint(2, 6))) + ("" if ties else _padding(i))

        made = [r.add(text(i), title=" ".join(rng.sample(words, 2)), room=rng.choice([None, "geo"]))
                for i in range(40)]
        for i, e in list(enumerate(made))[::4]:
            r.update(e.id, text=text(i))
        for e in made[1::7]:
            r.move(e.id, "sediment")
        r.archive(made[2].id, reason="old")


def _results(repo: Repository) -> dict:
    return {(q, inc): ranked(repo, q, include_archive=inc) for q in CACHE_QUERIES for inc in (False, True)}


def _cache_dir(root: Path) -> Path:
    return root / "_system" / "cache"


def _cache_files(root: Path) -> list[Path]:
    return sorted(p for p in _cache_dir(root).rglob("*") if p.is_file())


def _cold_results(root: Path) -> dict:
    """Results of an open with no cache at all (restores the cache afterwards)."""
    saved = root.parent / "saved-cache"
    shutil.copytree(_cache_dir(root), saved)
    shutil.rmtree(_cache_dir(root))
    res = _results(Repository(root))
    shutil.rmtree(_cache_dir(root), ignore_errors=True)
    shutil.copytree(saved, _cache_dir(root))
    shutil.rmtree(saved)
    return res


@pytest.mark.parametrize("corpus", ["distinct", "with-ties"])
def test_deleting_the_cache_loses_nothing(tmp_path, corpus):
    root = tmp_path / "root"
    _populate(root, ties=corpus == "with-ties")
    assert _cache_files(root), "no cache was written"
    warm = _results(Repository(root))
    assert all(warm[(q, True)] for q in CACHE_QUERIES)
    shutil.rmtree(_cache_dir(root))
    cold = Repository(root)
    cold_res = _results(cold)
    assert cold_res == warm, _first_difference(warm, cold_res)
    cold.close()
    assert _cache_files(root)  # rebuilt
    assert _results(Repository(root)) == warm


def _garble(kind: str, data: bytes) -> bytes:
    if kind == "garbage":
        return b"\x00\xff\xfe garbage {{{ \x9c" * 7
    if kind == "empty":
        return b""
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "bitflip":
        i = len(data) // 2
        return data[:i] + bytes([data[i] ^ 0x55]) + data[i + 1:] if data else b"\x55"
    if kind == "json":
        return b'{"format": 2, "docs": []}'
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["garbage", "empty", "truncated", "bitflip", "json"])
def test_corrupt_cache_is_ignored_and_rebuilt(tmp_path, kind):
    root = tmp_path / "root"
    _populate(root)
    reference = _cold_results(root)
    files = _cache_files(root)
    assert files
    for f in files:
        f.write_bytes(_garble(kind, f.read_bytes()))
    r = Repository(root)  # must not raise
    res = _results(r)
    assert res == reference, _first_difference(reference, res)
    r.close()
    # rebuilt: the next open gets the same results from a cache that works again
    again = Repository(root)
    assert _results(again) == reference


def _hand_edit_same_size_and_time(path: Path, old: str, new: str) -> None:
    st = path.stat()
    raw = path.read_bytes()
    edited = raw.replace(old.encode(), new.encode())
    assert len(edited) == len(raw) and edited != raw
    path.write_bytes(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_stale_cache_is_never_trusted_over_the_files(tmp_path):
    root = tmp_path / "root"
    _populate(root)
    r = Repository(root, policy=POLICY)
    (apple,) = ids(r, "苹果")
    (walk,) = ids(r, "boulder")
    (wall,) = ids(r, "artist")
    apple_path, walk_path, wall_path = (root / r.get(x).path for x in (apple, walk, wall))
    r.close()
    assert _cache_files(root)
    # edits a person makes between two opens, none through the library:
    _hand_edit_same_size_and_time(apple_path, "苹果", "香蕉")     # same size, same mtime
    target = root / "bedrock" / "geo" / walk_path.name
    target.parent.mkdir(parents=True)
    os.rename(walk_path, target)                                # moved to another layer
    wall_path.unlink()                                          # deleted
    (root / "shallow" / "by-hand.md").write_text(               # written by hand
        "---\nid: 01HANDWRITTEN0000000000000\ntitle: 手写\ncreated: '2026-01-02T10:00:00+08:00'\n"
        "---\n手写的笔记：河马在泥里打滚\n", encoding="utf-8")
    # the second open uses the rewritten cache
    for fresh in (Repository(root, policy=POLICY), Repository(root, policy=POLICY)):
        assert ids(fresh, "香蕉") == [apple]
        assert ids(fresh, "苹果") == []
        assert ids(fresh, "boulder") == [walk]
        assert fresh.get(walk).layer == "bedrock" and fresh.get(walk).room == "geo"
        assert ids(fresh, "boulder", layer="sediment") == []
        assert ids(fresh, "boulder", layer="bedrock", room="geo") == [walk]
        assert ids(fresh, "artist") == [] and wall not in fresh
        assert ids(fresh, "河马") == ["01HANDWRITTEN0000000000000"]
        assert len(fresh.view.index) == len(fresh)
        fresh.close()
    res = _results(Repository(root))
    assert res == _cold_results(root), _first_difference(res, _cold_results(root))


def test_warm_open_does_not_call_jieba(tmp_path, monkeypatch):
    root = tmp_path / "root"
    _populate(root)
    Repository(root).close()  # whatever a first open writes
    reference = _cold_results(root)
    calls = Counter()

    def forbid(self, text):
        calls["warm"] += 1
        raise AssertionError("the segmenter (rjieba or jieba) was called on a warm open")

    with monkeypatch.context() as m:
        m.setattr(Tokenizer, "_segment", forbid)
        warm = Repository(root)
        assert len(warm) == 46
    # (the segmenter itself may already be loaded: it is shared by every
    # Repository in the process; what matters is that it is not called)
    assert not calls
    assert _results(warm) == reference  # the queries themselves may start it now
    # the check above means something: without the cache, an open does segment
    shutil.rmtree(_cache_dir(root))
    real = Tokenizer._segment
    with monkeypatch.context() as m:
        def counting(self, text):
            calls["cold"] += 1
            return real(self, text)
        m.setattr(Tokenizer, "_segment", counting)
        Repository(root)
    assert calls["cold"] > 0


# ---------------------------------------------------------------------------
# other processes

CHILD = r'''
import sys
from sediment import InvalidInput, Repository
# another agent: one process, its own Repository, commands on stdin, one answer line each
r = Repository(sys.argv[1], policy={"destructive_per_hour": 100000})
for line in sys.stdin:
    op, *arg = line.split()
    if op == "add":
        out = r.add("蓝鲸每年沿着海岸迁徙 blue whales migrate", title="鲸鱼观察", tags=["海洋"]).id
    elif op == "update":
        out = r.update(arg[0], text="座头鲸在冬天唱歌 humpback songs").id
    elif op == "archive":
        out = r.archive(arg[0], reason="done").id
    elif op == "search":
        out = ",".join(sorted(h.entry.id for h in r.search(arg[0], record=False))) or "-"
    else:
        break
    print(out, flush=True)
r.close()
'''


class _Child:
    def __init__(self, tmp_path: Path, root: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=tmp_path)

    def __call__(self, *cmd: str) -> str:
        self.proc.stdin.write(" ".join(cmd) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, "the other process did not answer"
        out = self.proc.stdout.readline().strip()
        assert out, self.proc.stderr.read()
        return out

    def close(self) -> None:
        try:
            self.proc.communicate("quit\n", timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def test_memory_written_by_another_process_is_searchable_without_reopening(tmp_path):
    root = tmp_path / "root"
    repo = Repository(root, policy=POLICY)
    repo.add("海岸线的地质", title="海岸")
    child = _Child(tmp_path, root)
    try:
        assert ids(repo, "蓝鲸") == []
        eid = child("add")
        assert ids(repo, "蓝鲸") == [eid]
        assert ids(repo, "whales") == [eid]
        assert ids(repo, "海洋", tags=["海洋"]) == [eid]
        assert child("update", eid) == eid
        assert ids(repo, "蓝鲸") == []
        assert ids(repo, "座头鲸") == [eid]
        assert ids(repo, "humpback") == [eid]
        assert child("archive", eid) == eid
        assert ids(repo, "座头鲸") == []
        assert ids(repo, "座头鲸", include_archive=True) == [eid]
        assert len(repo.view.index) == len(repo) == 2
        # and our own writes reach the other process's open view as well
        assert child("search", "蓝鲸") == "-"
        mine = repo.add("蓝鲸又回来了", title="回来")
        assert child("search", "蓝鲸") == mine.id
    finally:
        child.close()


def test_the_index_read_api_and_an_extra_lane(tmp_path):
    """What conflicts, patrol and a semantic lane will build on: document
    frequencies, postings and terms by frequency, read without reaching into
    the lanes; and a further ranking fused by reciprocal rank."""
    repo = Repository(tmp_path / "root")
    a = repo.add("granite and basalt", title="rocks")
    b = repo.add("granite boulders", title="boulders")
    sand = repo.add("sandy beaches", title="sand")
    idx = repo.view.index
    assert idx.df("granit") == 2 and idx.df("basalt") == 1 and idx.df("nothing") == 0
    assert sorted(k for k, _ in idx.postings("granit")) == sorted([a.id, b.id])
    assert dict(idx.terms(min_df=2)) == {"granit": 2}
    (repo.root / b.path).unlink()
    repo.refresh()
    idx = repo.view.index
    assert idx.df("granit") == 1 and [k for k, _ in idx.postings("granit")] == [a.id]  # live documents only

    class Favour:  # (a rank.Lane)
        name, weight, reweigh = "favour", 1.0, {}

        def vouches(self, slot):
            return True

        def unlike(self, slots):
            return [False] * len(slots)

        def rank(self, mask, allowed, depth, lexical):
            assert [s for _, s in lexical["words"]] == [idx.slot_of[sand.id]]  # the index's own, handed over
            slot = idx.slot_of[a.id]
            return [(1.0, slot)] if mask[slot] else []

    hits = idx.search({"sandy": 1.0}, {}, lanes=[Favour()], limit=5)
    assert [h.key for h in hits][-1] == a.id and hits[-1].lanes == {"favour": 1}
