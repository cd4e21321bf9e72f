"""A warm open restores each note the index snapshot vouches for from the
snapshot's columns, and leaves its frontmatter as the snapshot's JSON text
until something reads it (issue "Speed", items 1 and 2): the notes read as a
cold open reads them, a search parses only what it ranks, and a snapshot
that cannot be read or written costs time, never an error."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import time
from pathlib import Path

from sediment import Repository
from sediment.disk import vault
from sediment.search.index import Index
from sediment.view import load as L
from sediment.view.compact import Encoded, Pool

PERSONS_NOTE = """---
title: "Harbour \\"crane\\" log"
date: 2026-03-04
due: 2026-03-05T10:30:00+08:00
tags: [harbour, entities]
nested: {kind: person, "odd \\"key\\"": [1, 2.5, null, true]}
---
The crane log, kept by hand. #logbook
"""


def _settled_root(tmp_path: Path, monkeypatch) -> tuple[Path, dict[str, str]]:
    """A root of varied notes whose snapshot holds a settled stamp for every
    one (so that the warm open reads none of them)."""
    monkeypatch.setattr(vault, "RACY_NS", 0)  # (every file here is older than its stat)
    root = tmp_path / "root"
    ids = {}
    with Repository(root) as repo:
        ids["person"] = repo.add("runs the night shift at the harbour", title="Wang Lei", kind="person",
                                 aliases=["Lei"]).id
        ids["event"] = repo.add("Lei moved the crane schedule to Thursday", kind="event",
                                entities={"Wang Lei": "decided"}, tags=["harbour/cranes"]).id
        ids["fact"] = repo.add("起重机周四检修，码头东侧封闭", kind="fact", title="检修").id
        for i in range(20):
            repo.add(f"tide table note {i}: high water at {i % 12} o'clock", kind="fact")
    (root / "Logs").mkdir()
    (root / "Logs" / "crane.md").write_text(PERSONS_NOTE, encoding="utf-8")
    time.sleep(0.01)
    restamp = L.RESTAMP
    monkeypatch.setattr(L, "RESTAMP", 1)
    Repository(root).close()  # (reads them all once, and saves their stamps)
    monkeypatch.setattr(L, "RESTAMP", restamp)
    return root, ids


def _parsed(repo: Repository) -> int:
    """How many notes' frontmatter has been parsed since the open."""
    return sum(1 for e in repo.view.entries.values() if not isinstance(e.meta, Encoded) or e.meta.raw is None)


def _as_read(repo: Repository) -> dict[str, tuple]:
    return {e.id: (dict(e.meta), e.path, e.layer, e.room, e.name, e.title, e.kind, e.tags, e.created, e.body)
            for e in repo.view.entries.values()}


def test_a_warm_open_gives_the_notes_a_cold_open_reads_without_parsing_them(tmp_path, monkeypatch):
    root, _ = _settled_root(tmp_path, monkeypatch)
    warm = Repository(root)
    assert _parsed(warm) == 0  # nothing parsed at the open
    got = _as_read(warm)
    warm.close()
    for f in (root / "_system" / "cache").iterdir():
        f.unlink()
    with Repository(root) as cold:
        want = _as_read(cold)
    assert got == want
    log = next(v for v in got.values() if v[1] == "Logs/crane.md")
    assert log[0]["date"] == dt.date(2026, 3, 4) and isinstance(log[0]["due"], dt.datetime)  # dates stay dates
    assert log[0]["title"] == 'Harbour "crane" log' and log[0]["nested"]["odd \"key\""] == [1, 2.5, None, True]


def test_a_search_parses_only_the_frontmatter_it_ranks_and_still_knows_its_people(tmp_path, monkeypatch):
    root, ids = _settled_root(tmp_path, monkeypatch)
    with Repository(root) as repo:
        total = len(repo.view)
        hits = repo.search("crane schedule", record=False)
        assert hits[0].entry.id == ids["event"]
        assert 0 < _parsed(repo) < total // 2
        # the person's note is known without reading every note: its aliases name them
        assert [e.id for e in repo.list(entity="Lei", kind="event")] == [ids["event"]]
        parsed = _parsed(repo)
        assert len(repo) == total and _parsed(repo) == parsed  # (counted from the index's flags)


def test_encoded_frontmatter_answers_as_the_parsed_one():
    meta = {"id": "x1", "kind": "fact", "tags": ["entities", "a/b"], "title": 'say "kind"',
            "when": dt.date(2026, 1, 2), "n": 2.5}
    import json

    from sediment.view.compact import compact, freeze
    raw = json.dumps(freeze(meta), ensure_ascii=False, separators=(",", ":")).encode()
    pool = Pool()
    for probe in (lambda m: m.get("entities"), lambda m: "entities" in m, lambda m: m.get("kind"),
                  lambda m: "id" in m, lambda m: m.get('odd "key"', 7), lambda m: m.get("when"),
                  lambda m: dict(m), lambda m: m == meta, lambda m: m | {"n": 3}, lambda m: {"z": 1} | m,
                  lambda m: len(m), lambda m: list(m), lambda m: pickle.loads(pickle.dumps(m)),
                  lambda m: m.copy()):
        assert probe(Encoded(raw, pool)) == probe(compact(meta, Pool()))
    e = Encoded(raw, pool)
    assert e.get("aliases") is None and "aliases" not in e and e.raw is not None  # from the text, not parsed
    assert e.may_hold("fact") and not e.may_hold("person") and e.raw is not None
    assert e["kind"] == "fact" and e.raw is None and e.may_hold("person")  # parsed: may_hold no longer knows


