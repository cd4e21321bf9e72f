"""A short text is cut by a Jieba taught only its own words (``segdict``), so a
fresh process that searches once does not build rjieba's whole dictionary.
That is only allowed because the cut is the same: these tests hold it to the
full dictionary's, word for word."""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sediment import Repository
from sediment.search import segdict, textnorm
from sediment.search.tokenize import PARTIAL_LOOKUPS, Tokenizer, _dist_version

PKG = Path(segdict.__file__).resolve().parent.parent
rjieba = pytest.importorskip("rjieba")


def _words() -> list[str]:
    with open(segdict.DICT_PATH, encoding="utf-8") as f:
        return [line.split(" ")[0] for line in f if not line.startswith("#")]


def _texts(n: int, seed: int) -> list[str]:
    """Dictionary words run together (where jieba must choose a route), with
    stray characters (where its HMM guesses words), numbers-free CJK runs
    joined by spaces as the tokenizer passes them."""
    rng = random.Random(seed)
    words = _words()
    chars = [chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(400)]
    out = ["我舅舅今年多大了 上个月的读书会来了多少人", "能给我介绍一下什么是么", "白岳峰是哪一个少数民族的",
           "南京市长江大桥", "结婚的和尚未结婚的", "他说的确实在理", "工信处女干事每月经过下属科室都要亲口交代"]
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(2, 30)):
            r = rng.random()
            parts.append(rng.choice(chars) if r < 0.2 else " " if r < 0.25 else rng.choice(words))
        out.append("".join(parts).strip() or "空")
    return out


def test_the_shipped_dictionary_is_the_installed_rjiebas():
    # a new rjieba may compile another dictionary: tools/make_segdict.py takes
    # it again, or the partial cut is never used (and this says why)
    d = segdict.Dictionary(segdict.DICT_PATH)
    assert d.version == _dist_version("rjieba")
    assert d.total > 0 and d.longest >= 4
    assert d.find("读书会") > 0 and d.find("读书") > 0
    assert d.find("读书会来") == segdict._NO_PREFIX
    assert d.find("读") > 0 and d.find("𠀀") == segdict._NO_PREFIX
    words = _words()
    assert d.find(words[0]) > 0 and d.find(words[-1]) > 0  # (the ends of the binary search)


@pytest.mark.parametrize("hmm", [True, False])
def test_a_partial_dictionary_cuts_as_the_full_one(hmm):
    full = rjieba.Jieba()
    kept = segdict.partial(_dist_version("rjieba"))  # one that keeps what it learnt, as a process's does
    assert kept is not None
    for i, text in enumerate(_texts(600, seed=11 + hmm)):
        assert kept.cut_for_search(text, hmm) == full.cut_for_search(text, hmm), text
        if i % 50 == 0:  # and a fresh one, which knows only this text's words
            fresh = segdict.partial(_dist_version("rjieba"))
            assert fresh is not None and fresh.cut_for_search(text, hmm) == full.cut_for_search(text, hmm), text


