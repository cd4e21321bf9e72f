"""Pruning changes the cost of a search, never its result: the first ``limit``
hits (keys, scores, lane ranks) are identical with and without it, and so is
each lane's own top list.

* a generated 20,000-document index (Zipf-distributed words, so queries mix
  very common and rare terms: the case pruning is for), queries with and
  without a filter, limits 1 to 50, with and without the feedback lane;
* LoCoMo's questions over its dialog turns, when the benchmark data is there
  (``SEDIMENT_BENCH_DATA`` = the bench-data folder; skipped otherwise).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest

from sediment.model.entry import Entry
from sediment.search.feedback import Feedback
from sediment.search.index import DocTerms, Index
from sediment.search.maxscore import bm25
from sediment.search.query import doc_terms, query_terms
from sediment.search.tokenize import Tokenizer

FB = Feedback()


def _zipf_index(n: int, seed: int) -> tuple[Index, list[str]]:
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    idx = Index()
    for d in range(n):
        words = rnd.choices(vocab, cum_weights=cum, k=rnd.randint(5, 60))
        bigrams = rnd.choices(vocab[:3000], cum_weights=cum[:3000], k=rnd.randint(0, 10))
        idx.put(f"k{d:06d}", DocTerms.build([(words, [b + "b" for b in bigrams], 1)]), flags=d % 3 == 0)
        if d == n // 2:
            idx.fold()  # half in the base, half in the delta: both kinds of posting runs
    for d in range(0, n, 97):  # dead slots too
        idx.remove(f"k{d:06d}", None)
    return idx, vocab


def _same(idx: Index, words: dict, bigrams: dict, **kw) -> None:
    on = idx.search(words, bigrams, prune=True, **kw)
    off = idx.search(words, bigrams, prune=False, **kw)
    assert [(h.key, h.score, h.lanes, h.terms, h.expansion) for h in on] == \
           [(h.key, h.score, h.lanes, h.terms, h.expansion) for h in off], (words, kw)


@pytest.mark.slow
def test_pruned_top_equals_exhaustive_top_on_a_generated_20k_index():
    _pruned_equals_exhaustive(20_000, seed=3)


def test_pruned_top_equals_exhaustive_top_on_a_generated_3k_index():
    # (the 20k run's smaller twin, in the default run)
    _pruned_equals_exhaustive(3_000, seed=8)


def _pruned_equals_exhaustive(n: int, seed: int) -> None:
    idx, vocab = _zipf_index(n, seed=seed)
    rnd = random.Random(seed + 2)
    for q in range(60):
        # a few of the commonest words (postings of thousands) and some rare
        # ones; a common word alone too (its list read best first: by_impact)
        common = rnd.sample(vocab[:30], 1 if q % 5 == 1 else rnd.randint(1, 4))
        rare = [] if q % 5 == 1 else rnd.sample(vocab[30:], rnd.randint(0, 4))
        words = {t: rnd.choice((1.0, 1.5)) for t in common + rare}
        bigrams = {b + "b": 1.0 for b in rnd.sample(vocab[:200], rnd.randint(0, 3))}
        limit = rnd.choice((1, 10, 50))
        allowed = (lambda k: int(k[1:]) % 5 != 0) if q % 4 == 0 else None
        _same(idx, words, bigrams, limit=limit, allowed=allowed, exclude=1 if q % 3 == 0 else 0,
              feedback=FB if q % 2 else None)
    # and each lane's own ranking, score for score: the rare-term ranking is
    # found from subsets of the terms when pruning (up to 8 terms; more are
    # summed in the walk, as without pruning), with words of equal idf (two
    # subsets with the same sum), with and without a mask and a filter
    mask = bytes(1 for _ in idx.key_of)
    some = bytes(1 if s % 7 else 0 for s in range(len(idx.key_of)))
    by_df: dict[int, list[str]] = {}
    for t in vocab[200:3000]:
        by_df.setdefault(idx.words.df(t), []).append(t)
    twins = [ts[:2] for ts in by_df.values() if len(ts) > 1]
    for q in range(30):
        picked = rnd.sample(vocab[:20], rnd.randint(1, 4)) + rnd.sample(vocab[20:2000], rnd.randint(0, 7))
        picked += rnd.choice(twins) if q % 2 else []
        words = {t: 1.0 for t in picked}
        allowed = (lambda s: s % 5 != 0) if q % 3 == 0 else None
        m = some if q % 4 == 0 else mask
        for depth in (10, 100):
            assert (bm25(idx.words, words, m, allowed, depth, rare=True, prune=True)
                    == bm25(idx.words, words, m, allowed, depth, rare=True, prune=False)), (q, depth)


def test_pruning_does_skip_work():
    """Not a timing: the pruned search must really leave the common terms'
    posting lists unwalked (else the test above would pass vacuously)."""
    idx, vocab = _zipf_index(5_000, seed=4)
    seen: list[int] = []
    mask = bytearray(b"\x01") * len(idx.key_of)

    class Counting(bytearray):
        def __getitem__(self, i):  # type: ignore[override]
            seen.append(i)
            return bytearray.__getitem__(self, i)

    # words in a few hundred documents each fill the top 10; the two commonest
    # (in nearly every document) can then only be probed
    words = {vocab[0]: 1.0, vocab[1]: 1.0, vocab[50]: 1.0, vocab[60]: 1.0}
    bm25(idx.words, words, Counting(mask), None, 10, prune=True)
    pruned = len(seen)
    seen.clear()
    bm25(idx.words, words, Counting(mask), None, 10, prune=False)
    assert pruned * 3 < len(seen)


def test_a_common_words_postings_are_read_only_as_far_as_its_best_documents():
    """Not a timing: a word in every document, asked alone or last, is read
    best document first and no further than its best documents go
    (``maxscore.by_impact``); the top is the exhaustive one."""
    idx = Index()
    for d in range(4000):
        often = 6 if 1000 <= d < 1010 else 1  # ten documents say it most
        idx.put(f"k{d:05d}", DocTerms.build([(["common"] * often + [f"u{d}"] * 40 + ["rare"] * (d % 500 == 0), [], 1)]))
    idx.fold()
    seen: list[int] = []

    class Counting(bytearray):
        def __getitem__(self, i):  # type: ignore[override]
            seen.append(i)
            return bytearray.__getitem__(self, i)

    mask = bytearray(b"\x01") * len(idx.key_of)
    for words in ({"common": 1.0}, {"rare": 1.0, "common": 1.0}):
        got = bm25(idx.words, words, Counting(mask), None, 10, prune=True)
        pruned = len(seen)
        seen.clear()
        assert got == bm25(idx.words, words, Counting(mask), None, 10, prune=False)
        assert pruned * 5 < len(seen), words
        seen.clear()
        assert [h.key for h in idx.search(words, {}, limit=10, feedback=FB)] == \
               [h.key for h in idx.search(words, {}, limit=10, feedback=FB, prune=False)]
    # a filter that leaves out the best documents: the next ones are read
    allowed = lambda s: not 1000 <= s < 1005  # noqa: E731
    assert (bm25(idx.words, {"common": 1.0}, mask, allowed, 10, prune=True)
            == bm25(idx.words, {"common": 1.0}, mask, allowed, 10, prune=False))


def _locomo() -> Path | None:
    data = os.environ.get("SEDIMENT_BENCH_DATA")
    path = Path(data) / "locomo" / "locomo10.json" if data else None
    return path if path and path.is_file() else None


@pytest.mark.skipif(_locomo() is None, reason="set SEDIMENT_BENCH_DATA to the bench-data folder")
def test_pruned_top_equals_exhaustive_top_on_locomo(tmp_path):
    tok = Tokenizer(tmp_path / "cache")
    samples = json.loads(_locomo().read_text(encoding="utf-8"))  # type: ignore[union-attr]
    for s in samples[:3]:
        idx = Index()
        conv = s["conversation"]
        for k, v in conv.items():
            if k.startswith("session_") and isinstance(v, list):
                for t in v:
                    e = Entry(meta={"id": t["dia_id"], "title": ""}, body=f"{t['speaker']}: {t['text']}",
                              path=f"shallow/{t['dia_id']}.md")
                    idx.put(t["dia_id"], doc_terms(tok, e))
        for qa in s["qa"]:
            words, bigrams = query_terms(tok, str(qa["question"]))
            _same(idx, words, bigrams, limit=50, feedback=FB)


@pytest.mark.slow
def test_feedback_lane_reusing_the_word_scores_is_the_expanded_query_scored_whole():
    """The feedback lane adds only the expansion terms to the word lane's
    scores: its top list is what BM25 of the whole expanded query gives,
    pruned or not, with a filter or without, whether or not the word lane
    pruned (documents it dropped or never reached)."""
    from sediment.search import feedback as F
    from sediment.search.maxscore import Scored
    idx, vocab = _zipf_index(20_000, seed=3)
    rnd = random.Random(7)
    mask = bytes(1 if f & 0x80 else 0 for f in idx.flags)
    pruned_words = 0
    for q in range(60):
        picked = rnd.sample(vocab[:40], rnd.randint(1, 4)) + rnd.sample(vocab[40:3000], rnd.randint(0, 3))
        words = {t: 1.0 for t in picked}
        exp = {t: rnd.uniform(0.05, 0.5) for t in rnd.sample(vocab[:2000], 10) if t not in words}
        allowed = (lambda s: s % 5 != 0) if q % 3 == 0 else None
        for depth in (10, 100):
            whole, _ = bm25(idx.words, {**words, **exp}, mask, allowed, depth, prune=False)
            for prune in (True, False):
                st = Scored()
                bm25(idx.words, words, mask, allowed, depth, rare=True, prune=prune, state=st)
                pruned_words += bool(st.dropped or st.outside)
                got = F.score(idx.words, st, exp, mask, allowed=allowed, depth=depth, prune=prune)
                assert [s for _, s in got] == [s for _, s in whole], (q, depth, prune)
                assert all(abs(a - b) < 1e-9 for (a, _), (b, _) in zip(got, whole))
    assert pruned_words  # the case where word scores must be found again was met


def test_top_lists_are_the_sorted_pairs_with_the_ties_the_cut_splits_settled():
    """A lane's top list is taken without sorting every (score, slot) pair
    (``toplist.top_of``): it must be exactly the sorted pairs' head, where
    the documents tied at a score the cut would split are settled by the
    order given, or left out without one (never by slot, the order they
    were indexed in), also when thousands tie
    at the cut (the rare-term lane of a one-word query: every document
    scores that word's idf), and the depth-th best must be the sorted
    values' one, in both the sort and the heap regime."""
    from sediment.search.toplist import nth, top_of
    rnd = random.Random(11)
    for n, values in ((50, 5), (3_000, 7), (20_000, 3), (20_000, 10_000), (5_000, 1)):
        for depth in (1, 10, 100):
            scores = {rnd.randrange(10 * n): rnd.randrange(values) / 7 for _ in range(n)}
            want = sorted([(sc, s) for s, sc in scores.items()], reverse=True)
            head = want[:depth]
            if len(want) > depth and want[depth][0] == head[-1][0]:
                head = [x for x in head if x[0] != head[-1][0]]
            assert top_of(scores, depth) == head, (n, values, depth)
            # settled by an order instead (here the slot's own: the sorted head itself)
            assert top_of(scores, depth, lambda s: f"{s:09d}") == want[:depth], (n, values, depth)
            assert nth(scores, depth) == (want[depth - 1][0] if len(want) >= depth else -1.0)
            assert nth(list(scores.values()), depth) == nth(scores, depth)


def test_feedback_lane_below_a_tie_the_word_lanes_cut_split_is_the_expanded_query_scored_whole():
    """When the word lane left out a tie its cut would split (its top is
    shorter than ``depth``), the documents of that tie still score their word
    score in the expanded query: the feedback lane must leave them out as a
    tie too, and nothing below them comes in (a document with only an
    expansion term, scoring less, took their places)."""
    from sediment.search import feedback as F
    from sediment.search.maxscore import Scored
    for top_docs in (0, 3):
        idx = Index()
        for i in range(70):  # (alike: one tie at the word lane's cut)
            idx.put(f"a{i:03}", DocTerms({"alpha": 1, f"w{i}": 1}, {}))
        for i in range(top_docs):  # (above the tie)
            idx.put(f"b{i:03}", DocTerms({"alpha": 2, f"v{i}": 1}, {}))
        for i in range(3):  # (an expansion term only: below the tie)
            idx.put(f"g{i:03}", DocTerms({"gamma": 1, f"u{i}": 5}, {}))
        for i in range(500):  # (alpha not common: its tie scores above gamma's documents)
            idx.put(f"z{i:03}", DocTerms({"zeta": 1}, {}))
        mask = bytes(1 if f & 0x80 else 0 for f in idx.flags)
        for depth, key in itertools.product((10, 50), (None, idx.key_of.__getitem__)):
            # (with the keys, the word lanes break the tie by them: the same again)
            whole, _ = bm25(idx.words, {"alpha": 1.0, "gamma": 0.1}, mask, None, depth, prune=False, order=key)
            for prune in (True, False):
                st = Scored()
                bm25(idx.words, {"alpha": 1.0}, mask, None, depth, rare=True, prune=prune, state=st, order=key)
                got = F.score(idx.words, st, {"gamma": 0.1}, mask, allowed=None, depth=depth, prune=prune, order=key)
                # (the order within a tie is no rank: rank fusion gives a tie one)
                assert sorted(got, reverse=True) == sorted(whole, reverse=True), (top_docs, depth, prune, key)
