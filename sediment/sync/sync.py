"""``sync``: one memory on several machines, through a git remote.

One sync: write this machine's usage summary (``shared``), commit the root's
pending changes (only paths inside the root; machine-local parts never),
fetch, merge with the settings a memory needs (``gitutil.merge_options``: no
directory-rename guesses, the notes' merge driver), settle by rule what git
left (``merge``), restore the invariants (``repair``, below), commit, push.
A push that lost a race (someone pushed meanwhile) fetches and merges again.

The local steps hold the writer lock, so no sediment write lands in the
middle of a merge; the network steps do not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ..model import entry as E
from ..model import obsidian as O
from ..model.record import Record
from ..agent.conflicts import active
from ..errors import Conflict, SedimentError, StorageError
from .git import append_missing, git_exe, identity_options, install_driver, merge_options
from ..disk.shared import SharedUsage
from .branch import target
from .locks import left_locks, recover
from .merge import Git, is_note, resolve
from ..disk.files import atomic_write, read_nofollow
from ..store.system import GITIGNORE, SYSTEM, SYSTEM_GITIGNORE, make_layers
from ..view.held import Held, offset
from ..model.fields import unwrap_link

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store

log = logging.getLogger("sediment")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: what an unborn HEAD holds

# never committed by sync, whatever the .gitignore says
LOCAL = [line for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
LOCAL_PATHS = [p.rstrip("/") for p in LOCAL if "*" not in p]


@dataclass
class SyncResult(Record):
    """What one ``sync`` did."""
    remote: str | None = None
    committed: int = 0  # files in the commit of this machine's pending changes
    fetched: bool = False
    merged: int = 0  # merge commits made
    fast_forward: bool = False
    resolved: list[str] = field(default_factory=list)  # settled by rule
    conflicts: list[str] = field(default_factory=list)  # notes this sync left to a person (same body lines)
    awaiting: list[str] = field(default_factory=list)  # every note git's conflict markers are in, after it
    moves: list[str] = field(default_factory=list)  # notes moved to two places, and where they went
    repairs: list[str] = field(default_factory=list)
    installed: list[str] = field(default_factory=list)
    followed: str | None = None  # this clone changed branch to the remote's branch of the memory (``branch``)
    unlocked: list[str] = field(default_factory=list)  # git's lock files a killed git process left, removed
    changed: list[str] = field(default_factory=list)  # notes the pull changed here
    pushed: bool = False

    def __str__(self) -> str:
        lines = [f"removed a lock file a killed git process left: {p}" for p in self.unlocked]
        lines += [f"branch: {self.followed}"] if self.followed else []
        lines.append(f"committed {self.committed} file(s)" if self.committed else "nothing to commit")
        if self.remote is None:
            lines.append("no remote: nothing pulled or pushed")
        else:
            how = "fast-forward" if self.fast_forward else f"{self.merged} merge(s)" if self.merged else "up to date"
            lines.append(f"pulled from {self.remote}: {how}, {len(self.changed)} note(s) changed here")
        lines += [f"installed {x}" for x in self.installed]
        lines += [f"settled by rule: {p}" for p in self.resolved]
        lines += [f"moved to two places: {m}" for m in self.moves]
        lines += [f"repaired: {r}" for r in self.repairs]
        lines += [f"CONFLICT left to a person (the same lines edited on two machines): {p}" for p in self.conflicts]
        lines += [f"CONFLICT awaiting a person (git's conflict markers are in it: keep what is right, delete "
                  f"the markers, sync again): {p}" for p in self.awaiting if p not in self.conflicts]
        if self.remote is not None:
            lines.append("pushed" if self.pushed else "nothing to push")
        return "\n".join(lines)


def _exists(g: Git, ref: str) -> bool:
    return g.run("rev-parse", "--verify", "--quiet", ref, ok=(0, 1)).returncode == 0


def _stage(g: Git) -> list[str]:
    """Stage the root's changes; the machine-local parts never (the .gitignore
    keeps them out, and a person's .gitignore that lets them in is overruled).
    Returns what is staged, relative to the root."""
    g.run("add", "-A", "--", ".")
    staged = [p for p in g.run("diff", "--cached", "--name-only", "--relative", "--", ".").stdout.splitlines() if p]
    local = [p for p in staged if any(p == x or p.startswith(x + "/") for x in LOCAL_PATHS)]
    if local:
        g.run("reset", "-q", "--", *local)
        staged = [p for p in staged if p not in local]
    return staged


def _commit_pending(g: Git, ident: list[str], message: str) -> int:
    staged = _stage(g)
    if staged:
        g.run(*ident, "commit", "-q", "--no-verify", "-m", message, "--", ".")
    return len(staged)


def _ensure_gitignore(store: Store) -> None:
    """The machine-local lines a ``.gitignore`` lacks, added: the root's own, or
    in a person's folder (a vault) the one inside ``_system/``."""
    inner = store.root / SYSTEM / ".gitignore"
    gi, want = (inner, [ln for ln in SYSTEM_GITIGNORE.splitlines() if ln and not ln.startswith("#")]) \
        if inner.exists() else (store.root / ".gitignore", LOCAL)
    append_missing(gi, want)