def test_threads_share_one_partial_dictionary():
    full = rjieba.Jieba()
    part = segdict.partial(_dist_version("rjieba"))
    assert part is not None
    texts = _texts(200, seed=5)
    wrong: list[str] = []

    def cut(mine: list[str]) -> None:
        wrong.extend(t for t in mine if part.cut_for_search(t, True) != full.cut_for_search(t, True))

    threads = [threading.Thread(target=cut, args=(texts[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_dictionary_of_another_rjieba_is_not_used(tmp_path, monkeypatch):
    text = segdict.DICT_PATH.read_text(encoding="utf-8")
    other = tmp_path / "rjieba-dict.txt"
    other.write_text(text.replace(f"# rjieba {_dist_version('rjieba')}\n", "# rjieba 0.0.1\n", 1), encoding="utf-8")
    monkeypatch.setattr(segdict, "DICT_PATH", other)
    assert segdict.partial(_dist_version("rjieba")) is None
    monkeypatch.setattr(segdict, "DICT_PATH", tmp_path / "missing.txt")
    assert segdict.partial(_dist_version("rjieba")) is None
    tok = Tokenizer(segmenter="rjieba")  # and the tokenizer then loads the whole one
    assert tok.terms("读书会来了多少人")[0] == Tokenizer(segmenter="rjieba").terms("读书会来了多少人")[0]
    assert tok._seg is not None


def test_the_tokenizer_loads_the_whole_dictionary_when_the_partial_one_would_cost_more():
    tok, full = Tokenizer(segmenter="rjieba"), Tokenizer(segmenter="rjieba")
    full.load()
    short = "我舅舅今年多大了？另外，上个月的读书会来了多少人？"
    assert tok.terms(short) == full.terms(short)
    assert tok._seg is None  # (cut by the partial dictionary)
    long_text = "".join(_texts(400, seed=3))
    assert len(long_text) * 3 > PARTIAL_LOOKUPS
    assert tok.terms(long_text) == full.terms(long_text)
    assert tok._seg is not None
    tok2 = Tokenizer(segmenter="rjieba")
    tok2.add_word("读书会来")  # a word the shipped dictionary lacks: the whole one is taught it
    assert "读书会来" in tok2.terms(short)[0] and tok2._seg is not None


_SEARCH = """
import json, sys
from sediment import Repository
from sediment.search.tokenize import shared
if sys.argv[2] == "full":
    shared().load()
with Repository(sys.argv[1]) as repo:
    hits = [(h.entry.id, round(h.score, 9), h.lanes) for h in repo.search(sys.argv[3], limit=20)]
print(json.dumps({"hits": hits, "package": "rjieba" in sys.modules, "whole": shared()._seg is not None}))
"""


def test_a_fresh_process_finds_the_same_without_building_the_dictionary(tmp_path):
    root = tmp_path / "root"
    rng = random.Random(2)
    texts = _texts(60, seed=9)
    with Repository(root) as repo:
        for i, text in enumerate(texts):
            repo.add(text + f"。第{i}条", title=f"笔记{i}")
        repo.add("上个月的读书会来了十二个人", title="读书会")
    env = {**os.environ, "PYTHONPATH": str(PKG.parent)}
    for query in ["读书会来了多少人？", "".join(rng.sample(texts[0], min(8, len(texts[0])))), texts[3][:12]]:
        got = {}
        for how in ("partial", "full"):
            run = subprocess.run([sys.executable, "-c", _SEARCH, str(root), how, query], capture_output=True,
                                 text=True, encoding="utf-8", env=env, timeout=120)
            assert run.returncode == 0, run.stderr
            got[how] = json.loads(run.stdout.strip().splitlines()[-1])
        assert got["partial"]["hits"] == got["full"]["hits"] and got["partial"]["hits"], query
        assert got["partial"]["package"] is False and got["partial"]["whole"] is False
        assert got["full"]["whole"] is True
    # a later import of rjieba (by the person's own code) works as ever, its
    # compiled module where Python puts it
    code = ("from sediment.search import segdict; m = segdict.extension(); import rjieba, rjieba.rjieba; "
            "assert rjieba.rjieba.Jieba is rjieba.Jieba is m.Jieba and segdict.extension() is rjieba.rjieba; "
            "print(rjieba.cut('南京市长江大桥'))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8",
                         env=env, timeout=120)
    assert run.returncode == 0 and "长江大桥" in run.stdout, run.stderr


def test_fold_is_the_same_before_and_after_it_scans(monkeypatch):
    text = "記憶體與數據庫的關係 ＡＢＣ" * 40
    monkeypatch.setattr(textnorm, "_translated", [0])
    first = textnorm.fold(text)
    monkeypatch.setattr(textnorm, "_translated", [textnorm.SCAN_AFTER])
    assert textnorm.fold(text) == first == text.replace("ＡＢＣ", "ABC").translate(textnorm._table())
    assert textnorm.fold("简体中文没有繁体字") == "简体中文没有繁体字"


def test_a_text_holding_the_filler_leaves_the_total_as_it_was():
    # the word that carries the rest of the total was swapped for another when
    # a text held it, and the first kept its frequency: every later cut was
    # made with the total about twice the dictionary's
    full = rjieba.Jieba()
    kept = segdict.partial(_dist_version("rjieba"))
    assert kept is not None
    texts = _texts(120, seed=21)
    for i, text in enumerate(texts):
        if i % 3 == 1:
            text = f"{text}\x00\x01{texts[i - 1]}"
        for hmm in (True, False):
            assert kept.cut_for_search(text, hmm) == full.cut_for_search(text, hmm), (i, text)
    every = "读书会\x00\x01来了\x00\x02多少\x00\x03人"  # (and a text holding every filler is cut too)
    assert kept.cut_for_search(every, True) == full.cut_for_search(every, True)


def _tiny(tmp_path: Path, freq: dict[str, int]) -> segdict.Dictionary:
    lines = [f"# rjieba {_dist_version('rjieba')}", f"# total {sum(freq.values())}",
             f"# longest {max(map(len, freq))}"]
    lines += [f"{w} {freq[w]}" for w in sorted(freq, key=lambda w: w.encode())]
    path = tmp_path / "tiny-dict.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return segdict.Dictionary(path)


def test_a_partial_dictionary_that_has_learnt_every_word_keeps_the_total(tmp_path):
    # 甲乙 is cut in two when 11 * total < 30 * 30 (total 81), whole with a
    # total one more: the filler took 1 when nothing was left for it
    freq = {"甲": 30, "乙": 30, "甲乙": 11, "丙": 10}
    whole = segdict.extension().Jieba.empty()
    for w, f in freq.items():
        whole.add_word(w, f, None)
    assert whole.cut("甲乙", False) == ["甲", "乙"]
    part = segdict.Partial(_tiny(tmp_path, freq), segdict.extension())
    for text in ("甲乙", "丙", "甲乙丙", "甲乙"):
        assert part.cut_for_search(text, False) == whole.cut_for_search(text, False), text



@functools.cache
def _kept_and_full() -> tuple[segdict.Partial, Any]:
    part = segdict.partial(_dist_version("rjieba"))
    assert part is not None
    return part, rjieba.Jieba()


_PIECES = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x20000, max_codepoint=0x2FA1F),
    st.characters(exclude_categories=("Cs",)), st.sampled_from(list("aZ09+#&._%- \n\r\t\u3000，")),
    st.sampled_from(["\x00\x01", "\x00\x02", "\x00\x03", "\r\n", "C++", "AT&T", "4S店", "4s店", "一一", "龢", "1号店"]),
    st.sampled_from(["我舅舅", "今年", "多大", "读书会", "结婚", "和尚", "尚未", "的确", "确实", "实在", "在理",
                     "长江大桥"]))


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_PIECES, max_size=40).map("".join), st.booleans())
def test_any_text_is_cut_as_the_full_dictionary_cuts_it(text, hmm):
    # any string, not only the tokenizer's CJK runs: control and
    # supplementary-plane characters, the filler itself, by a Partial that has
    # learnt every text before it (one run in three failed before one
    # filler was kept for all texts)
    kept, full = _kept_and_full()
    assert kept.cut_for_search(text, hmm) == full.cut_for_search(text, hmm)


