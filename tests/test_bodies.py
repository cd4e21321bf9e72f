"""How the view keeps memories: bodies in the body store (``_system/cache/
bodies.bin``) instead of in memory, frontmatter as a compact read-only
mapping. Every reader sees the text that was indexed, whatever happened to
the note or the store in between."""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import shutil
from pathlib import Path

import pytest

from sediment import Repository
from sediment.model import entry as E
from sediment.view.compact import Meta, Pool, compact

pytestmark = pytest.mark.skipif(not hasattr(os, "pread"), reason="the body store needs os.pread")

TEXTS = ["部署 staging 之前先跑迁移 migrations", "the login flow uses PKCE on 移动端", "缓存 redis 的过期时间是一小时"]


def _root(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "root"
    with Repository(root) as repo:
        ids = [repo.add(t, title=f"note {i}", tags=["ops", "运维"]).id for i, t in enumerate(TEXTS)]
    return root, ids


def _found(repo: Repository, query: str) -> list[str]:
    """The memories a search finds by the query's own words."""
    return [h.entry.id for h in repo.search(query) if h.terms]


def _store(root: Path) -> Path:
    return root / "_system" / "cache" / "bodies.bin"


def test_a_reopened_root_reads_its_bodies_from_the_store(tmp_path):
    root, ids = _root(tmp_path)
    assert _store(root).exists()
    with Repository(root) as repo:
        e = repo.get(ids[0])
        assert not e.in_memory, "the body is kept in the store, not in memory"
        assert e.body.strip() == TEXTS[0] and e.text == TEXTS[0]
        hit = repo.search("migrations")[0]
        assert hit.entry.id == ids[0] and "migrations" in hit.snippet
        assert [x.body for x in repo.list()] == [x.body for x in repo.list()]


def test_a_hand_edit_not_yet_applied_shows_the_indexed_text(tmp_path):
    """Until a refresh (or the watcher) applies an edit, a reader sees the
    text the index was built from; after it, the new text, and the old
    words are gone from the index."""
    root, ids = _root(tmp_path)
    with Repository(root) as repo:
        e = repo.get(ids[1])
        path = root / e.path
        edited = path.read_bytes().replace(b"PKCE", b"OAUTHDEVICE").replace("移动端".encode(), "桌面端".encode())
        path.write_bytes(edited)
        assert "PKCE" in repo.get(ids[1]).body and "OAUTHDEVICE" not in repo.get(ids[1]).body
        assert _found(repo, "PKCE") == [ids[1]] and _found(repo, "OAUTHDEVICE") == []
        assert "PKCE" in repo.search("PKCE")[0].snippet
        repo.refresh()
        assert "OAUTHDEVICE" in repo.get(ids[1]).body
        assert _found(repo, "PKCE") == [] and _found(repo, "OAUTHDEVICE") == [ids[1]]
        terms = [*repo.view.index.terms("words"), *repo.view.index.terms("bigrams")]
    shutil.rmtree(root / "_system" / "cache")  # a cold open: every note read afresh
    with Repository(root) as again:  # agrees, document frequencies too (the old terms left exactly)
        assert "OAUTHDEVICE" in again.get(ids[1]).body and _found(again, "PKCE") == []
        assert [*again.view.index.terms("words"), *again.view.index.terms("bigrams")] == terms


def test_a_store_replaced_by_another_process_keeps_this_one_reading(tmp_path):
    root, ids = _root(tmp_path)
    with Repository(root) as a:
        before = {i: a.get(i).body for i in ids}
        with Repository(root) as b:
            b.add("another memory about 数据库 backups")
        _store(root).unlink()
        assert {i: a.get(i).body for i in ids} == before


def test_a_damaged_store_falls_back_to_the_note(tmp_path):
    root, ids = _root(tmp_path)
    data = bytearray(_store(root).read_bytes())
    for i in range(len(data) - 40, len(data)):  # the last text's bytes
        data[i] ^= 0x55
    store = _store(root)
    with open(store, "r+b") as fh:  # in place, as a failing disk would
        fh.write(bytes(data))
    with Repository(root) as repo:
        assert sorted(repo.get(i).body.strip() for i in ids) == sorted(TEXTS)


def test_without_a_store_the_open_writes_one(tmp_path):
    """A snapshot from a version without the store (or a deleted store): the
    bodies are read into memory, the store written, and from then on used."""
    root, ids = _root(tmp_path)
    _store(root).unlink()
    with Repository(root) as repo:
        assert _store(root).exists()
        assert repo.get(ids[2]).body.strip() == TEXTS[2]
    with Repository(root) as repo:
        assert not repo.get(ids[2]).in_memory and repo.get(ids[2]).body.strip() == TEXTS[2]


def test_a_store_of_other_notes_is_not_used_for_these(tmp_path):
    """The store holds bodies by the version (hash) of the note's bytes: a
    store from another root's notes gives nothing to these."""
    root, ids = _root(tmp_path)
    other, _ = _root(tmp_path / "other")
    (root / "_system" / "cache" / "bodies.bin").write_bytes(_store(other).read_bytes())
    with Repository(root) as repo:
        assert sorted(repo.get(i).body.strip() for i in ids) == sorted(TEXTS)


def test_an_entry_is_immutable_and_travels_whole(tmp_path):
    root, ids = _root(tmp_path)
    with Repository(root) as repo:
        e = repo.get(ids[0])
        with pytest.raises(AttributeError):
            e.path = "elsewhere.md"  # type: ignore[misc]
        copy = pickle.loads(pickle.dumps(e))
        assert copy == e and copy.body == e.body and type(copy) is E.Entry  # (the value, its body as text)
        assert e.warn("careful").body == e.body and e.warn("careful").warnings == ("careful",)


def test_compact_frontmatter_reads_as_the_dict_it_came_from():
    meta = {"id": "X1", "title": "t", "created": "2026-01-01T00:00:00+00:00",
            "updated": "2026-01-01T00:00:00+00:00", "tags": ["a", "b"], "value": 0.5, "links": ["[[x]]"],
            "nested": {"k": [1, 2]}, "zero": -0.0}
    pool = Pool()
    m = compact(dict(meta), pool)
    assert isinstance(m, Meta) and m == meta and meta == m and dict(m) == meta and {**m} == meta
    assert m.get("tags") == ["a", "b"] and type(m["tags"]) is list and m.get("nope", 3) == 3
    m["tags"].append("c")  # a list read from it is the reader's own
    assert m["tags"] == ["a", "b"]
    assert str(m["zero"]) == "-0.0" and list(m) == list(meta) and len(m) == len(meta)
    with pytest.raises(TypeError):
        m["title"] = "changed"  # type: ignore[index]
    other = compact({**meta, "title": "u"}, pool)
    assert other._at is m._at and other != m and other["tags"] is not m["tags"]
    assert other._values[list(meta).index("tags")] is m._values[list(meta).index("tags")]  # shared
    assert pickle.loads(pickle.dumps(m)) == meta
    assert E.render(E.Entry(meta=m, body="x\n")) == E.render(E.Entry(meta=meta, body="x\n"))


def test_a_warm_open_leaves_the_store_alone(tmp_path):
    """Only a body the store could hold and does not brings a rewrite: a
    person's note it never holds (CRLF line ends) does not, open after open."""
    root, ids = _root(tmp_path)
    (root / "windows-note.md").write_bytes(b"---\r\ntitle: crlf\r\n---\r\nwritten on windows\r\n")
    Repository(root).close()
    first = _store(root).stat()
    with Repository(root) as repo:
        assert "written on windows" in repo.get("windows-note").body
        assert not repo.get(ids[0]).in_memory
    again = _store(root).stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_compact_frontmatter_keeps_what_a_person_may_type():
    """Lists of lists, mappings, NaN, empty lists, dates: kept as they were."""
    import datetime as dt
    import math
    pool = Pool()
    meta = {"aliases": [["x"]], "nested": [{"a": 1}], "empty": [], "n": float("nan"), "when": dt.date(2026, 3, 1),
            "flag": True, "one": 1, "none": None}
    for _ in range(2):
        m = compact(dict(meta), pool)
        assert {k: v for k, v in m.items() if k != "n"} == {k: v for k, v in meta.items() if k != "n"}
        assert math.isnan(m["n"]) and m["empty"] == [] and m["flag"] is True and m["one"] == 1
    assert len(pool.numbers) == 0


def test_an_erased_text_leaves_the_body_store_at_once(tmp_path):
    root, ids = _root(tmp_path)
    with Repository(root) as repo:
        assert "PKCE".encode() in _store(root).read_bytes()
        repo.purge(ids[1], confirm=True, erase=True)
        assert "PKCE".encode() not in _store(root).read_bytes()
        assert repo.get(ids[0]).body.strip() == TEXTS[0]


def _damage_every_text(root: Path) -> None:
    from sediment.view import bodies
    data = bytearray(_store(root).read_bytes())
    (count,) = bodies._COUNT.unpack_from(data, len(bodies.MAGIC))
    for i in range(len(bodies.MAGIC) + bodies._COUNT.size + count * bodies._RECORD.size, len(data)):
        data[i] ^= 0x55
    with open(_store(root), "r+b") as fh:  # in place (the same inode the view holds open)
        fh.write(bytes(data))


def test_a_damaged_record_never_reads_through_a_link_or_a_fifo(tmp_path):
    """The fallback to the note reads only a regular file at the note's own
    name: not a symlink put there pointing out of the root, nor a FIFO (which
    would block the reader for good)."""
    import threading
    root, ids = _root(tmp_path)
    outside = tmp_path / "secret.md"
    outside.write_text("---\nid: x\ncreated: '2026-01-01T00:00:00+00:00'\n---\nOUTSIDE THE ROOT\n")
    with Repository(root) as repo:
        got = [e for e in repo.list() if not e.in_memory]
        assert got, "the bodies are read from the store"
        _damage_every_text(root)
        for e in got:
            (root / e.path).unlink()
            (root / e.path).symlink_to(outside)
        assert all("OUTSIDE" not in e.body for e in got)
        fifo = root / got[0].path
        fifo.unlink()
        os.mkfifo(fifo)
        read: list[str] = []
        reader = threading.Thread(target=lambda: read.extend(e.body for e in got), daemon=True)
        reader.start()
        reader.join(60)  # a guard against a hang, not a speed target
        try:
            assert not reader.is_alive(), "reading a body blocked on a FIFO"
        finally:
            if reader.is_alive():  # let the blocked reader go
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        assert all("OUTSIDE" not in b for b in read)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_a_rewritten_store_lets_go_of_the_older_ones(tmp_path):
    """Each rewrite of the store (an erase) closes the stores no memory reads
    from any more: no descriptor on a deleted file (its disk space, the text
    erased from it) stays open for the life of the process."""
    root, ids = _root(tmp_path)

    def open_stores() -> int:
        gc.collect()  # (a repository closed and dropped lets go of its store when collected)
        links = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
        return sum(link.startswith(str(_store(root))) for link in links)  # (and " (deleted)")

    with Repository(root, policy={"destructive_per_hour": 1000}) as repo:
        kept = repo.get(ids[2])  # a caller's entry from before the rewrites
        for i in ids[:2]:
            repo.purge(i, confirm=True, erase=True)
        assert open_stores() == 1
        assert kept.body.strip() == TEXTS[2] == repo.get(ids[2]).body.strip()


def test_an_erased_key_a_person_types_does_not_rewrite_the_store(tmp_path):
    """Only an erase (purge, holding the writer lock) rewrites the body store
    at once. A note a person types with an ``erased:`` key waits for the next
    snapshot like any edit: no rewrite of the whole store per save, and no
    writer lock taken under the view's lock (readers would wait on another
    process's write)."""
    root, ids = _root(tmp_path)
    with Repository(root) as repo:
        first = _store(root).stat()
        note = root / "shallow" / "typed-by-hand.md"
        for n in range(2):
            note.write_text(f"---\nid: hand1\ncreated: '2026-01-01T00:00:00+00:00'\nerased: not really\n---\n"
                            f"hello PKCE {n}\n")
            repo.refresh()
            assert "hello PKCE" in repo.get("hand1").body
        again = _store(root).stat()
        assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_an_entrys_meta_copies_and_merges_as_the_dict_it_was(tmp_path, capsys):
    """``entry.meta`` is a read-only Mapping now (on entries the view holds,
    add() returns and search hits carry); what callers did with the dict it
    was still works: ``copy()`` and ``|`` give a dict of their own, which
    ``json.dumps`` and ``yaml.safe_dump`` take; ``--json`` writes the same."""
    import json

    import yaml

    from sediment.cli.main import main
    root, ids = _root(tmp_path)
    with Repository(root) as repo:
        added = repo.add("rotate the 密钥 every quarter", title="keys", tags=["auth", "oauth"])
        for e in (added, repo.get(ids[0]), repo.search("PKCE")[0].entry):
            plain = dict(e.meta)
            copy = e.meta.copy()
            assert type(copy) is dict and copy == plain
            copy["tags"].append("changed")
            assert e.meta == plain  # the copy is its own
            assert e.meta | {"title": "x"} == {**plain, "title": "x"} and type(e.meta | {}) is dict
            assert {"title": "x", "extra": 1} | e.meta == {"title": "x", "extra": 1, **plain}
            assert json.loads(json.dumps(e.meta.copy())) == json.loads(json.dumps(plain, default=str))
            assert yaml.safe_load(yaml.safe_dump(e.meta | {})) == yaml.safe_load(yaml.safe_dump(plain))
    capsys.readouterr()
    assert main(["--root", str(root), "get", added.id, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tags"] == ["auth", "oauth"] and out["title"] == "keys"