def sync(store: Store, *, remote: str | None = None, push: bool = True, attempts: int = 3) -> SyncResult:
    """One sync (see the module); ``attempts``: pushes that lost a race before giving up."""
    git = git_exe()
    root = store.root
    store.check_writable()
    g = Git(git, root)
    if g.top is None:
        raise StorageError(f"{root} is not in a git repository: run 'sediment init --git', or "
                           "'sediment clone URL' to start from a remote", path=str(root))
    res = SyncResult()
    if g.gitdir is not None and g.common is not None and left_locks(g.gitdir, g.common):
        with store.writing():  # (no other sync of this root between its git steps meanwhile)
            res.unlocked = recover(root, g.top, g.gitdir, g.common)
    where = target(g, remote)
    remote, branch, tracked = where.remote, where.branch, where.tracked
    res.remote, res.followed = remote, where.followed
    ident = identity_options(git, root)
    shared = SharedUsage(root, store.usage.folder)
    for _attempt in range(attempts):
        ref = f"refs/remotes/{remote}/{branch}" if remote and branch else None
        if remote:
            g.run("fetch", "-q", remote)
            res.fetched = True
        with store.writing():
            ours = _local(g, store, shared, res, ident=ident, ref=ref)
        if not remote or not push or not branch or not ours:
            return res  # (nothing of ours the remote lacks)
        # the upstream is recorded only in the root's own repository (it is config)
        track = not tracked and g.top == root.resolve()
        proc = g.run("push", "-q", *(["-u"] if track else []), remote, f"HEAD:refs/heads/{branch}", ok=(0, 1))
        if proc.returncode == 0:
            res.pushed, tracked = True, True
            return res
        if "rejected" not in proc.stderr and "fetch first" not in proc.stderr:
            raise StorageError(f"git push failed: {proc.stderr.strip()}", path=str(root))
    raise StorageError(f"git push was rejected {attempts} times (others kept pushing); run sync again",
                       path=str(root))


def _finish(g: Git, res: SyncResult, ident: list[str]) -> None:
    """Settle the notes of an unfinished merge by rule and commit it; a file
    that is no note stops it (a person's to resolve)."""
    r = resolve(g)
    res.resolved += r.resolved
    res.conflicts += r.conflicts
    res.moves += r.moves
    if r.left:
        raise Conflict("the merge needs a person for " + ", ".join(r.left) + ": resolve them (git add them), "
                       "then run sync again; the notes in it are settled already", paths=r.left)
    g.run(*ident, "commit", "-q", "--no-edit", "--no-verify")


def _local(g: Git, store: Store, shared: SharedUsage, res: SyncResult, *, ident: list[str], ref: str | None) -> bool:
    """The steps under the writer lock: commit, merge, settle, repair, commit;
    then which notes await a person. Returns whether the branch has commits
    the remote lacks."""
    ahead = _steps(g, store, shared, res, ident=ident, ref=ref)
    res.awaiting = awaiting(store)
    return ahead


def awaiting(store: Store) -> list[str]:
    """The notes with git's conflict markers in them: left to a person by this
    sync, by another machine's (and pulled), or by a plain ``git pull``. Each
    is a ``check()`` problem already (it is read as no memory): only those
    files are looked at."""
    out = []
    for rel in sorted(store.view.problems):
        if not rel.endswith(".md"):
            continue
        try:
            text = read_nofollow(store.root / rel).decode("utf-8", "replace")
        except OSError:
            continue
        if E.has_conflict_markers(E.normal(text)):
            out.append(rel)
    return out


