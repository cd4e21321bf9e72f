"""A bulk-built index (the cold open's workers make each chunk's postings,
the opening process merges them per term) is the index a put per document
gives, byte for byte: the same snapshot, the same search results, whatever
is mixed in (a restored base, documents indexed one by one in between, a
document removed, a document read but never indexed)."""

from __future__ import annotations

import pickle
import random

from sediment.search.index import Batch, DocTerms, Index, Pending

WORDS = [f"w{i}" for i in range(300)] + ["deploy", "登录", "缓存", "移动端"]
BIGRAMS = ["登录", "录用", "缓存", "移动", "动端", "部署"]


def _docs(n: int, seed: int = 7) -> list[tuple[str, DocTerms]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = {w: rng.choice((1, 1, 1, 2, 3, 7)) for w in rng.sample(WORDS, rng.randint(0, 12))}
        bigrams = {b: rng.randint(1, 4) for b in rng.sample(BIGRAMS, rng.randint(0, 3))}
        out.append((f"k{i:04d}", DocTerms(words, bigrams)))
    return out


def _keys(keys):
    """An owner's column: the keys again, as the index gave them (slot order)."""
    return [("keys", "\n".join(keys).encode())]


def _same(a: Index, b: Index) -> None:
    assert b"".join(a.snapshot(_keys, "f")) == b"".join(b.snapshot(_keys, "f"))
    for q in ({"deploy": 1.0}, {"w3": 1.0, "w17": 1.5}, {"登录": 1.0, "w1": 1.0}):
        hits = [(h.key, h.score, h.terms) for h in a.search(q, {"缓存": 1.0}, limit=30)]
        assert hits == [(h.key, h.score, h.terms) for h in b.search(q, {"缓存": 1.0}, limit=30)]


def test_batches_merge_into_the_index_puts_give():
    docs = _docs(400)
    one = Index()
    for k, t in docs:
        one.put(k, t)
    bulk = Index()
    for lo in range(0, len(docs), 64):
        chunk = docs[lo:lo + 64]
        batch = pickle.loads(pickle.dumps(Batch([t for _, t in chunk], lo)))  # (as a worker sends it)
        for i, (k, _) in enumerate(chunk):
            bulk.put(k, Pending(batch, i))
    assert bulk.dead == 0 and len(bulk) == len(one)
    _same(one, bulk)


def test_a_bulk_build_on_a_base_with_puts_removals_and_skipped_documents():
    docs = _docs(300, seed=11)
    base, rest = docs[:100], docs[100:]
    one, bulk = Index(), Index()
    for k, t in base:
        one.put(k, t)
        bulk.put(k, t)
    data = b"".join(one.snapshot(_keys, "f"))
    one, _ = Index.restore(data, "f")
    bulk, _ = Index.restore(data, "f")
    one.put(*rest[0])  # a delta before the first batch
    bulk.put(*rest[0])
    batch = Batch([t for _, t in rest[1:150]])
    for i, (k, t) in enumerate(rest[1:150]):
        if i == 5:
            continue  # read, but left out (a duplicate id): never put
        if i == 40:  # a document put on its own between two of a batch
            one.put(*rest[160])
            bulk.put(*rest[160])
        one.put(k, t)
        bulk.put(k, Pending(batch, i))
    for k, t in (rest[20], base[3]):  # a batch's document and a base one, removed
        one.remove(k, t)
        bulk.remove(k, t)
    for k, t in (base[4], base[6]):  # base ones, removed and put again (a note moved by hand)
        one.remove(k, None)
        bulk.remove(k, None)  # (their vectors are in the base: no merge for them)
        one.put(k, t)
        bulk.put(k, t)
    assert bulk.merges == 0
    assert bulk.df("deploy") == one.df("deploy")  # (a read merges)
    tail = rest[170:]
    batch = Batch([t for _, t in tail])
    for i, (k, t) in enumerate(tail):
        one.put(k, t)
        bulk.put(k, Pending(batch, i))
    one.remove(tail[-1][0], None)  # the words' vectors say what it had
    bulk.remove(tail[-1][0], None)
    _same(one, bulk)


def test_a_restored_index_reads_its_arrays_in_place_and_survives_a_bad_term_id():
    """A restore keeps the lanes' arrays as views of what it read; a term
    vector with an id past the vocabulary (a writer's bug: the checksum
    passes) is skipped where vectors are read, never an exception."""
    from sediment.search.feedback import Feedback
    docs = _docs(200, seed=3)
    idx = Index()
    for k, t in docs:
        idx.put(k, t)
    idx.fold()
    idx.words.vec_terms[0] = 10 ** 6
    data = b"".join(idx.snapshot(_keys, "f"))
    back, _ = Index.restore(data, "f")
    assert isinstance(back.words.base_slots, memoryview)
    hits = back.search({"deploy": 1.0, "w1": 1.0}, {}, limit=10, feedback=Feedback())
    assert hits and back.words.vector_df(back.slot_of[docs[0][0]]) is not None
    back.put("new", DocTerms({"deploy": 2}, {}))  # and a restored base takes puts and folds
    back.fold()
    assert back.df("deploy") == idx.df("deploy") + 1
    # a fold with a new term, a compaction, a bulk merge: each maps every id,
    # and drops the bad one (the document keeps its other terms)
    had = set(docs[0][1].words)
    for step in ("fold", "compact", "merge"):
        back, _ = Index.restore(data, "f")
        if step == "fold":
            back.put("new", DocTerms({"zzz": 1}, {}))
            back.fold()
        elif step == "compact":
            for k, _ in docs[1:60]:
                back.remove(k, None)
            back.compact()
        else:
            batch = Batch([DocTerms({"zzz": 1, "deploy": 1}, {"缓存": 1})] * 3, len(back.key_of))
            for i in range(3):
                back.put(f"b{i}", Pending(batch, i))
            back.remove(docs[1][0], None)
            back.settle()
        got = {t for t, _ in back.words.vector(back.slot_of[docs[0][0]])}
        assert got < had and len(got) == len(had) - 1, step
        for k, t in docs[1:]:  # and every other document keeps its own terms, each mapped
            if k in back.slot_of:  # (a drop that misaligned the offsets would give them a neighbour's)
                assert {w for w, _ in back.words.vector(back.slot_of[k])} == set(t.words), (step, k)
        assert len(back.search({"deploy": 1.0, "w1": 1.0}, {}, limit=10, feedback=Feedback())) > 0
        assert back.df("zzz") == {"fold": 1, "compact": 0, "merge": 3}[step]


def test_frequencies_are_kept_as_bytes_where_they_fit_and_exactly_where_not():
    """A lane whose frequencies all fit in a byte keeps them as bytes; one
    frequency over 255 keeps the lane's two-byte ones, through a snapshot."""
    docs = _docs(50, seed=5)
    idx = Index()
    for k, t in docs:
        idx.put(k, t)
    idx.put("long", DocTerms({"deploy": 300, "w1": 1}, {"缓存": 2}))
    data = b"".join(idx.snapshot(_keys, "f"))
    back, _ = Index.restore(data, "f")
    assert back.words.base_tfs.format == "H" and back.bigrams.base_tfs.format == "B"
    assert ("long", 300) in back.postings("deploy") and ("long", 2) in back.postings("缓存", "bigrams")
    assert back.postings("deploy") == idx.postings("deploy")
    back.put("more", DocTerms({"deploy": 1}, {"缓存": 1}))  # a restored byte lane folds with a two-byte delta
    back.fold()
    assert ("more", 1) in back.postings("deploy") and back.df("缓存", "bigrams") == idx.df("缓存", "bigrams") + 1
