"""Shared helpers of the torture runs: forked processes, temp folders, disk inspection that does
not go through the library, tree snapshots, error classification, summaries.

Everything here reads the disk directly (``os.walk``, ``lstat``, the journal's
JSON lines) so that a run never trusts the library's own view of what it did.
Memory files are parsed with the public ``sediment.parse``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[2]
try:  # the checkout this file belongs to, even without an installed package
    import sediment  # noqa: F401
except ImportError:  # pragma: no cover - depends on how it is run
    sys.path.insert(0, str(REPO))
    import sediment  # noqa: F401

from sediment import LAYERS, SedimentError  # noqa: E402

SYSTEM = "_system"


# ---------------------------------------------------------------------------
# arguments and summaries


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="a small run for CI (a few seconds)")
    p.add_argument("--seed", type=int, default=None, help="random seed (printed; default: random)")
    p.add_argument("--verbose", "-v", action="store_true", help="print every finding")
    return p


def seed_of(args: argparse.Namespace) -> int:
    import random
    return args.seed if args.seed is not None else random.randrange(2 ** 31)


def summary(title: str, counts: dict[str, Any]) -> None:
    """One block: a title line, then ``name: value`` lines (stable, grep-able)."""
    print(f"== {title}")
    width = max((len(k) for k in counts), default=0)
    for k, v in counts.items():
        print(f"  {k.ljust(width)} : {v}")
    sys.stdout.flush()


def finish(broken: list, *, examples: int = 3) -> int:
    """Print the broken promises grouped by kind (a count and a few examples of
    each) and return the exit code. Items are ``(kind, message)`` or strings."""
    if not broken:
        print("RESULT: all promises held")
        return 0
    groups: dict[str, list[str]] = {}
    for item in broken:
        kind, msg = item if isinstance(item, tuple) else ("broken", item)
        groups.setdefault(kind, []).append(msg)
    print(f"RESULT: {len(broken)} broken promise(s) of {len(groups)} kind(s)")
    for kind, msgs in groups.items():
        print(f"  BROKEN {kind}: {len(msgs)}")
        for m in msgs[:examples]:
            print(f"    e.g. {m}")
    sys.stdout.flush()
    return 1


def where(exc: BaseException) -> str:
    """The innermost frame of a traceback, as 'package/file.py:function'."""
    import traceback
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return "?"
    f = tb[-1]
    return f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.name}"


# ---------------------------------------------------------------------------
# processes


def warm_up() -> None:
    """Load what a first search loads (jieba's dictionary) in this process,
    so that the processes forked from it start at once."""
    with temp_dir("warm") as d:
        sediment.Repository(d / "mem").search("warm up")


def fork(child: Callable[[int], int | None], *, failed: int = 3) -> tuple[int, int]:
    """Fork a process that runs ``child(w)`` and exits, ``w`` being the
    write end of a pipe to this process: its exit code is what ``child``
    returns (None: 0), or ``failed`` when it raised (its traceback printed
    on stderr). It never returns in the child; in this process: (its pid,
    the pipe's read end)."""
    r, w = os.pipe()
    sys.stdout.flush()  # (else what is buffered is printed again by the child)
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = failed
        try:
            code = child(w) or 0
        except BaseException:  # noqa: BLE001 - reported, and the child ends here all the same
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


# ---------------------------------------------------------------------------
# temp folders


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    """A fresh folder under the system temp folder, removed afterwards
    (symlinks inside are removed, never followed)."""
    d = Path(tempfile.mkdtemp(prefix=f"sediment-torture-{prefix}-"))
    try:
        yield d
    finally:
        remove_tree(d)


def remove_tree(d: Path) -> None:
    def onerror(func, path, exc_info):  # a folder made read-only by a run, a FIFO, …
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
    if d.exists() or d.is_symlink():
        shutil.rmtree(d, onerror=onerror)


# ---------------------------------------------------------------------------
# disk inspection (not through the library)


def walk_md(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every regular ``*.md`` file under the layer folders (symlinks not
    followed, hidden names skipped as the library does): (posix rel, lstat)."""
    for layer in LAYERS:
        top = root / layer
        if top.is_symlink() or not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for f in filenames:
                if f.startswith(".") or not f.endswith(".md"):
                    continue
                p = Path(dirpath, f)
                st = p.lstat()
                if stat.S_ISREG(st.st_mode):
                    yield p.relative_to(root).as_posix(), st


def scan(root: Path) -> tuple[dict[str, list[sediment.Entry]], list[str]]:
    """(id → entries on disk, paths that do not parse)."""
    found: dict[str, list[sediment.Entry]] = defaultdict(list)
    bad: list[str] = []
    for rel, _ in sorted(walk_md(root)):
        try:
            e = sediment.parse((root / rel).read_bytes(), rel)
        except SedimentError:
            bad.append(rel)
            continue
        found[e.id].append(e)
    return dict(found), bad


def temp_files(root: Path) -> list[str]:
    """Temp files of interrupted writes (``.<name>.<hex>.tmp``) anywhere under the root."""
    out = []
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            if f.startswith(".") and f.endswith(".tmp"):
                out.append(Path(dirpath, f).relative_to(root).as_posix())
    return sorted(out)


def journal_pending(root: Path) -> list[dict]:
    """Journal intents without their ``done``, read from the file's JSON lines
    (damaged lines and a torn tail skipped)."""
    path = root / SYSTEM / "journal.log"
    try:
        data = path.read_bytes()
    except OSError:
        return []
    begun: dict[str, dict] = {}
    for line in data.split(b"\n")[:-1]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        seq = rec.get("seq")
        if not isinstance(seq, str):
            continue
        if rec.get("phase") == "begin":
            begun[seq] = rec
        elif rec.get("phase") == "done":
            begun.pop(seq, None)
    return list(begun.values())


def tree_snapshot(top: Path, *, exclude: tuple[Path, ...] = ()) -> dict[str, tuple]:
    """Everything under ``top`` (itself included) by relative path: kind, mode and
    bytes' hash for files, target for symlinks. Links are recorded, never followed."""
    excl = {os.path.abspath(p) for p in exclude}
    snap: dict[str, tuple] = {}

    def record(p: str) -> None:
        rel = os.path.relpath(p, top)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            snap[rel] = ("link", os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            snap[rel] = ("dir", mode)
        elif stat.S_ISREG(st.st_mode):
            try:
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            except OSError as exc:
                digest = f"unreadable: {exc.errno}"
            snap[rel] = ("file", mode, st.st_size, digest)
        else:
            snap[rel] = ("special", stat.S_IFMT(st.st_mode), mode)

    record(str(top))
    for dirpath, dirnames, filenames in os.walk(top):
        keep = []
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if os.path.abspath(full) in excl:
                continue
            record(full)
            keep.append(d)  # os.walk does not descend into symlinked folders
        dirnames[:] = keep
        for f in filenames:
            full = os.path.join(dirpath, f)
            if os.path.abspath(full) not in excl:
                record(full)
    return snap


def diff_snapshots(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    out = []
    for rel in sorted(set(before) | set(after)):
        a, b = before.get(rel), after.get(rel)
        if a == b:
            continue
        if a is None:
            out.append(f"created {rel} ({b[0]})")
        elif b is None:
            out.append(f"removed {rel} ({a[0]})")
        else:
            out.append(f"changed {rel} ({a[0]} -> {b[0]})")
    return out


def path_state(p: Path) -> tuple:
    """What is at one path, for 'bytes unchanged' checks of odd files."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return ("missing",)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(p))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", tuple(sorted(tree_snapshot(p).items())))
    if stat.S_ISREG(st.st_mode):
        return ("file", hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size)
    return ("special", stat.S_IFMT(st.st_mode))


# ---------------------------------------------------------------------------
# errors


def is_own(exc: BaseException) -> bool:
    return isinstance(exc, SedimentError)


def describe(exc: BaseException, limit: int = 160) -> str:
    code = getattr(exc, "code", None)
    name = type(exc).__name__ + (f"[{code}]" if code else "")
    msg = " ".join(str(exc).split())
    return f"{name}: {msg[:limit]}" if msg else name


class LogCatcher(logging.Handler):
    """Collects the library's log records at WARNING and above (the watcher
    thread reports a batch it could not apply with ``log.exception``: that is
    an exception that escaped the library's own code, only swallowed)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def exceptions(self) -> list[str]:
        out = []
        for r in self.records:
            if r.exc_info and r.exc_info[1] is not None:
                out.append(f"{r.getMessage()}: {describe(r.exc_info[1])}")
        return out

    def __enter__(self) -> "LogCatcher":
        logging.getLogger("sediment").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("sediment").removeHandler(self)


def quiet_library_log(verbose: bool) -> None:
    """Without a handler, the library's warnings (an interrupted operation it
    could not finish, …) go to stderr through logging's last resort. The runs
    report what matters themselves; show those lines only with --verbose."""
    lg = logging.getLogger("sediment")
    if not verbose and not lg.handlers:
        lg.addHandler(logging.NullHandler())


def fsync_append(fh, rec: dict) -> None:
    """Append one JSON line to an unbuffered binary file and fsync it."""
    fh.write((json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    os.fsync(fh.fileno())


def read_jsonl(path: Path, offset: int = 0, *, cut_torn: bool = False) -> tuple[list[dict], int]:
    """Complete JSON lines from ``offset``; a torn last line (a kill landed in
    the write) is ignored, or cut off the file with ``cut_torn``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    if cut_torn and end < len(data):
        os.truncate(path, end)
    out = []
    for line in data[offset:end].splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out, max(end, offset)