def _steps(g: Git, store: Store, shared: SharedUsage, res: SyncResult, *, ident: list[str], ref: str | None) -> bool:
    start = _head(g)
    # what moved HEAD since the last sync (a person's plain `git pull`) is
    # looked at too: its merge may have broken an invariant as well
    seen = _last_synced(store)
    pulled, everything = False, seen is None  # never synced here: look at every memory once
    if seen and seen != start and g.run("cat-file", "-e", f"{seen}^{{commit}}", ok=(0, 1, 128)).returncode == 0:
        start, pulled = seen, True
    if g.merging():  # a merge a plain `git pull` (or an earlier sync) left unfinished
        _finish(g, res, ident)
        res.merged += 1
        pulled = True
    res.installed += install_driver(g.git, g.root, g.top)
    _ensure_gitignore(store)
    if store.parts.writable("usage"):  # else check() says why no usage is recorded here
        try:
            shared.write_mine(store.usage.load())  # committed with the rest
        except StorageError as exc:
            log.warning("sediment: %s", exc)
    res.committed += _commit_pending(g, ident, "sediment sync: this machine's changes")
    counts = _ahead_behind(g, ref) if ref else None
    ahead = counts is None or counts[0] > 0
    if counts is not None and counts[1] > 0:
        _merge(g, res, ident, ref or "", ff=counts[0] == 0)
        pulled = True
    if not pulled and not everything:
        _remember(store, _head(g))
        return ahead
    if pulled:
        make_layers(store.root)  # git removed the layer folders the merge emptied
    changed, moves = _changes(g, start) if pulled else ([], [])
    res.changed += changed
    _follow_moves(g, store, moves)
    store.view.refresh()
    res.repairs += repair(store, None if everything else res.changed)
    if res.repairs:
        _stage(g)
        g.run(*ident, "commit", "-q", "--no-verify", "-m", "sediment sync: invariants restored after a merge",
              "--", ".")
        store.view.refresh()
        ahead = True
    if res.changed:
        store.note_done(*res.changed, op="sync")
    _remember(store, _head(g))
    return ahead


def _ahead_behind(g: Git, ref: str) -> tuple[int, int] | None:
    """(commits here the remote lacks, commits there this branch lacks); None
    without a remote branch."""
    proc = g.run("rev-list", "--left-right", "--count", f"HEAD...{ref}", ok=(0, 128))
    parts = proc.stdout.split()
    if proc.returncode == 0 and len(parts) == 2:
        return int(parts[0]), int(parts[1])
    return (0, 1) if _exists(g, ref) else None  # no HEAD yet: whatever the remote has is news