def test_fold_scans_a_text_longer_than_is_left_to_translate(monkeypatch):
    # translated a character at a time, a first text of a million characters
    # cost ~55 ms more than its scan: only the first SCAN_AFTER characters are
    monkeypatch.setattr(textnorm, "_translated", [0])
    textnorm._traditional.cache_clear()
    text = "简体中文没有繁体字" * (textnorm.SCAN_AFTER // 9 + 1)
    assert textnorm.fold(text) == text
    assert textnorm._traditional.cache_info().misses == 1  # (the scan's class was compiled for it)
    assert textnorm.fold("記憶體") == "记忆体" and textnorm.fold("简体") == "简体"


def test_threads_share_a_tokenizer_while_it_switches_to_the_whole_dictionary(monkeypatch):
    # the budget runs out while other threads cut by the partial dictionary:
    # every cut is still the whole dictionary's, none raises, none waits forever
    texts = _texts(300, seed=17)
    full = Tokenizer(segmenter="rjieba")
    full.load()
    want = {t: full.terms(t) for t in texts}
    made: list[segdict.Partial | None] = []
    real = segdict.partial

    def kept(version: str) -> segdict.Partial | None:  # (the real one, kept to be looked at)
        made.append(real(version))
        return made[-1]

    monkeypatch.setattr(segdict, "partial", kept)
    tok = Tokenizer(segmenter="rjieba")
    start = threading.Barrier(6)
    wrong: list[str] = []
    raised: list[BaseException] = []

    def cut(k: int) -> None:
        try:
            start.wait()
            wrong.extend(t for t in random.Random(k).sample(texts, 120) if tok.terms(t) != want[t])
        except BaseException as e:  # noqa: BLE001 (reported below)
            raised.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # (threads switch often)
    try:
        threads = [threading.Thread(target=cut, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads) and raised == [] and wrong == []
    part = made[0] if len(made) == 1 else None
    assert part is not None and part.lookups > PARTIAL_LOOKUPS // 2  # (the partial one cut until it switched)
    assert tok._seg is not None and tok._partial is False
