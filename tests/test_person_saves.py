"""A person's save is never lost to a write of the library (issue 9, item 4).

A person edits the notes in an editor while the agent writes them. An editor
saves in one of two ways: a new file renamed over the note (VS Code, vim by
default, most editors) or the note's own file rewritten in place (Obsidian,
vim with ``backupcopy=yes``). Neither takes sediment's lock, so a save can land
in the moment between the library's last look at a note and its rename. The
library must then leave the person's version in place and raise ``Conflict``.

The single-process tests land the save inside that moment deterministically,
by wrapping a low-level seam the library calls there (the naming of its temp
file, or the rename/unlink of a move's source) so that the person saves just
before the real call runs. The multi-process test lets a real second process
race the library with no help at all.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from sediment import Conflict, NotFound, ParseError, Repository
from sediment.disk import files as F
from sediment.model.entry import content_version

from _disk import errors, scan, temp_files

_RENAME, _UNLINK = os.rename, os.unlink  # the real calls, for the person's own saves
STYLES = ["rename", "in_place"]


def save(path: Path, data: bytes, style: str) -> None:
    """A person's editor saving ``data`` at ``path``."""
    if style == "rename":  # write a new file beside it, rename it over the note
        tmp = path.with_name(f".{path.name}.person~")
        with open(tmp, "wb") as fh:
            fh.write(data)
        _RENAME(tmp, path)
    else:  # truncate and rewrite the note's own file
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def persons_version(path: Path, line: str = "a line the person typed") -> bytes:
    return path.read_bytes() + f"{line}\n".encode()


def save_when_named(monkeypatch: pytest.MonkeyPatch, when: Callable[[Path], bool],
                    action: Callable[[Path], None]) -> list[Path]:
    """The person saves the first time the library names a temp file for a
    note matching ``when``: the library has read the note already, and has not
    renamed anything over it yet."""
    real, fired = F.temp_name, []

    def temp_name(target: Path) -> Path:
        target = Path(target)
        if not fired and when(target):
            fired.append(target)
            action(target)
        return real(target)

    monkeypatch.setattr(F, "temp_name", temp_name)
    return fired


def save_at_removal(monkeypatch: pytest.MonkeyPatch, source: Path, action: Callable[[], None]) -> list[bool]:
    """The person saves just before the library renames or unlinks ``source``
    (the last step of a move: the new copy is written and checked already)."""
    fired: list[bool] = []

    def wrap(real: Callable[..., None]) -> Callable[..., None]:
        def call(src: os.PathLike[str] | str, *a: object, **k: object) -> None:
            if not fired and Path(src) == source:
                fired.append(True)
                action()
            real(src, *a, **k)
        return call

    monkeypatch.setattr(os, "unlink", wrap(os.unlink))
    monkeypatch.setattr(os, "rename", wrap(os.rename))
    return fired


def attempt(call: Callable[[], object]) -> Conflict | None:
    """Run a write; the Conflict it raised, if any. (The tests look at the
    file first: what matters most is that the person's save is still there.)"""
    try:
        call()
    except Conflict as exc:
        return exc
    return None


def assert_whole(repo: Repository) -> None:
    assert temp_files(repo.root) == []
    assert errors(repo) == []


# --------------------------------------------------------------------------- update


@pytest.mark.parametrize("style", STYLES)
def test_update_keeps_a_save_that_lands_while_it_writes(tmp_path, monkeypatch, style):
    repo = Repository(tmp_path)
    e = repo.add("what the agent first wrote", title="edited in two places")
    path = tmp_path / e.path
    mine = persons_version(path)
    fired = save_when_named(monkeypatch, lambda p: p == path, lambda p: save(p, mine, style))
    err = attempt(lambda: repo.update(e.id, expected=e.version, text="what the agent writes next"))
    assert fired
    assert path.read_bytes() == mine  # the person's save, byte for byte
    assert err is not None and "kept" in str(err)
    assert "a line the person typed" in repo.get(e.id).text  # and the view shows it
    monkeypatch.undo()
    # nothing is stuck: an update based on the person's version goes through
    again = repo.update(e.id, expected=repo.get(e.id).version, text="merged")
    assert again.text == "merged"
    assert_whole(repo)


def test_a_restamp_in_place_keeps_a_save_that_lands_while_it_writes(tmp_path, monkeypatch):
    # purging an archived note rewrites it where it is (a same-path move)
    repo = Repository(tmp_path)
    e = repo.archive(repo.add("old stuff", title="restamped").id, reason="stale")
    path = tmp_path / e.path
    mine = persons_version(path)
    save_when_named(monkeypatch, lambda p: p == path, lambda p: save(p, mine, "rename"))
    err = attempt(lambda: repo.purge(e.id, confirm=True))
    assert path.read_bytes() == mine
    assert err is not None
    assert repo.get(e.id).status == "archived"
    assert_whole(repo)


