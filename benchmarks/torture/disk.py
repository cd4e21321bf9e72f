"""Disk torture: a full disk and a read-only root, on real mounts.

    python benchmarks/torture/disk.py            # as root (Linux): mounts tmpfs / a bind mount
    python benchmarks/torture/disk.py --smoke    # the same, smaller (it is quick anyway)

Needs root and permission to mount (the mounts are made with the mount(2)
system call and removed afterwards); otherwise it prints ``skipped: needs
root`` and exits 0.

**Full disk.** A tmpfs of ``--size`` (2 MB) holds the root. Notes are added
until the disk fills (what ``add`` raised then is reported); a ballast file
takes whatever space is left; then every verb runs once on the full disk --
open, search (which records usage), list, get, strength, check, stats, add,
update(expected=), move, archive, purge(confirm=True), touch, supersede,
consolidate, metabolize dry run and applied (ten years ahead, confirm=True),
recover, check(fix=True), close. Then the ballast goes, the root is opened
again and verified: every acknowledged note exists exactly once with its
acknowledged text (a note a failed call was working on may have either
state), no temp file, no pending journal operation, and writing works again.

Promises checked: reads (open, search, list, get, check, stats, strength,
metabolize dry run) work on a full disk; writes fail only with the library's
own error (``StorageError``, an ``OSError``); nothing acknowledged is lost; all
is well once there is space again.

**Read-only root.** A root is made normally, then bind-mounted read-only.
Opening it and every read must work (reading never writes a note); every
write must fail with the library's own error; the files stay as they were.

Prints each call and what it did (ok / the library's error / a FOREIGN
error). Exit status 1 when a promise is broken.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import errno
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import describe, is_own, journal_pending, scan, temp_files, tree_snapshot  # noqa: E402

from sediment import Repository  # noqa: E402

MS_RDONLY, MS_REMOUNT, MS_BIND, MNT_DETACH = 1, 32, 4096, 2
POLICY = {"destructive_per_hour": 10 ** 6, "lock_timeout_seconds": 5}
FUTURE = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=3650)
READS = {"open", "search", "list", "get", "strength", "check", "stats", "metabolize dry run", "contains",
         "open create=False"}


class Mounts:
    def __init__(self) -> None:
        self.libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.active: list[Path] = []

    def mount(self, src: str | None, target: Path, fstype: str | None, flags: int, data: str | None) -> None:
        def enc(s: str | None) -> bytes | None:
            return s.encode() if s is not None else None
        if self.libc.mount(enc(src), enc(str(target)), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), str(target))
        if not flags & MS_REMOUNT:  # a remount changes a mount already listed
            self.active.append(target)

    def unmount_all(self) -> None:
        while self.active:
            t = self.active.pop()
            if self.libc.umount2(str(t).encode(), MNT_DETACH) != 0:
                print(f"  (could not unmount {t.name}: {os.strerror(ctypes.get_errno())})")


class Calls:
    def __init__(self, section: str) -> None:
        self.section = section
        self.rows: list[tuple[str, str]] = []
        self.broken: list = []

    def __call__(self, name: str, fn, *a, write: bool | None = None, **k):
        is_read = (name in READS) if write is None else not write
        try:
            res = fn(*a, **k)
        except Exception as exc:  # noqa: BLE001 - classified
            if is_own(exc):
                self.rows.append((name, f"refused: {describe(exc, 110)}"))
                if is_read:
                    self.broken.append((f"{self.section}: a read failed", f"{name}: {describe(exc)}"))
            else:
                self.rows.append((name, f"FOREIGN {describe(exc, 110)}"))
                self.broken.append((f"{self.section}: non-sediment error",
                                    f"{name}: {describe(exc)} (in {common.where(exc)})"))
            return exc
        self.rows.append((name, "ok"))
        return res

    def print(self) -> None:
        print(f"== disk.py: {self.section}")
        w = max(len(n) for n, _ in self.rows)
        for n, o in self.rows:
            print(f"  {n.ljust(w)} : {o}")


def failed(x) -> bool:
    return isinstance(x, BaseException)


def full_disk(m: Mounts, tmp: Path, size: str, body_kb: int) -> tuple[Calls, dict]:
    mnt = tmp / "full"
    mnt.mkdir()
    m.mount("tmpfs", mnt, "tmpfs", 0, f"size={size}")
    root = mnt / "root"
    calls = Calls(f"full disk (tmpfs {size})")
    acked: dict[str, str] = {}  # id -> text it must have
    uncertain: dict[str, set[str]] = {}  # id -> texts it may have (a failed call was on it)
    repo = Repository(root, policy=POLICY)
    for i in range(8):
        e = repo.add(f"seed note {i} granite river", title=f"seed {i}", kind="fact",
                     layer="shallow" if i % 2 else "sediment")
        acked[e.id] = e.text
    frags = [repo.add(f"fragment {i} silt delta", kind=None) for i in range(3)]
    for f in frags:
        acked[f.id] = f.text
    filled = 0
    last = None
    filler = "granite " * (body_kb * 128)
    while True:
        try:
            e = repo.add(f"filler {filled} {filler}", title=f"filler {filled}", kind="fact")
        except Exception as exc:  # noqa: BLE001
            last = exc
            break
        acked[e.id] = e.text
        filled += 1
        if filled > 10_000:
            break
    calls.rows.append(("add until the disk filled", f"{filled} notes, then "
                       + ("FOREIGN " if last is not None and not is_own(last) else "")
                       + (describe(last, 110) if last is not None else "never filled")))
    if last is not None and not is_own(last):
        calls.broken.append(f"full disk: add on a filling disk raised a non-sediment error: {describe(last)}")
    # take the rest of the space, down to the last byte
    fd = os.open(mnt / "ballast", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    try:
        repo.close()
    except Exception:  # noqa: BLE001 - close on a full disk is tried again below
        pass

    r = calls("open", Repository, root, policy=POLICY)
    if failed(r):
        r = calls("open create=False", Repository, root, create=False, policy=POLICY)
    if not failed(r):
        ids = sorted(acked)
        seed = ids[0]
        calls("search", r.search, "granite river")
        calls("list", r.list)
        calls("get", r.get, seed)
        calls("contains", lambda: seed in r)
        calls("strength", r.strength, seed)
        calls("stats", r.stats)
        calls("check", r.check)
        calls("metabolize dry run", r.metabolize, dry_run=True, now=FUTURE)

        def write(name, eid, new_text, fn, *a, **k):
            res = calls(name, fn, *a, write=True, **k)
            if eid is not None:
                if failed(res):
                    uncertain.setdefault(eid, set()).update({acked[eid], new_text})
                else:
                    acked[eid] = new_text
            return res

        res = calls("add", r.add, "one more note granite", title="one more", write=True)
        if not failed(res):
            acked[res.id] = res.text
        g = r.get(seed)
        write("update(expected=)", seed, "updated on a full disk", r.update, seed, expected=g.version,
              text="updated on a full disk")
        others = [i for i in ids if i not in {f.id for f in frags}]
        write("move", others[1], acked[others[1]], r.move, others[1], "bedrock")
        write("archive", others[2], acked[others[2]], r.archive, others[2], reason="full disk")
        write("purge", others[3], acked[others[3]], r.purge, others[3], confirm=True)
        calls("touch confirm", r.touch, others[4], "confirm", write=True)
        write("touch refute confirm=True", others[4], acked[others[4]], r.touch, others[4], "refute",
              confirm=True)
        write("supersede", others[5], acked[others[5]], r.supersede, others[5], others[6])
        res = calls("consolidate", r.consolidate, [f.id for f in frags[:2]], "consolidated silt delta",
                    kind="fact", write=True)
        for f in frags[:2]:
            uncertain.setdefault(f.id, set()).add(acked[f.id])
        if not failed(res):
            acked[res.id] = res.text
        res = calls("metabolize apply", r.metabolize, dry_run=False, now=FUTURE, confirm=True, write=True)
        if failed(res):
            for i in ids:
                uncertain.setdefault(i, set()).add(acked[i])
        calls("recover", r.recover, write=True)
        calls("check(fix=True)", r.check, fix=True, write=True)
        calls("close", r.close, write=True)

    # space again: recovery must leave everything whole
    (mnt / "ballast").unlink()
    verdict = {}
    again = calls("open after freeing space", Repository, root, policy=POLICY, write=False)
    if not failed(again):
        problems = calls("check after freeing space", again.check, write=False)
        res = calls("add after freeing space", again.add, "space again granite", write=False)
        calls("close after freeing space", again.close, write=False)
        pending = [p for p in problems if p.code == "journal_pending"] if not failed(problems) else []
        found, torn = scan(root)
        lost = [i for i in acked if i not in found]
        dup = [i for i, es in found.items() if len(es) > 1]
        wrong = [i for i in acked if i in found and found[i][0].text != acked[i]
                 and found[i][0].text not in uncertain.get(i, set())]
        temps = temp_files(root)
        verdict = {"acknowledged notes": len(acked), "lost": len(lost), "duplicated": len(dup),
                   "wrong text": len(wrong), "torn files": len(torn), "temp files": len(temps),
                   "journal pending": len(pending) + len(journal_pending(root))}
        for k in ("lost", "duplicated", "wrong text", "torn files", "temp files", "journal pending"):
            if verdict[k]:
                calls.broken.append(f"full disk, after freeing space: {k}: {verdict[k]} "
                                    f"({(lost or dup or wrong or torn or temps)[:3]})")
    return calls, verdict


def read_only(m: Mounts, tmp: Path) -> Calls:
    src, ro = tmp / "src", tmp / "ro"
    ro.mkdir()
    calls = Calls("read-only root (bind mount)")
    repo = Repository(src, policy=POLICY)
    notes = [repo.add(f"read only note {i} granite", title=f"ro {i}", kind="fact") for i in range(5)]
    repo.search("granite")
    repo.close()
    before = tree_snapshot(src)
    m.mount(str(src), ro, None, MS_BIND, None)
    m.mount(None, ro, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)
    try:
        (ro / "probe").write_bytes(b"x")
        calls.broken.append("read-only root: the bind mount is writable (the test is not testing)")
    except OSError:
        pass
    r = calls("open", Repository, ro, policy=POLICY)
    r2 = calls("open create=False", Repository, ro, create=False, policy=POLICY)
    if failed(r):
        r = r2
    if not failed(r):
        eid = notes[0].id
        calls("search", r.search, "granite")
        calls("list", r.list)
        calls("get", r.get, eid)
        calls("contains", lambda: eid in r)
        calls("strength", r.strength, eid)
        calls("stats", r.stats)
        calls("check", r.check)
        calls("metabolize dry run", r.metabolize, dry_run=True, now=FUTURE)
        calls("refresh", r.refresh, write=False)
        calls("add", r.add, "cannot be written", write=True)
        calls("update(expected=)", r.update, eid, expected=r.get(eid).version, text="no", write=True)
        calls("move", r.move, eid, "bedrock", write=True)
        calls("archive", r.archive, eid, reason="ro", write=True)
        calls("purge", r.purge, eid, confirm=True, write=True)
        calls("touch confirm", r.touch, eid, "confirm", write=True)
        calls("supersede", r.supersede, notes[1].id, notes[2].id, write=True)
        calls("metabolize apply", r.metabolize, dry_run=False, now=FUTURE, confirm=True, write=True)
        calls("recover", r.recover, write=True)
        calls("check(fix=True)", r.check, fix=True, write=True)
        calls("close", r.close, write=False)
    if tree_snapshot(src) != before:
        calls.broken.append("read-only root: the files changed")
    return calls


def main() -> int:
    p = common.parser(__doc__)
    p.add_argument("--size", default="2m", help="tmpfs size for the full disk (2m)")
    p.add_argument("--body-kb", type=int, default=20, help="size of the notes that fill it (20 KB)")
    args = p.parse_args()
    common.quiet_library_log(args.verbose)
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        print("skipped: needs root (Linux, permission to mount)")
        return 0
    started = time.monotonic()
    m = Mounts()
    with common.temp_dir("disk") as tmp:
        probe = tmp / "probe"
        probe.mkdir()
        try:
            m.mount("tmpfs", probe, "tmpfs", 0, "size=64k")
        except OSError as exc:
            print(f"skipped: needs root and permission to mount ({exc.strerror})")
            return 0
        m.unmount_all()
        broken: list = []
        try:
            calls, verdict = full_disk(m, tmp, args.size, args.body_kb)
            calls.print()
            common.summary("disk.py: full disk, after freeing space", verdict)
            broken += calls.broken
            m.unmount_all()
            calls = read_only(m, tmp)
            calls.print()
            broken += calls.broken
        finally:
            m.unmount_all()
    print(f"  seconds : {time.monotonic() - started:.0f}")
    return common.finish(broken)


if __name__ == "__main__":
    sys.exit(main())
