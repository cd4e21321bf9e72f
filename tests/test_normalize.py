"""Normalisation a Chinese (and any) user expects, and the bigram rule:

* Traditional and Simplified characters find each other (記憶 / 记忆), both ways;
* full-width and half-width forms find each other (ＡＢＣ１２３ / ABC123);
* a Latin name written together, apart or hyphenated finds the others
  (ArgoCD / Argo CD / argo-cd; Mate60 / Mate 60);
* a note's bytes and the snippet shown stay as written;
* a bigram with a function character is kept when it is a word (地方, 现在,
  过去, 个人, 对面) and dropped when it is only glue (的书);
* the index fingerprint names the normalisation, so a snapshot made with
  other index terms is rebuilt, not trusted.
"""

from __future__ import annotations

import pytest

from sediment import Repository
from sediment.search import textnorm as TN
from sediment.search import locate, tokenize as T
from sediment.search.tokenize import Tokenizer


def ids(repo: Repository, query: str) -> list[str]:
    # the direct matches (the feedback lane may add memories that share no term)
    return [h.entry.id for h in repo.search(query, limit=20, record=False) if h.terms]


@pytest.fixture
def repo(tmp_path):
    r = Repository(tmp_path / "root")
    yield r
    r.close()


def test_traditional_and_simplified_find_each_other(repo):
    simp = repo.add("长期记忆要写进笔记，别只放在脑子里。", title="记忆")
    trad = repo.add("這台電腦的記憶體不夠用了，開機很慢。")
    repo.add("今天天气很好，去公园散步。")
    assert set(ids(repo, "記憶")) == {simp.id, trad.id}
    assert trad.id in ids(repo, "电脑内存不够，记忆体")
    assert simp.id in ids(repo, "長期記憶")
    assert ids(repo, "開機") == ids(repo, "开机") == [trad.id]


def test_a_traditional_tag_is_found_by_a_simplified_query(repo):
    e = repo.add("team notes", tags=["資料庫"])
    assert ids(repo, "资料库") == [e.id]


def test_full_width_and_half_width_find_each_other(repo):
    full = repo.add("型号ＡＢＣ１２３的路由器，密码写在背面。")
    half = repo.add("the XYZ789 router sits under the desk")
    assert ids(repo, "ABC123") == [full.id]
    assert ids(repo, "abc123") == [full.id]
    assert ids(repo, "ＸＹＺ７８９") == [half.id]
    # full-width punctuation and spaces separate words like their ASCII forms
    assert ids(repo, "ＸＹＺ７８９，ｒｏｕｔｅｒ")[0] == half.id


@pytest.mark.parametrize("written", ["We deploy with ArgoCD now.", "We deploy with Argo CD now.",
                                     "We deploy with argo-cd now.", "用 Argo CD 部署服务"])
@pytest.mark.parametrize("query", ["ArgoCD", "Argo CD", "argo-cd", "argocd", "ＡｒｇｏＣＤ"])
def test_a_latin_name_written_apart_or_together_finds_the_others(tmp_path, written, query):
    repo = Repository(tmp_path / "root")
    e = repo.add(written)
    repo.add("the argonaut sailed; cd the folder; a CD player")
    try:
        assert ids(repo, query)[0] == e.id
    finally:
        repo.close()


def test_a_model_name_and_its_number(repo):
    e = repo.add("新手机是华为Mate60，电池很耐用")
    repo.add("充电 60 分钟就满了")
    assert ids(repo, "Mate 60")[0] == e.id
    assert ids(repo, "mate60") == [e.id]


def test_capitalised_prose_is_not_joined():
    words, _ = Tokenizer().terms("Hey Mel, Visual Studio is open; see b4b6e05")
    assert "heymel" not in words and "visualstudio" not in words
    assert "b4b6e05" in words and "b" not in words  # an id is not split into pieces


def test_the_note_and_the_snippet_stay_as_written(repo):
    text = "這台電腦的記憶體不夠用了，型號ＡＢＣ１２３，用ArgoCD部署。"
    e = repo.add(text)
    path = repo.root / e.path
    before = path.read_bytes()
    hits = repo.search("记忆体", record=False)
    assert hits and "記憶體" in hits[0].snippet and "记忆" not in hits[0].snippet
    assert "ＡＢＣ１２３" in repo.search("abc123", record=False)[0].snippet
    assert path.read_bytes() == before
    assert repo.get(e.id).body.strip() == text