# --------------------------------------------------------------------------- consolidate, supersede


@pytest.mark.parametrize("style", STYLES)
def test_consolidate_keeps_a_save_to_the_new_memory_during_its_link_write(tmp_path, monkeypatch, style):
    repo = Repository(tmp_path)
    frag = repo.add("likes green tea")
    text = "The user likes green tea, brewed short. (marker-7f3a)"

    def is_new_memory(p: Path) -> bool:  # the link write: the new memory exists already
        return p.exists() and b"marker-7f3a" in p.read_bytes()

    fired = save_when_named(monkeypatch, is_new_memory,
                            lambda p: save(p, persons_version(p, "no, oolong"), style))
    err = attempt(lambda: repo.consolidate([frag.id], text, kind="fact"))
    assert fired
    assert fired[0].read_bytes().endswith(b"no, oolong\n")
    assert err is not None
    [new] = [x for xs in scan(tmp_path).values() for x in xs if "marker-7f3a" in x.text]
    assert "no, oolong" in repo.get(new.id).text
    assert repo.get(frag.id).layer == "shallow"  # nothing was retired after the conflict
    assert_whole(repo)


@pytest.mark.parametrize("which,style", [("old", "rename"), ("old", "in_place"),
                                         ("new", "rename"), ("new", "in_place")])
def test_supersede_keeps_a_save_to_either_memory(tmp_path, monkeypatch, which, style):
    repo = Repository(tmp_path)
    old = repo.add("deploy on fridays", title="old rule", kind="rule")
    new = repo.add("never deploy on fridays", title="new rule", kind="rule")
    path = tmp_path / (old if which == "old" else new).path
    mine = persons_version(path)
    fired = save_when_named(monkeypatch, lambda p: p == path, lambda p: save(p, mine, style))
    err = attempt(lambda: repo.supersede(old.id, new.id, reason="the team decided"))
    assert fired
    assert path.read_bytes() == mine
    assert err is not None
    assert_whole(repo)
    monkeypatch.undo()
    # supersede is idempotent: run again, it finishes on top of the person's version
    repo.supersede(old.id, new.id, reason="the team decided")
    assert "a line the person typed" in repo.get(old.id if which == "old" else new.id).text
    assert repo.get(old.id).status == "superseded"
    assert repo.get(new.id).meta["supersedes"] == [f"[[{old.name}]]"]
    assert_whole(repo)


# --------------------------------------------------------------------------- move


@pytest.mark.parametrize("style", STYLES)
def test_move_keeps_a_save_that_lands_as_it_removes_the_source(tmp_path, monkeypatch, style):
    repo = Repository(tmp_path)
    e = repo.add("draft", title="promoted while edited")
    source = tmp_path / e.path
    mine = persons_version(source)
    fired = save_at_removal(monkeypatch, source, lambda: save(source, mine, style))
    err = attempt(lambda: repo.move(e.id, "sediment", reason="promoted"))
    monkeypatch.undo()
    assert fired
    assert source.exists() and source.read_bytes() == mine
    assert err is not None and "kept" in str(err)
    assert not (tmp_path / "sediment" / f"{e.name}.md").exists()  # our copy withdrawn
    assert repo.get(e.id).path == e.path and "a line the person typed" in repo.get(e.id).text
    assert_whole(repo)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("when", ["before_sources", "at_rename"])
def test_metabolize_keeps_a_save_that_lands_while_its_batch_moves(tmp_path, monkeypatch, style, when):
    """A batch writes every new copy first, then removes the sources: a save
    to one source while its copy is placed (before the sources go), or just
    as it is renamed away, is kept there, that copy withdrawn, the rest moved."""
    import datetime as dt
    import sediment.store.moves as M
    repo = Repository(tmp_path, policy={"destructive_per_hour": 100000})
    es = [repo.add(f"a valuable note {i}", title=f"v{i}", kind="fact", value=0.9) for i in range(5)]
    edited = es[2]
    source = tmp_path / edited.path
    mine = persons_version(source)
    if when == "at_rename":
        fired = save_at_removal(monkeypatch, source, lambda: save(source, mine, style))
    else:
        fired, real = [], M.fsync_dirs

        def fsync_dirs(folders) -> None:  # the first folder fsyncs: every copy is in place
            if not fired:
                fired.append(True)
                save(source, mine, style)
            real(folders)
        monkeypatch.setattr(M, "fsync_dirs", fsync_dirs)
    now = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3)
    plan = repo.metabolize(dry_run=False, confirm=True, now=now)
    monkeypatch.undo()
    assert fired
    assert source.read_bytes() == mine
    assert not (tmp_path / "sediment" / f"{edited.name}.md").exists()  # our copy withdrawn
    assert [m.id for m, why in plan.skipped] == [edited.id] and "kept" in plan.skipped[0][1]
    assert sorted(m.id for m in plan.moves) == sorted(e.id for e in es if e is not edited)
    assert "a line the person typed" in repo.get(edited.id).text and repo.get(edited.id).layer == "shallow"
    found = scan(tmp_path)
    assert all(len(v) == 1 for v in found.values()) and len(found) == 5
    assert_whole(repo)


