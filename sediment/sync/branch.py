"""Which branch of the remote holds the memory, and a clone following it.

A memory is one branch. Two machines that each sync a branch of their own
(one made ``master`` by ``git init``, the other landed on the remote's
``main`` by ``git clone``) would each report "up to date" forever and never
see the other's notes. So in sediment's own repository (the root is the top of
its repository) the branch is the remote's, decided on the remote, the same
for every machine:

* the branch the remote's ``HEAD`` names (its default branch), when it exists;
* else the remote's only branch (a ``HEAD`` naming a branch nobody pushed);
* else, on an empty remote, this clone's branch (its first push makes it);
* several branches and a ``HEAD`` naming none of them: no rule can tell, and
  guessing would diverge; sync refuses and says how to settle it.

A clone on another branch follows: it merges the remote's branch, pushes
there, tracks it, and takes its name (when no local branch has it), so that a
plain ``git pull``/``git push`` agree with sync. In a larger repository (a
root in a person's project) the branches are the person's: sync uses the
current branch and its upstream, as git does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import StorageError
from .merge import Git

HEADS = "refs/heads/"


@dataclass
class Target:
    """Where one sync merges from and pushes to."""
    remote: str | None
    branch: str | None  # the remote's branch (None: no remote, or a detached HEAD)
    tracked: bool  # the local branch's upstream is remote/branch already
    followed: str | None = None  # what following the remote changed here, as text


def remote_heads(g: Git, remote: str) -> tuple[str | None, list[str]]:
    """(the branch the remote's HEAD names, None when it names no branch there
    or the remote does not say; the remote's branches). One ``ls-remote``."""
    out = g.run("ls-remote", "--symref", remote, "HEAD", HEADS + "*").stdout
    head, heads = None, []
    for line in out.splitlines():
        left, _, name = line.partition("\t")
        if left.startswith("ref: ") and name == "HEAD" and left[5:].startswith(HEADS):
            head = left[5 + len(HEADS):]
        elif name.startswith(HEADS):
            heads.append(name[len(HEADS):])
    return (head if head in heads else None), heads


def memory_branch(g: Git, remote: str, fallback: str | None) -> str | None:
    """The remote's branch that holds the memory (see the module); ``fallback``
    (this clone's branch) on an empty remote. Raises ``StorageError`` when the
    remote's HEAD names none of several branches."""
    head, heads = remote_heads(g, remote)
    if head is not None:
        return head
    if len(heads) == 1:
        return heads[0]
    if not heads:
        return fallback
    raise StorageError(
        f"the remote {remote!r} has the branches {', '.join(sorted(heads))}, and its HEAD (its default branch) "
        "names none of them, so sync cannot tell which one holds the memory (syncing one of them while "
        "another machine syncs another would never bring the two together). Make one of them the remote's "
        "default branch (on a host: its settings; a bare repository: git symbolic-ref HEAD refs/heads/<branch> "
        "in it) or delete the others, then sync again", path=str(g.root))


def upstream(g: Git) -> tuple[str | None, str | None]:
    """(remote, branch) of the current branch's upstream, or (None, None)."""
    branch = current(g)
    if branch is None:
        return None, None
    remote = g.run("config", "--get", f"branch.{branch}.remote", ok=(0, 1)).stdout.strip()
    merge = g.run("config", "--get", f"branch.{branch}.merge", ok=(0, 1)).stdout.strip()
    if not remote or remote == "." or not merge.startswith(HEADS):
        return None, None
    return remote, merge[len(HEADS):]


def current(g: Git) -> str | None:
    """The current branch (born or not); None on a detached HEAD."""
    return g.run("symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1)).stdout.strip() or None


def target(g: Git, remote: str | None) -> Target:
    """The remote (``remote``, else the upstream's, else origin, else the only
    one) and the branch of it this sync merges and pushes; a clone of
    sediment's own repository on another branch follows the remote's."""
    up_remote, up_branch = upstream(g)
    remotes = g.run("remote").stdout.split()
    if remote is None:
        remote = up_remote if up_remote in remotes else "origin" if "origin" in remotes else \
            (remotes[0] if remotes else None)
    elif remote not in remotes:
        raise StorageError(f"no git remote named {remote!r}", path=str(g.root))
    local = current(g)
    if remote is None or local is None:
        return Target(remote, None, False)
    mine = up_branch if up_remote == remote else None
    if g.top != g.root.resolve():  # a larger repository: its branches are the person's
        return Target(remote, mine or local, mine is not None)
    branch = memory_branch(g, remote, mine or local) or local  # (the fallback is a branch)
    if mine == branch:
        return Target(remote, branch, True)
    if branch != local and not _exists(g, HEADS + branch):
        if _exists(g, HEADS + local):
            g.run("branch", "-m", local, branch)
        else:  # an unborn branch: only its name changes
            g.run("symbolic-ref", "HEAD", HEADS + branch)
        followed = f"this clone was on {local}; it follows {remote}/{branch}, the memory's branch, now"
        local = branch
    elif mine is not None:
        followed = f"{local} synced with {remote}/{mine}; it follows {remote}/{branch}, the memory's branch, now"
    elif branch != local:  # (a local branch of that name exists already: this one keeps its name)
        followed = f"{local} follows {remote}/{branch}, the memory's branch, now"
    else:
        return Target(remote, branch, False)  # a first sync: its push sets the upstream
    # tracked from now on, so that a plain `git pull` agrees (and this is said once)
    g.run("config", f"branch.{local}.remote", remote)
    g.run("config", f"branch.{local}.merge", HEADS + branch)
    return Target(remote, branch, True, followed)


def _exists(g: Git, ref: str) -> bool:
    return g.run("rev-parse", "--verify", "--quiet", ref, ok=(0, 1)).returncode == 0


def check_out(g: Git) -> str | None:
    """After ``git clone``: when the clone landed on no commit (the remote's
    HEAD names a branch nobody pushed) but the remote holds the memory on a
    branch, check that one out (tracking it). Returns its name, or None."""
    local = current(g)
    if local is None or _exists(g, "HEAD"):
        return None
    remotes = g.run("remote").stdout.split()
    if "origin" not in remotes:
        return None
    try:
        branch = memory_branch(g, "origin", None)
    except StorageError:  # several branches, none named: sync says so, and how to settle it
        return None
    if branch is None or not _exists(g, f"refs/remotes/origin/{branch}"):
        return None
    g.run("checkout", "-q", "-b", branch, "--track", f"origin/{branch}")
    return branch