def _changes(g: Git, start: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The note paths changed since ``start`` (both ends of a move), and the moves."""
    fields = g.run("diff", "--name-status", "-z", "-M", "--relative", start, "HEAD", "--", ".").stdout.split("\0")
    changed: list[str] = []
    moves: list[tuple[str, str]] = []
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status[:1] in ("R", "C"):
            old, new = fields[i + 1], fields[i + 2]
            i += 3
            if status[:1] == "R":
                moves.append((old, new))
            changed += [p for p in (old, new) if is_note(p)]
        else:
            changed += [fields[i + 1]] if is_note(fields[i + 1]) else []
            i += 2
    return changed, moves


SYNCED = "cache/synced"  # under _system/: the commit the last sync left (machine-local)


def _last_synced(store: Store) -> str | None:
    if not store.parts.usable("cache"):
        return None
    try:
        text = (store.root / SYSTEM / SYNCED).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) else None


def _remember(store: Store, head: str) -> None:
    if not store.parts.writable("cache") or head == EMPTY_TREE:
        return
    try:
        path = store.root / SYSTEM / SYNCED
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (head + "\n").encode(), durable=False)
    except OSError as exc:  # a cache: the next sync looks at less, nothing is lost
        log.debug("cannot remember the synced commit: %s", exc)


def _follow_moves(g: Git, store: Store, moves: list[tuple[str, str]]) -> None:
    """Tell the view of the notes the pull only moved (same title, tags, body
    and room; the status or reason may differ): their index entries stay as
    they are, as for a move of the store's own, instead of being tokenized
    again by the rescan that follows."""
    view = store.view
    for old, new in moves:
        eid = view.by_path.get(old)
        if eid is None or not (is_note(old) and is_note(new)) or new in view.by_path or (g.root / old).exists():
            continue
        e = view.entries[eid]
        try:
            data = read_nofollow(g.root / new)
            fresh = E.parse(data, new, tz=view.tz, max_meta_size=view.max_meta_size)
        except (OSError, SedimentError):
            continue  # the rescan reads it (and reports what is wrong with it)
        if fresh.id != e.id or (fresh.title, fresh.tags, fresh.body, fresh.room) != (e.title, e.tags, e.body, e.room):
            continue
        view.relocate(e, Held.of(fresh, off=offset(data, fresh.body)))


def _head(g: Git) -> str:
    return g.run("rev-parse", "--verify", "-q", "HEAD", ok=(0, 1, 128)).stdout.strip() or EMPTY_TREE


def _merge(g: Git, res: SyncResult, ident: list[str], ref: str, *, ff: bool) -> None:
    if g.top != g.root.resolve() and g.run("diff", "--cached", "--quiet", ok=(0, 1)).returncode == 1:
        # staged work outside the root (in a larger repository): git would refuse to merge
        raise Conflict("changes outside the memory root are staged: commit or unstage them, then sync",
                       path=str(g.root))
    proc = g.run(*ident, *merge_options(), "merge", "-q", "--ff", "--no-edit", "--no-verify",
                 "--allow-unrelated-histories", ref, ok=(0, 1, 2, 128))
    if proc.returncode not in (0, 1):
        raise StorageError(f"git merge failed: {proc.stderr.strip() or proc.stdout.strip()}", path=str(g.root))
    if g.merging():
        _finish(g, res, ident)
        res.merged += 1
    elif ff:
        res.fast_forward = True
    else:
        res.merged += 1


# --------------------------------------------------------------------------- repair
# After a merge: the invariants of a memory, restored by rule.
#
# A merge of two machines' histories can give what neither machine would have
# written itself. ``repair`` finds and settles, each by a rule of the files
# alone (so two machines that repair at once write the same bytes):
#
# * **an exact duplicate** (two active memories with the same main text, added
#   on two machines): the older id stays; the newer is superseded by it, so
#   metabolize archives it;
# * **a supersede cycle** (A superseded by B here, B by A there): the newest
#   memory of the cycle is active again; its links into the cycle go.
#
# One id in two files is settled while merging (``merge``: a note moved on
# one side and changed on the other is one file, where it was moved). Any other
# second copy is a file someone made: ``check()`` reports the duplicate id, and
# nothing of it is removed.

def repair(store: Store, changed: Iterable[str] | None = None) -> list[str]:
    """Restore the invariants after a merge; returns what was done, as text.
    ``changed``: the note paths the merge changed (only they can have broken
    an invariant); None looks at every memory. The caller holds the writer lock."""
    view = store.view
    if changed is None:
        ids = sorted(view.entries)
    else:
        ids = sorted({view.by_path[p] for p in changed if p in view.by_path})
    done: list[str] = []
    done += _no_exact_duplicates(store, ids)
    done += _no_cycles(store, ids)
    return done


def _no_exact_duplicates(store: Store, ids: list[str]) -> list[str]:
    view, out = store.view, []
    seen: set[str] = set()
    for eid in ids:
        e = view.entries.get(eid)
        # (active: sediment's memories only; a person's own notes are never rewritten)
        if e is None or eid in seen or not active(e) or not e.text.strip():
            continue
        group = [x for x in view.same_text(e.text) if active(x)]  # sorted by id
        seen.update(x.id for x in group)
        if len(group) < 2:
            continue
        keeper = group[0]
        for twin in group[1:]:
            try:
                store.supersede(store.reread(view.entries[twin.id]), store.reread(view.entries[keeper.id]),
                                f"an exact duplicate of [[{keeper.name}]], written on another machine")
                out.append(f"{twin.id}: an exact duplicate of {keeper.id}, superseded by it")
            except SedimentError as exc:
                log.warning("sediment: duplicate %s not retired: %s", twin.path, exc)
    return out


def _no_cycles(store: Store, ids: list[str]) -> list[str]:
    view, out = store.view, []
    def succ(e: E.Entry) -> list[str]:
        ids: list[str] = []
        for link in O.items(e.meta.get("superseded_by")):
            ids += [i for i in view.by_name.get(unwrap_link(link), []) if i in view.entries]
        return ids
    seen: set[str] = set()
    for start in ids:
        if start in seen or start not in view.entries:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        node: str | None = start
        while node is not None and node not in seen:  # superseded_by mostly has one link: follow the first
            seen.add(node)
            on_path[node] = len(path)
            path.append(node)
            nxt = succ(view.entries[node])
            node = next((n for n in nxt if n in on_path), nxt[0] if nxt else None)
        if node is None or node not in on_path:
            continue
        cycle = path[on_path[node]:]
        newest = view.entries[max(cycle)]
        if not is_note(newest.path):
            continue  # a person's own note: check() is the place for it
        members = {view.entries[i].name for i in cycle}
        meta: dict[str, Any] = dict(newest.meta)
        left = [x for x in O.items(meta.get("superseded_by")) if unwrap_link(x) not in members]
        if left:
            meta["superseded_by"] = left
        else:
            meta.pop("superseded_by", None)
            if meta.get("status") == "superseded":
                meta["status"] = "active"
                meta.pop("reason", None)
        try:
            store.rewrite(store.reread(newest), meta=meta)
            out.append(f"{newest.id}: a supersede cycle of {len(cycle)} broken; it is the newest, so it stays")
        except SedimentError as exc:
            log.warning("sediment: supersede cycle at %s not broken: %s", newest.path, exc)
    return out