@pytest.mark.parametrize("style", STYLES)
def test_a_pure_rename_move_keeps_a_save_that_lands_as_it_removes_the_source(tmp_path, monkeypatch, style):
    # a move between rooms of one layer changes no byte: the file is renamed as it is
    repo = Repository(tmp_path)
    e = repo.add("draft", title="re-filed while edited", room="inbox-room")
    source = tmp_path / e.path
    mine = persons_version(source)
    fired = save_at_removal(monkeypatch, source, lambda: save(source, mine, style))
    err = attempt(lambda: repo.move(e.id, "shallow", room="other-room"))
    monkeypatch.undo()
    assert fired
    assert source.exists() and source.read_bytes() == mine
    assert err is not None
    assert not (tmp_path / "shallow" / "other-room" / f"{e.name}.md").exists()
    assert_whole(repo)


def test_recovery_of_a_move_keeps_a_source_the_person_edited_after_the_crash(tmp_path):
    """A writer died between writing a move's new copy and removing its source;
    before the root is opened again, the person edits the source. Recovery
    must not remove their edit: the move is undone instead."""
    from sediment.disk.journal import Journal
    repo = Repository(tmp_path)
    e = repo.add("draft", title="moved when the power went")
    repo.close()
    source, dst = tmp_path / e.path, tmp_path / "sediment" / f"{e.name}.md"
    dst.parent.mkdir(exist_ok=True)
    dst.write_bytes(source.read_bytes())  # the new copy, whole
    Journal(tmp_path / "_system" / "journal.log").begin(
        "move", id=e.id, src=e.path, dst=dst.relative_to(tmp_path).as_posix(), ver=e.version, dver=e.version)
    mine = persons_version(source)
    save(source, mine, "rename")
    again = Repository(tmp_path)
    assert source.read_bytes() == mine
    assert not dst.exists()
    assert again.get(e.id).path == e.path
    assert_whole(again)


def test_recovery_of_a_move_keeps_both_copies_when_the_person_edited_both(tmp_path):
    """The same crash, and the person edited the source and the new copy: the
    move cannot be undone by removing the copy; both stay (check() names the id
    in two files), neither edit is lost."""
    from sediment.disk.journal import Journal
    repo = Repository(tmp_path)
    e = repo.add("draft", title="moved when the power went")
    repo.close()
    source, dst = tmp_path / e.path, tmp_path / "sediment" / f"{e.name}.md"
    dst.parent.mkdir(exist_ok=True)
    dst.write_bytes(source.read_bytes())
    Journal(tmp_path / "_system" / "journal.log").begin(
        "move", id=e.id, src=e.path, dst=dst.relative_to(tmp_path).as_posix(), ver=e.version, dver=e.version)
    mine, theirs = persons_version(source), persons_version(dst).replace(b"typed", b"typed there")
    save(source, mine, "rename")
    save(dst, theirs, "rename")
    again = Repository(tmp_path)
    assert source.read_bytes() == mine and dst.read_bytes() == theirs
    assert any(p.code == "duplicate_id" for p in again.check())


# --------------------------------------------------------------------------- the primitive


def _note(tmp_path: Path, data: bytes = b"version A\n") -> Path:
    p = tmp_path / "note.md"
    p.write_bytes(data)
    return p


def _version(data: bytes) -> str:
    return content_version(data)


def test_replace_checked_takes_a_newer_save_over_an_older_one_while_it_backs_out(tmp_path, monkeypatch):
    """Saves land both before the swap and between the swap and the swap back:
    the newest one ends up in place, and nothing of ours remains."""
    from sediment.disk.checked import Changed, replace_checked
    p = _note(tmp_path)
    from sediment.disk import checked
    real, calls = checked.exchange, []

    def exchange(a: Path, b: Path) -> bool:
        calls.append(1)
        if len(calls) == 1:
            save(p, b"person X\n", "rename")  # before our swap
        elif len(calls) == 2:
            save(p, b"person Y\n", "in_place")  # into our file, before the swap back
        return real(a, b)

    monkeypatch.setattr(checked, "exchange", exchange)
    with pytest.raises(Changed):
        replace_checked(p, b"ours\n", _version(b"version A\n"))
    assert p.read_bytes() == b"person Y\n"
    assert len(calls) == 3  # swap, swap back (Y came back), swap Y in (X came back: dropped)
    assert [x.name for x in tmp_path.iterdir()] == ["note.md"]