def test_fold_is_one_character_for_one_on_chinese():
    text = "這台電腦的記憶體，乾隆與乾燥"
    assert len(TN.fold(text)) == len(text)
    assert TN.fold("記憶") == "记忆" and TN.fold("记忆") == "记忆"


@pytest.mark.parametrize("segmenter", ["rjieba", "jieba"])
def test_a_function_character_pair_that_is_a_word_is_a_bigram(segmenter):
    tok = Tokenizer(segmenter=segmenter)
    _, bigrams = tok.terms("在地方上，现在我们过去对面的个人工作室看看我的书")
    for word in ("地方", "现在", "过去", "对面", "个人"):
        assert word in bigrams, word
    for glue in ("的书", "我的", "我们", "在地", "上现"):
        assert glue not in bigrams, glue
    # 个人 is a word, but not where jieba cut 这个 / 人
    assert "个人" not in tok.terms("这个人很好")[1]


def test_a_word_with_a_function_character_matches_in_both_lanes(repo):
    e = repo.add("公司对面新开了一家面馆")
    hits = repo.search("对面", record=False)
    assert [h.entry.id for h in hits] == [e.id]
    assert "bigrams" in hits[0].lanes  # 对 is a function character, 对面 a word


def test_the_fingerprint_names_the_normalisation(monkeypatch):
    tok = Tokenizer()
    before = tok.fingerprint()
    monkeypatch.setattr(TN, "VERSION", TN.VERSION + "-next")
    assert tok.fingerprint() != before
    monkeypatch.undo()
    monkeypatch.setattr(TN, "table_digest", lambda: "another table")
    assert tok.fingerprint() != before
    monkeypatch.undo()
    monkeypatch.setattr(T, "BIGRAM_RULE", "another rule")
    assert tok.fingerprint() != before
    monkeypatch.undo()
    assert tok.fingerprint() == before


def test_a_snapshot_made_before_folding_is_rebuilt(tmp_path, monkeypatch):
    """A root indexed by a tokenizer that did not fold Traditional characters
    (an older version) is found by a Simplified query once reopened."""
    root = tmp_path / "root"
    monkeypatch.setattr(T, "fold", lambda s: s)
    monkeypatch.setattr(TN, "VERSION", "0")
    repo = Repository(root)
    e = repo.add("這台電腦的記憶體不夠用了")
    assert ids(repo, "记忆体") == []  # indexed without folding
    repo.close()
    snap = root / "_system" / "cache" / "index.bin"
    assert snap.exists()
    monkeypatch.undo()
    again = Repository(root)
    try:
        assert ids(again, "记忆体") == [e.id]
    finally:
        again.close()


@pytest.mark.parametrize("text, terms, shown, at", [
    # hints of two terms that overlap ('m o' of 'vimbompim oauth', for 'mov')
    ("vimbompim oauth to move", ["mov", "oauth"], {"oauth": "oauth", "mov": "move"}, 10),
    # a name written as two words, the second full width
    ("Deploy with Argo ＣＤ today", ["argocd", "argo", "cd"],
     {"argo": "Argo", "argocd": "Argo ＣＤ", "cd": "ＣＤ"}, 12),
    # a letter that is not ASCII but folds to one (the Kelvin sign)
    ("\u212aelvin scale", ["kelvin"], {"kelvin": "\u212aelvin"}, 0),
    # a name joined by '_', a stem that is not a prefix of its word ('ies' → 'y')
    ("set max_connections high; Studies show", ["maxconnection", "study", "studi"],
     {"maxconnection": "max_connections", "study": "Studies"}, 26),
    ("ＰＫＣＥ flow, 資料庫 backup", ["pkce", "资料库", "#资料库"],
     {"pkce": "ＰＫＣＥ", "资料库": "資料庫", "#资料库": "資料庫"}, 0),
])
def test_a_hit_shows_the_words_as_written_wherever_the_index_found_them(text, terms, shown, at):
    # a search shows a hit's words as written and a snippet around the first:
    # only the words that may stand for a term are normalised and stemmed
    # (locate._candidates), and none of them may be missed
    assert locate.surfaces(text, terms) == shown
    assert locate.find_term(text, {t.lstrip("#") for t in terms}) == at