def test_frontmatter_kept_by_its_layout_of_keys_answers_as_the_parsed_one():
    """The snapshot keeps a note's frontmatter as ``[layout, values…]``, the
    layout's keys once a root (``Pool.shaped``)."""
    meta = {"id": "x1", "kind": "fact", "tags": ["entities", "a/b"], "title": 'say "kind"',
            "when": dt.date(2026, 1, 2), "n": 2.5}
    from sediment.view.compact import compact, freeze
    pool = Pool()
    raw = pool.shaped(freeze(meta))
    assert raw.startswith(b"[0,") and b'"kind":' not in raw and pool.shapes == [tuple(freeze(meta))]
    assert pool.shaped(freeze({"a": 1})).startswith(b"[1,") and pool.shaped(freeze(meta)) == raw
    for probe in (lambda m: m.get("entities"), lambda m: "entities" in m, lambda m: m.get("kind"),
                  lambda m: "id" in m, lambda m: m.get("when"), lambda m: dict(m), lambda m: m == meta,
                  lambda m: list(m), lambda m: pickle.loads(pickle.dumps(m))):
        assert probe(Encoded(raw, pool)) == probe(compact(meta, Pool()))
    e = Encoded(raw, pool)
    assert "aliases" not in e and e.get("entities") is None and e.raw is not None  # known from the layout
    assert e.may_hold("fact") and e.may_hold("a/b") and not e.may_hold("person") and e.raw is not None
    assert not e.may_hold("tags")  # (a key: asked with `in`)
    assert e["kind"] == "fact" and e.raw is None


def test_layouts_past_the_pools_limit_are_kept_as_objects_and_read_as_a_cold_open_reads(tmp_path, monkeypatch):
    from sediment.view import compact as C
    monkeypatch.setattr(C, "MAX_SHAPES", 1)
    root, _ = _settled_root(tmp_path, monkeypatch)
    warm = Repository(root)
    assert _parsed(warm) == 0
    raws = [e.meta.raw or b"" for e in warm.view.entries.values()]
    assert any(r.startswith(b"[0,") for r in raws) and any(r.startswith(b"{") for r in raws)
    got = _as_read(warm)
    warm.close()
    for f in (root / "_system" / "cache").iterdir():
        f.unlink()
    with Repository(root) as cold:
        assert _as_read(cold) == got


def test_a_snapshot_whose_columns_cannot_be_read_costs_a_cold_open(tmp_path, monkeypatch):
    root, ids = _settled_root(tmp_path, monkeypatch)
    snap = root / "_system" / "cache" / "index.bin"
    with Repository(root) as repo:
        fingerprint = repo.view.tokenizer.fingerprint()
    with open(snap, "rb") as fh:
        index, _ = Index.restore(fh, fingerprint)
    snap.write_bytes(b"".join(index.snapshot(lambda keys: [("paths", b"\0".join(k.encode() for k in keys))],
                                             fingerprint)))  # (checksum sound; the view's columns are not)
    with Repository(root) as repo:
        assert repo.search("crane schedule", record=False)[0].entry.id == ids["event"]
        assert repo.check() == []
    assert L.read_snapshot(snap, fingerprint)[1] is not None  # written again, whole


def test_an_id_holding_a_nul_is_kept_by_the_snapshot_as_any_other(tmp_path, monkeypatch):
    """A person may give a note any id YAML can spell, "\\0" included: the
    snapshot keeps its keys by length, not by a separator."""
    monkeypatch.setattr(vault, "RACY_NS", 0)
    root = tmp_path / "root"
    with Repository(root) as repo:
        repo.add("the ferry timetable", kind="fact")
    (root / "sediment").mkdir(exist_ok=True)
    (root / "sediment" / "odd.md").write_text(
        '---\nid: "odd\\0id"\ntitle: odd\ncreated: 2026-01-01T00:00:00+00:00\nkind: fact\n---\nferry odd\n',
        encoding="utf-8")
    time.sleep(0.01)
    for _ in range(3):
        with Repository(root) as repo:
            assert repo.get("odd\0id").path == "sediment/odd.md"
            assert "odd\0id" in {h.entry.id for h in repo.search("ferry odd", record=False)}
            fingerprint = repo.view.tokenizer.fingerprint()
        index, docs = L.read_snapshot(root / "_system" / "cache" / "index.bin", fingerprint)
        assert docs is not None and "odd\0id" in index.slot_of