def test_replace_checked_without_an_exchange_still_restores_an_in_place_save(tmp_path, monkeypatch):
    from sediment.disk.checked import Changed, replace_checked
    p = _note(tmp_path)
    from sediment.disk import checked
    monkeypatch.setattr(checked, "exchange", lambda a, b: False)  # another OS, or a file system without it
    real = os.replace

    def replace(a: Path, b: Path) -> None:
        if Path(b) == p:
            save(p, b"person X\n", "in_place")
        real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Changed):
        replace_checked(p, b"ours\n", _version(b"version A\n"))
    monkeypatch.undo()
    assert p.read_bytes() == b"person X\n"
    assert [x.name for x in tmp_path.iterdir()] == ["note.md"]
    replace_checked(p, b"ours\n", _version(b"person X\n"))  # and a write on a fresh read works
    assert p.read_bytes() == b"ours\n"


def test_replace_checked_writes_nothing_over_a_file_that_is_not_what_was_read(tmp_path):
    from sediment.disk.checked import Changed, replace_checked
    p = _note(tmp_path, b"the person's\n")
    with pytest.raises(Changed):
        replace_checked(p, b"ours\n", _version(b"version A\n"))
    assert p.read_bytes() == b"the person's\n"
    p.unlink()
    with pytest.raises(Changed):  # removed meanwhile: not brought back by our write
        replace_checked(p, b"ours\n", _version(b"the person's\n"))
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- two processes

PERSON = r'''
import fcntl, json, os, random, re, sys, time
from pathlib import Path

path, lock_path, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
header = path.read_bytes().split(b"\n---\n", 1)[0] + b"\n---\n"
lock = open(lock_path, "a+b")
rng = random.Random(7)
lost = []

def save(data, style):
    if style == "rename":
        tmp = path.with_name("." + path.name + ".person~")
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.rename(tmp, path)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

for k in range(1, n + 1):
    time.sleep(rng.random() * 0.003)  # a person's pace, jittered so saves fall anywhere in a write
    mark = f"P{k}"
    save(header + f"lastP: {mark}\n\nthe person's save {k}\n".encode(), "rename" if k % 2 else "in_place")
    # Look once no library write is in flight: under sediment's lock (a writer
    # holds it from its re-read to its last rename; a blocking flock, so that
    # the busy writer cannot starve us). The note must be this save, or a
    # library write made on top of it: anything else replaced this save
    # without having read it.
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        found = re.search(rb"lastP: (\S+)", path.read_bytes())
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
    seen = found.group(1).decode() if found else None
    if seen != mark:
        lost.append([mark, seen])
print(json.dumps({"saves": n, "lost": lost}))
'''


@pytest.mark.skipif(sys.platform == "win32", reason="the person's lock look uses fcntl.flock")
def test_no_save_of_a_person_in_another_process_is_overwritten(tmp_path):
    """A second process saves one note again and again, half the saves by
    rename, half in place, while this one updates it as fast as it can, each
    time on the version it just read (``expected``). Every library write
    carries the last person save it was made on (``lastP``). After each of its
    saves the person looks, once no library write is in flight, at what the
    note descends from: if it is not that save, a library write replaced the
    save without having read it — the save was lost."""
    repo = Repository(tmp_path)
    e = repo.add("lastP: none\n\nfirst version", title="raced")
    path = tmp_path / e.path
    child = subprocess.Popen([sys.executable, "-c", PERSON, str(path), str(tmp_path / "_system" / "lock"), "300"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    written = conflicts = 0
    while child.poll() is None:
        data = path.read_bytes()
        found = re.search(rb"lastP: (\S+)", data)
        if found is None:
            continue  # caught an in-place save half done
        try:
            repo.update(e.id, expected=content_version(data),
                        text=f"lastP: {found.group(1).decode()}\n\nthe agent's write {written}")
            written += 1
        except Conflict:
            conflicts += 1
        except (NotFound, ParseError):  # the view caught an in-place save half done: a damaged note
            repo.refresh()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode(errors="replace")
    report = json.loads(out)
    assert report["lost"] == [], f"{len(report['lost'])} of {report['saves']} saves lost (save, found)"
    assert re.search(rb"lastP: P300\b", path.read_bytes())  # the last save is what is there
    assert written > 0 and conflicts > 0
    assert_whole(repo)
    print(f"{written} library writes, {conflicts} conflicts, {report['saves']} saves")
