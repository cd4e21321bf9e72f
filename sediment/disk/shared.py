"""Usage that travels between machines: one compacted summary per machine
under ``_system/shared/usage/<machine>.jsonl``, versioned, written only by
``sync``.

Each line is one memory's totals on that machine (recalls, confirmations,
refutations, recall days, last times), sorted by id; a machine writes only its
own file, so two machines never change the same file and git merges them as
a union. What a machine decides with (the metabolize plan, strength, search
tie-breaks) is its own usage log plus every other machine's summary, so after
a full sync all machines decide with the same numbers. The machine's name is
kept machine-local in ``_system/usage/machine`` (a copied folder that carries
it along would count its records twice; it is not versioned, so a clone gets
its own).

Reads never write here: only ``sync`` does, which commits it.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Mapping

from .files import atomic_write, symlink_in
from ..errors import StorageError
from ..model.usage import Usage

FOLDER = "_system/shared/usage"


def machine_id(usage_folder: Path, *, create: bool) -> str | None:
    """This machine's name for its summary (made on first use with ``create``)."""
    p = usage_folder / "machine"
    try:
        name = p.read_text(encoding="ascii").strip()
        if name and name.isalnum():
            return name
    except (OSError, UnicodeDecodeError):
        pass
    if not create:
        return None
    name = secrets.token_hex(6)
    usage_folder.mkdir(parents=True, exist_ok=True)
    atomic_write(p, (name + "\n").encode())
    return name


def combine(into: dict[str, Usage], other: Mapping[str, Usage]) -> None:
    """Add another machine's totals: counts add up, recall days unite (a day
    both machines recalled a memory on counts once), the last times are the later."""
    for k, u in other.items():
        mine = into.get(k)
        if mine is None:
            into[k] = Usage(u.recalls, u.confirms, u.refutes, set(u.days), u.last_use, u.last_confirm,
                            u.last_refute)
            continue
        mine.recalls += u.recalls - len(mine.days & u.days)
        mine.confirms += u.confirms
        mine.refutes += u.refutes
        mine.days |= u.days
        mine.last_use = max(mine.last_use, u.last_use)
        mine.last_confirm = max(mine.last_confirm, u.last_confirm)
        mine.last_refute = max(mine.last_refute, u.last_refute)


def render(usage: Mapping[str, Usage]) -> bytes:
    """A summary file: one line per memory, sorted, so the same totals are the same bytes."""
    lines = [json.dumps({"id": k, **usage[k].to_json()}, separators=(",", ":"), sort_keys=True)
             for k in sorted(usage)]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def parse(data: bytes) -> dict[str, Usage]:
    """A summary file's totals. A damaged line costs that line; a line twice
    (a union merge of two versions of one machine's file) counts as the larger."""
    out: dict[str, Usage] = {}
    for line in data.splitlines():
        try:
            rec = json.loads(line)
            k = rec.pop("id")
            u = Usage.from_json(rec)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue
        if not isinstance(k, str):
            continue
        old = out.get(k)
        if old is None or (u.recalls + u.confirms + u.refutes, u.last_use) > \
                (old.recalls + old.confirms + old.refutes, old.last_use):
            out[k] = u
    return out


class SharedUsage:
    """The other machines' summaries, re-read only when a file changed."""

    def __init__(self, root: Path, usage_folder: Path) -> None:
        self.root = root
        self.folder = root / FOLDER
        self.usage_folder = usage_folder
        self._sig: tuple[tuple[str, int, int], ...] = ()
        self._others: dict[str, Usage] = {}

    def mine(self) -> str | None:
        return machine_id(self.usage_folder, create=False)

    def link(self) -> str | None:
        """A symlink on the way to the summaries (which sediment does not follow), or None."""
        return symlink_in(self.root, FOLDER)

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """The summaries' names, times and sizes: unchanged, nothing to re-read."""
        if self.link():
            return ()
        try:
            names = sorted(n for n in os.listdir(self.folder) if n.endswith(".jsonl"))
        except OSError:
            return ()
        sig = []
        for n in names:
            try:
                st = os.stat(self.folder / n)
            except OSError:
                continue
            sig.append((n, st.st_mtime_ns, st.st_size))
        return tuple(sig)

    def others(self) -> dict[str, Usage]:
        """Every other machine's totals, combined."""
        sig = self.signature()
        if sig == self._sig:
            return self._others
        # this machine's name is read when the summaries changed, not at every
        # call (a search's tie-breaks call this): a name made since (by the
        # first sync) comes with this machine's own summary, which changes them
        mine = self.mine() if sig else None
        out: dict[str, Usage] = {}
        for n, *_ in sig:
            if n == f"{mine}.jsonl":
                continue  # this machine's own records are its log, which is newer
            try:
                combine(out, parse((self.folder / n).read_bytes()))
            except OSError:
                continue
        self._sig, self._others = sig, out
        return out

    def write_mine(self, usage: Mapping[str, Usage]) -> str | None:
        """Write this machine's summary (sync only); the path written, relative
        to the root, or None when it was already up to date."""
        link = self.link()
        if link:
            raise StorageError(f"{link} is a symlink, which sediment does not follow: this machine's "
                               "usage summary is not written", path=link)
        name = machine_id(self.usage_folder, create=True)
        path = self.folder / f"{name}.jsonl"
        data = render(usage)
        if not data and not path.exists():
            return None  # nothing recorded yet: no file to version
        try:
            if path.read_bytes() == data:
                return None
        except OSError:
            pass
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        return f"{FOLDER}/{name}.jsonl"