def _warm_and_cold(root: Path) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """The notes as a warm open reads them (after a check and a search), then as a cold one."""
    with Repository(root) as warm:
        warm.check()
        warm.search("hello", record=False)
        got = _as_read(warm)
    for f in (root / "_system" / "cache").iterdir():
        f.unlink()
    with Repository(root) as cold:
        return got, _as_read(cold)


def test_frontmatter_holding_the_snapshots_own_tag_keys_reads_as_typed(tmp_path, monkeypatch):
    """A person may type any key, NUL included: keys that spell the snapshot's
    own date tags are kept as written, never read as tags (a date, a
    dropped key) nor an error out of check or search."""
    root, _ = _settled_root(tmp_path, monkeypatch)
    notes = {"marker.md": '---\ntitle: marker\n"\\0dated": 1\n---\nhello marker\n',
             "dated-marker.md": '---\ntitle: dm\n"\\0dated": 1\ndate: 2024-01-02\n---\nhello dm\n',
             "not-a-date.md": '---\ntitle: nd\ndate: 2024-01-02\nx: {"\\0t": "hello"}\n---\nhello nd\n',
             "looks-dated.md": '---\ntitle: ld\ndate: 2024-01-02\nx: {"\\0t": "2024-01-01", k: d}\n---\nhello ld\n'}
    for name, text in notes.items():
        (root / "Logs" / name).write_text(text, encoding="utf-8")
    time.sleep(0.01)
    monkeypatch.setattr(L, "RESTAMP", 1)
    Repository(root).close()  # (the snapshot now holds them, settled)
    got, want = _warm_and_cold(root)
    assert got == want
    by_path = {v[1]: v[0] for v in got.values()}
    assert by_path["Logs/marker.md"]["\0dated"] == 1
    assert by_path["Logs/looks-dated.md"]["x"] == {"\0t": "2024-01-01", "k": "d"}


def test_a_persons_id_property_that_is_not_its_id_is_kept_as_written(tmp_path, monkeypatch):
    """A person's note whose ``id`` property is not an id sediment takes (a
    number, a list, empty, padded) has its path's id; the property itself
    stays as written when a warm open reads the note against the snapshot
    (here: the same bytes under a new stat)."""
    root, _ = _settled_root(tmp_path, monkeypatch)
    for name, value in {"empty": '""', "listed": "[x, y]", "number": "12", "padded": '" abc "', "yes": "true"}.items():
        (root / "Logs" / f"{name}.md").write_text(f"---\nid: {value}\ntitle: {name}\n---\nhello {name}\n",
                                                  encoding="utf-8")
    time.sleep(0.01)
    monkeypatch.setattr(L, "RESTAMP", 1)
    Repository(root).close()
    for f in (root / "Logs").iterdir():
        os.utime(f, None)  # (its stat no longer vouches for it: read, and matched by its bytes)
    time.sleep(0.01)
    got, want = _warm_and_cold(root)
    assert got == want
    assert {v[1]: v[0]["id"] for v in got.values() if v[1].startswith("Logs/") and v[1] != "Logs/crane.md"} == {
        "Logs/empty.md": "", "Logs/listed.md": ["x", "y"], "Logs/number.md": 12, "Logs/padded.md": " abc ",
        "Logs/yes.md": True}


def test_a_snapshot_the_open_cannot_read_costs_a_cold_open(tmp_path, monkeypatch):
    """The snapshot is a cache: one this process may not open (another
    user's, written with sudo; here a folder in its place) costs time only."""
    root, ids = _settled_root(tmp_path, monkeypatch)
    snap = root / "_system" / "cache" / "index.bin"
    snap.unlink()
    snap.mkdir()
    with Repository(root) as repo:
        assert repo.search("crane schedule", record=False)[0].entry.id == ids["event"]
        assert repo.check() == []


def test_a_lowered_frontmatter_limit_reads_the_notes_as_a_cold_open_would(tmp_path, monkeypatch):
    """The snapshot's frontmatter was read under the policy's
    ``max_meta_size``: once it is lowered, a note over it has properties that
    cannot be read (a check() warning) on a warm open as on a cold one."""
    root, _ = _settled_root(tmp_path, monkeypatch)
    (root / "Logs" / "big.md").write_text("---\ntitle: big\nlong: " + "x" * 3000 + "\n---\nbig note\n",
                                          encoding="utf-8")
    time.sleep(0.01)
    monkeypatch.setattr(L, "RESTAMP", 1)
    Repository(root).close()
    policy = root / "_system" / "policy.yaml"
    policy.write_text(policy.read_text(encoding="utf-8") + "\nmax_meta_size: 1000\n", encoding="utf-8")
    with Repository(root) as warm:
        problems = [(p.path, p.code) for p in warm.check()]
        got = _as_read(warm)
    assert problems == [("Logs/big.md", "properties")]
    for f in (root / "_system" / "cache").iterdir():
        f.unlink()
    with Repository(root) as cold:
        assert [(p.path, p.code) for p in cold.check()] == problems
        assert _as_read(cold) == got
