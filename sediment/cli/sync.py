"""The commands of several machines: ``sync``, ``clone`` and the notes'
``merge-driver`` (which git runs, not a person)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kit import arg, command, open_root, shared_roots

if TYPE_CHECKING:
    from ..sync.sync import SyncResult


@command("sync", "commit this memory's changes, pull and merge by rule, push (git); with --shared, each "
                 "shared root too, as its own repository",
         arg("--remote", help="the git remote (default: the branch's upstream, else origin)"),
         arg("--no-push", dest="push", action="store_false", help="commit and pull, but do not push"))
def cmd_sync(ns: argparse.Namespace) -> tuple[Any, str]:
    from ..repository import Repository  # when a command runs, not at --help
    shared = shared_roots(ns)
    # each root synced by itself, with its own lock, remote and journal (a shared root is
    # written here as it is by `sediment --root PATH sync`: syncing is how it changes)
    with open_root(Repository, ns, shared=None) as repo:
        r = repo.sync(remote=ns.remote, push=ns.push)
    results: dict[str | None, SyncResult] = {None: r}
    for label, path in shared.items():
        with Repository(path, create=False) as other:
            results[label] = other.sync(push=ns.push)
    if any(x.conflicts or x.awaiting for x in results.values()):
        ns.exit_code = 3  # synced, but notes await a person (left by this sync or pulled)
    if not shared:
        return r.to_dict(), str(r)
    return ({"root": r.to_dict(), "shared": {label: x.to_dict() for label, x in results.items() if label}},
            "\n".join(str(x) if label is None else f"{label}: {x}" for label, x in results.items()))


@command("clone", "start a memory on this machine from a git remote (then: sediment sync)",
         arg("url", help="the git remote (a URL or a path)"),
         arg("dir", nargs="?", help="where the memory goes (default: --root)"))
def cmd_clone(ns: argparse.Namespace) -> tuple[Any, str]:
    from ..sync.branch import check_out
    from ..sync.git import clone, git_exe, install_driver
    from ..sync.merge import Git
    from ..repository import Repository
    dest = Path(ns.dir or ns.root).absolute()
    clone(ns.url, dest)
    branch = check_out(Git(git_exe(), dest))  # a remote whose HEAD names a branch nobody pushed
    with Repository(dest, create=True):  # the folders and policy of an empty remote
        pass
    installed = install_driver(git_exe(), dest)
    return ({"root": str(dest), "url": ns.url, "installed": installed, "branch": branch},
            f"cloned {ns.url} into {dest}" + (f" (installed {', '.join(installed)})" if installed else "")
            + (f"; on {branch}, the branch that holds the memory" if branch else ""))


@command("merge-driver", "git's merge driver for notes: merge %%A with %%O and %%B in place",
         arg("base", help="%%O"), arg("ours", help="%%A (the result is written here)"), arg("theirs", help="%%B"),
         arg("path", nargs="?", default="", help="%%P"))
def cmd_merge_driver(ns: argparse.Namespace) -> tuple[Any, str]:
    from ..sync.notemerge import run_driver
    clean = run_driver(ns.base, ns.ours, ns.theirs, ns.path)
    if not clean:
        ns.exit_code = 1  # git: the file is left conflicted
    return {"clean": clean}, "" if clean else f"conflict left in {ns.path or ns.ours}"


COMMANDS = (cmd_sync, cmd_clone, cmd_merge_driver)
