"""The feedback lane and the term vectors it reads.

* the second hop: a memory that shares no word with the question, but shares
  its words with the memory that answered it, is found (on by default);
  ``feedback_docs: 0`` in the policy turns the lane off, and the memory is not;
* the candidate rule: such a memory comes only through a lexical match of the
  expanded query, and the lanes beyond the query's own lexical match never
  push every direct hit out of the first ``limit``;
* a question its matches answer (a rare word, every word of it in one
  note) brings no company: the lane reorders, never adds;
* ``explain=True``: each hit's lane ranks and the expansion terms;
* what counts as a recall: a hit the expansion alone brought is shown, never
  counted, so four days of the same question promote only what answered it;
* the expansion: the first result's words lead it (feedback memories weigh
  by rank), in Chinese and English; a lone CJK character is never a term;
* term vectors: kept through a snapshot; a snapshot of the previous format is
  rebuilt, never misread.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import struct

import pytest

from sediment import Repository
from sediment.search import snapshot as SN
from sediment.search.feedback import Feedback
from sediment.search.index import DocTerms, Index


@pytest.fixture
def second_hop(tmp_path):
    """The answer to 'which phone did Wei buy' names the phone only; the memory
    about its battery never says 'Wei' or 'buy' or 'phone'."""
    repo = Repository(tmp_path / "root")
    ids = {
        "buy": repo.add("Wei bought a phone yesterday: the Nokia Lumia 920.", title="Wei's phone"),
        "battery": repo.add("The Lumia 920 battery lasts two days, the Nokia forum says.", title="battery"),
        "other": repo.add("The weather in Lisbon was warm and sunny.", title="weather"),
        "cook": repo.add("Dinner: a soup with lentils and lemon.", title="soup"),
        "lumia": repo.add("Lumia is also a festival of light in Durham.", title="festival"),
    }
    return repo, {k: e.id for k, e in ids.items()}


def test_second_hop_memory_is_found_through_the_expanded_query(second_hop):
    repo, m = second_hop
    hits = repo.search("which phone did Wei buy", record=False)
    found = [h.entry.id for h in hits]
    assert found[0] == m["buy"]
    assert m["battery"] in found
    # only through words it shares with the first results: never the unrelated ones
    assert m["other"] not in found and m["cook"] not in found
    battery = hits[found.index(m["battery"])]
    # through the phone's model ('lumia' itself, in 3 of the 5 memories, says too little here)
    assert battery.terms == () and {"Nokia", "920"} <= set(battery.expansion) and "feedback" in battery.lanes


def test_policy_turns_the_lane_off(second_hop, tmp_path):
    repo, m = second_hop
    off = Repository(repo.root, policy={"feedback_docs": 0})
    assert [h.entry.id for h in off.search("which phone did Wei buy", record=False)] == [m["buy"]]


def test_a_unique_word_brings_no_company(tmp_path):
    # 'fitatovax' is in one note: it answers the question, and the expansion
    # (ferret, trial) may reorder the query's matches but adds no note
    with Repository(tmp_path / "root") as repo:
        vax = repo.add("Fitatovax is the adjuvant used in the ferret trial.", kind="fact")
        moved = repo.add("The ferret trial moved to building C.", kind="fact")
        for text in ("Weekly sync is on Tuesday.", "The office plants need water on Mondays.",
                     "Lunch orders go in by eleven.", "Badge readers reset at midnight."):
            repo.add(text, kind="fact")
        hits = repo.search("fitatovax", record=False, explain=True)
        assert [h.entry.id for h in hits] == [vax.id]
        assert "feedback" in hits[0].lanes and "ferret" in hits[0].explain["expansion"]
        # a question the note answers most of, not in full, still reaches the second hop
        found = [h.entry.id for h in repo.search("fitatovax adjuvant dose", record=False)]  # (no note says dose)
        assert found[0] == vax.id and moved.id in found
        # one the root answers less than half of finds the note, and nothing its words bring
        # (issue 31: expansion adds only behind a question the root really answers)
        assert [h.entry.id for h in repo.search("fitatovax dose", record=False)] == [vax.id]


def test_explain_shows_lane_ranks_and_expansion_terms(second_hop):
    repo, m = second_hop
    hits = repo.search("which phone did Wei buy", record=False, explain=True)
    first = hits[0].to_dict()["explain"]
    assert first["lanes"]["words"] == 1 and first["terms"]
    assert "nokia" in first["expansion"] and "920" in first["expansion"]
    battery = next(h for h in hits if h.entry.id == m["battery"]).to_dict()["explain"]
    assert set(battery["lanes"]) == {"feedback"} and "920" in battery["expansion_matched"]
    assert "explain" not in repo.search("which phone did Wei buy", record=False)[0].to_dict()


def _zipf(n: int, seed: int) -> tuple[Index, list[str]]:
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    cum, c = [], 0.0
    for i in range(len(vocab)):
        c += 1 / (i + 1)
        cum.append(c)
    idx = Index()
    for d in range(n):
        idx.put(f"k{d:05d}", DocTerms.build([(rnd.choices(vocab, cum_weights=cum, k=rnd.randint(3, 30)), [], 1)]))
    return idx, vocab


def test_feedback_never_pushes_every_direct_hit_out():
    idx, vocab = _zipf(3000, seed=1)
    rnd = random.Random(2)
    fb = Feedback(docs=5, terms=30, weight=5.0)  # an overbearing lane, to press the rule
    for _ in range(200):
        words = {t: 1.0 for t in rnd.sample(vocab[500:], 2)}
        direct = {k for k, _ in idx.postings(next(iter(words)))} | {k for k, _ in idx.postings(list(words)[1])}
        for limit in (1, 2, 3):
            hits = idx.search(words, {}, limit=limit, feedback=fb)
            assert not direct or any(h.key in direct for h in hits)
            # and every hit matches the query or its expansion, lexically
            for h in hits:
                assert h.terms or h.expansion


def test_lanes_ranking_only_non_matches_cannot_take_every_place():
    """The rule itself: three further lanes that rank five non-matches first
    outvote the lexical lanes, yet one direct match keeps a place."""
    idx = Index()
    idx.put("match", DocTerms.build([(["granite"], [], 1)]))
    for i in range(5):
        idx.put(f"other{i}", DocTerms.build([(["river"], [], 1)]))

    class Loud:  # (a rank.Lane)
        weight, reweigh = 1.0, {}

        def __init__(self, name: str) -> None:
            self.name = name

        def vouches(self, slot):
            return True

        def unlike(self, slots):
            return [False] * len(slots)

        def rank(self, mask, allowed, depth, lexical):
            return [(10.0 - s, s) for s in range(1, 6)]

    loud = [Loud("a"), Loud("b"), Loud("c")]
    assert [h.key for h in idx.search({"granite": 1.0}, {}, limit=3, lanes=loud)] == ["other0", "other1", "match"]
    assert [h.key for h in idx.search({"granite": 1.0}, {}, limit=1, lanes=loud)] == ["match"]


def test_a_search_for_no_results_returns_none_with_every_lane():
    """``limit`` 0 (or below) asks for nothing: an empty list, never an
    exception, with the feedback lane or without."""
    idx = Index()
    for i in range(5):
        idx.put(f"k{i}", DocTerms({"a": 1, "b": i + 1, "c": 1}, {}))
    for fb in (None, Feedback()):
        for limit in (0, -1):
            assert idx.search({"a": 1.0}, {"b": 1.0}, limit=limit, feedback=fb) == []
        assert len(idx.search({"a": 1.0}, {}, limit=1, feedback=fb)) == 1


def test_term_vectors_survive_a_snapshot():
    idx, _ = _zipf(500, seed=3)
    idx.remove("k00007", None)
    before = {k: sorted(idx.words.vector(s)) for k, s in idx.slot_of.items()}
    again, _ = Index.restore(b"".join(idx.snapshot()))
    assert {k: sorted(again.words.vector(s)) for k, s in again.slot_of.items()} == before
    again.put("new", DocTerms.build([(["w1", "zzz"], [], 2)]))
    again.fold()
    assert sorted(again.words.vector(again.slot_of["new"])) == [("w1", 2), ("zzz", 2)]
    assert {k: sorted(again.words.vector(s)) for k, s in again.slot_of.items() if k != "new"} == before


def _as_format(data: bytes, fmt: int) -> bytes:
    """The same snapshot, its header claiming another format (checksum fixed)."""
    body = data[len(SN._MAGIC) + 32:]
    (n,) = struct.unpack_from("<Q", body)
    sizes = list(struct.unpack_from(f"<{n}Q", body, 8))
    start = 8 + 8 * n
    head = json.loads(body[start:start + sizes[0]])
    rest = body[start + sizes[0]:]
    head["format"] = fmt
    raw = json.dumps(head, ensure_ascii=False).encode()
    sizes[0] = len(raw)
    new = struct.pack(f"<Q{n}Q", n, *sizes) + raw + rest
    return SN._MAGIC + hashlib.sha256(new).digest() + new


def test_snapshot_of_the_previous_format_is_rebuilt_never_misread(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("granite boulder by the river", title="rock")
    f = repo.add("the boulder rolled into the river bed", title="bed")
    repo.close()
    snap = tmp_path / "_system" / "cache" / "index.bin"
    data = snap.read_bytes()
    fingerprint = Repository(tmp_path).view.tokenizer.fingerprint()
    Index.restore(_as_format(data, SN.SNAPSHOT_FORMAT), fingerprint)  # the re-packing itself is sound
    old = _as_format(data, SN.SNAPSHOT_FORMAT - 1)
    with pytest.raises(ValueError):
        Index.restore(old, "")
    snap.write_bytes(old)
    again = Repository(tmp_path)
    assert [h.entry.id for h in again.search("granite", record=False)][0] == e.id
    assert again.view.index.words.vector(again.view.index.slot_of[f.id])  # vectors rebuilt
    assert snap.read_bytes() != old


def test_cli_explain_prints_lanes_and_expansion(second_hop, capsys, monkeypatch):
    from sediment.cli.main import main
    repo, m = second_hop
    monkeypatch.delenv("SEDIMENT_ROOT", raising=False)
    capsys.readouterr()
    assert main(["--root", str(repo.root), "search", "which phone did Wei buy", "--explain"]) in (0, None)
    out = capsys.readouterr().out
    assert "lanes: words #1" in out and "via expansion: " in out and "expansion: " in out
    assert main(["--root", str(repo.root), "--json", "search", "which phone did Wei buy", "--explain"]) in (0, None)
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["explain"]["lanes"]["words"] == 1
    assert main(["--root", str(repo.root), "search", "which phone did Wei buy"]) in (0, None)
    assert "lanes:" not in capsys.readouterr().out


def _found_and_expansion(tmp_path, mem: dict[str, str], query: str) -> tuple[list[str], dict[str, float]]:
    """``mem``'s memories in a new root; the names of what ``query`` finds, and
    the expansion terms of its search (``explain``)."""
    repo = Repository(tmp_path / "root")
    name = {repo.add(text).id: k for k, text in mem.items()}
    hits = repo.search(query, record=False, explain=True)
    return [name[h.entry.id] for h in hits], (hits[0].explain or {}).get("expansion", {}) if hits else {}


def test_the_best_match_leads_the_expansion_of_a_chinese_query(tmp_path):
    """The feedback memories weigh by rank: fused scores are nearly flat (1/61
    against 1/63), and a share of them let the second and third results' words
    outweigh the phone the best match names."""
    mem = {
        "mine": "新手机是华为Mate60，屏幕很亮。",
        "colleague": "同事的手机是小米14，充电很快。",
        "cousin": "表姐的手机是OPPO Reno，拍照不错。",
        "mine_later": "Mate60的电池不耐用，半天就没电了。",
        "colleague_later": "小米14的电池不耐用，半天就没电了。",
        "cousin_later": "Reno的电池不耐用，半天就没电了。",
        "lunch": "中午吃了牛肉面，味道不错。",
        "walk": "周末去公园散步，天气很好。",
        "work": "今天加班到九点，很累。",
    }
    # (续航, battery life, is in no note: the best match answers the question
    # only in part, so the expansion may bring what it does not say)
    found, expansion = _found_and_expansion(tmp_path, mem, "新手机的屏幕和续航")
    assert found[0] == "mine"
    # the first memory found only through the expansion is the one about my phone
    assert [k for k in found if k.endswith("_later")][0] == "mine_later"
    assert max(expansion, key=expansion.get) in ("mate60", "mat")
    assert expansion["mate60"] > 1.5 * expansion["reno"]


def test_a_lone_chinese_character_is_never_an_expansion_term(tmp_path):
    """What jieba leaves uncut (买, 新, 好) is a generic word: as an expansion
    term it brought memories about shoes to a question about a phone."""
    mem = {
        "bought": "终于换了新手机，买的是iPhone 15，挑了个深色的，旧的Find X7留给我妈用。",
        "linda": "琳达的手机是红米K70，她说拍照比我的好。",
        "case": "给手机买了个新壳子，透明的，很快就黄了。",
        "battery": "iPhone 15的电池越来越不经用，下午三点就只剩两成电，充电器得随身带着。",
        "linda_again": "琳达换了红米K70，拍照比我的好多了。",
        "mum": "我妈说Find X7的屏幕字大，看着舒服。",
        "shoes": "买了新的运动鞋，跑步很舒服，比旧的好。",
        "park": "周末去公园散步，天气很好，买了杯新出的奶茶。",
        "noodles": "中午吃了牛肉面，味道比上次好。",
    }
    found, expansion = _found_and_expansion(tmp_path, mem, "我的新手机后来出了什么毛病？")
    assert found[0] == "bought" and "battery" in found
    assert "shoes" not in found and "park" not in found
    assert expansion and not [t for t in expansion if len(t) == 1]
    assert {"iphone15", "findx7"} <= set(expansion)


def test_the_best_match_leads_the_expansion_of_an_english_query(tmp_path):
    mem = {
        "mine": "My new phone is a Pixel 8, the screen is bright.",
        "colleague": "My colleague's phone is a Xiaomi 14, it charges fast.",
        "cousin": "My cousin's phone is an Oppo Reno, with a nice camera.",
        "mine_later": "The Pixel 8 battery drains by noon.",
        "colleague_later": "The Xiaomi 14 battery drains by noon.",
        "cousin_later": "The Oppo Reno battery drains by noon.",
        "lunch": "Lunch was beef noodles, nice and spicy.",
        "walk": "A walk in the park on Sunday, sunny weather.",
    }
    found, expansion = _found_and_expansion(tmp_path, mem, "new phone screen glare")  # (no note says glare)
    assert found[0] == "mine" and [k for k in found if k.endswith("_later")][0] == "mine_later"
    assert max(expansion, key=expansion.get) == "pixel8"
    assert expansion["pixel8"] > 1.5 * expansion["reno"]


# --------------------------------------------------------------------------- what counts as a recall

DAY = 86_400.0


@pytest.fixture
def zebrafish(tmp_path):
    """Two lab notes sharing only the word 实验 (experiment), and four fillers."""
    repo = Repository(tmp_path / "root")
    notes = {
        "zebrafish": repo.add("斑马鱼实验的喂食时间是早上八点", kind="fact"),
        "fly": repo.add("果蝇实验的温度是二十五度", kind="fact"),
    }
    for text in ("周末去公园跑步", "晚饭吃了一碗牛肉面", "明天要交季度报告", "猫喜欢在窗台上晒太阳"):
        repo.add(text, kind="fact")
    yield repo, {k: e.id for k, e in notes.items()}
    repo.close()


def test_a_hit_found_only_by_expansion_is_shown_but_never_promoted(zebrafish):
    repo, m = zebrafish
    start = repo.get(m["zebrafish"]).created.timestamp()
    for day in range(1, 5):  # the same question on four days
        repo.usage.clock = lambda day=day: start + day * DAY
        hits = {h.entry.id: h for h in repo.search("斑马鱼 zebrafish", explain=True)}
        # the fruit-fly note shares no word with the question: only the expansion (实验) brings it
        assert set(hits) == {m["zebrafish"], m["fly"]}
        assert hits[m["zebrafish"]].direct and hits[m["zebrafish"]].explain["direct"]
        fly = hits[m["fly"]]
        assert fly.terms == () and set(fly.lanes) == {"feedback"}
        assert not fly.direct and fly.to_dict()["direct"] is False and fly.explain["direct"] is False
    used = repo.usage.load()
    assert used[m["zebrafish"]].recalls == 4 and m["fly"] not in used
    # a week on (the age bedrock asks for): recalled on four days, the zebrafish note crystallizes
    plan = repo.metabolize(now=dt.datetime.fromtimestamp(start + 8 * DAY, dt.timezone.utc), dry_run=False)
    moved = {mv.id: mv for mv in plan.moves}
    assert moved[m["zebrafish"]].target == "bedrock" and "4 distinct days" in moved[m["zebrafish"]].reason
    assert m["fly"] not in moved
    assert sorted(p.parent.name for p in repo.root.glob("*/*.md") if "实验" in p.read_text()) == [
        "bedrock", "shallow"]


def test_a_chinese_question_its_note_answers_brings_no_company(zebrafish):
    # 斑马鱼 alone: the zebrafish note holds every word and bigram of it; with
    # 'zebrafish', a word no note has, the expansion may still add (above)
    repo, m = zebrafish
    hits = repo.search("斑马鱼", record=False)
    assert [h.entry.id for h in hits] == [m["zebrafish"]] and "feedback" in hits[0].lanes


def test_a_short_note_sharing_one_common_word_of_a_question_the_root_does_not_answer_is_no_hit(tmp_path):
    # issue 31: "What is the chemical symbol of gold in the periodic table?"
    # asked of a conversation returned every turn that says "table": one
    # common word, under a tenth of the question (evidence.TENTH). A note of
    # one passage sharing so little is no answer; a long memory (a session's
    # transcript) may answer in one of its lines and stays; a question the
    # root does answer keeps its one-word matches too
    with Repository(tmp_path / "root") as repo:
        tables = [repo.add(t).id for t in ("Melanie: we bought a new kitchen table on Sunday.",
                                           "Caroline: the table at the cafe was booked for six.",
                                           "Melanie: the kids set the table before dinner.",
                                           "Caroline: I left my keys on the table again.")]
        for text in ("Melanie: I went camping with the family by the lake.",
                     "Caroline: the support group met on Tuesday evening.",
                     "Melanie: we read a book about adoption together.",
                     "Caroline: my mentor called about the counselling course.",
                     "Melanie: the pottery class starts next month.",
                     "Caroline: I painted a sunrise over the harbour.",
                     "Melanie: the dog chewed my running shoes.",
                     "Caroline: the parade was loud and full of colour."):
            repo.add(text)
        hobbies = ("hiking swimming painting pottery reading cooking baking music dancing gardening cycling "
                   "running climbing sailing fishing knitting chess photography travel theatre").split()
        things = ("weekend plans old photos new recipes school trip summer camp birthday cake wedding dress "
                  "market stall garden shed bike ride train ticket museum visit beach house city park river walk "
                  "concert hall").split()
        lines = [f"Line {i}: we talked about {w} and the {v} for a while."
                 for i, (w, v) in enumerate(zip(hobbies, things))]
        session = repo.add("\n".join(lines * 2 + ["Someone had spilled paint on the table."]), title="A long session")
        off = [h.entry.id for h in repo.search("What is the chemical symbol of gold in the periodic table?",
                                                 record=False)]
        assert off == [session.id]
        on = {h.entry.id for h in repo.search("the kitchen table bought on Sunday", record=False)}
        assert set(tables) <= on


def test_a_question_the_root_does_not_answer_brings_nothing_through_expansion(tmp_path):
    # issue 31: "How many moons does Jupiter have?" asked of a conversation
    # matched one turn on "many", and the expansion of that turn's words filled
    # the list with other turns (here the workshop's and the bowls'). Expansion
    # adds only behind a question the root really answers; the one turn with a
    # word of the question may stay
    with Repository(tmp_path / "root") as repo:
        many = repo.add("Melanie: so many kids came to the glazing workshop with their painted bowls.")
        for text in ("Caroline: the glazing workshop moved to Friday.",
                     "Melanie: painted bowls are drying in the garage.",
                     "Melanie: I went camping with the family by the lake.",
                     "Caroline: the support group met on Tuesday evening.",
                     "Melanie: we read a book about adoption together.",
                     "Caroline: my mentor called about the counselling course."):
            repo.add(text)
        drying = repo.add("Caroline: drying takes two days, the teacher told us.")
        off = repo.search("How many moons does Jupiter have?", record=False)
        assert [h.entry.id for h in off] == [many.id]
        # asked what the root answers most of (no note says glaze), the expansion still adds
        # the neighbour that shares no word with the question
        on = {h.entry.id: h for h in repo.search("painted bowls garage glaze", record=False)}
        assert drying.id in on and not on[drying.id].direct
