"""Three-way merge of one note: what git's merge driver for notes runs
(``sediment merge-driver %O %A %B %P``, registered in ``.git/info/attributes``).

The frontmatter is merged field by field. A field only one side changed takes
that side's value (a removal too); a field both sides changed to different
values is settled by the field's rule:

* ``status``: the later in the lifecycle (active < superseded < archived < purged);
  ``reason`` goes with the status that won (with equal statuses: as any field);
* ``tags``, ``links``, ``supersedes``, ``superseded_by``, ``source_links``: the
  union — what either side added is kept, what either side removed goes;
* ``updated``: the later; ``created``: the earlier;
* ``value`` and each key of ``weights``: the value of the side updated later,
  and with equal ``updated`` the higher value;
* anything else (``title``, ``kind``, a person's own keys): the side updated
  later; with equal ``updated`` the one whose value sorts last as JSON.

Every rule gives the same answer whichever side is "ours", so two machines
that merge each other's commits at once write the same bytes.

The body is merged by ``git merge-file``: only a concurrent edit of the same
lines is a conflict, left in the file with git's markers (which ``check()``
names and search leaves out until a person resolves it).

A side that is no memory (a person's note without frontmatter, markers
already in it) is merged as plain text by ``git merge-file``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Mapping

from ..model import entry as E
from ..errors import NotFound, ParseError, StorageError
from ..model.fields import STATUSES, parse_time

STATUS_ORDER = {s: i for i, s in enumerate(STATUSES)}
SET_FIELDS = ("tags", "links", "supersedes", "superseded_by", "source_links")
_MISSING = object()


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)


def _time(meta: Mapping[str, Any], key: str) -> float | None:
    try:
        return parse_time(meta.get(key) or meta.get("created"), key=key).timestamp()
    except (ParseError, TypeError, ValueError, OverflowError):
        return None


def _later(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> int:
    """1 when ours was updated later, -1 when theirs was, 0 for a tie."""
    a, b = _time(ours, "updated"), _time(theirs, "updated")
    if a is None or b is None or a == b:
        return 0
    return 1 if a > b else -1


def _set_union(base: Any, ours: Any, theirs: Any) -> list[Any]:
    def items(v: Any) -> list[Any]:
        return list(v) if isinstance(v, list) else ([] if v is _MISSING or v is None else [v])
    b, o, t = items(base), items(ours), items(theirs)
    keys = {_canon(x) for x in o} | {_canon(x) for x in t}
    removed = {_canon(x) for x in b} - ({_canon(x) for x in o} & {_canon(x) for x in t})
    out, seen = [], set()
    for x in b:  # the base's order for what stays; additions after it, sorted
        k = _canon(x)
        if k in keys and k not in removed and k not in seen:
            out.append(x)
            seen.add(k)
    for x in sorted((x for x in o + t if _canon(x) not in seen), key=_canon):
        k = _canon(x)
        if k not in seen and k not in removed:
            out.append(x)
            seen.add(k)
    return out


def _by_update(o: Any, t: Any, later: int) -> Any:
    if later:
        return o if later > 0 else t
    return max(o, t, key=_canon)


def _number(o: Any, t: Any, later: int) -> Any:
    if later:
        return o if later > 0 else t
    try:
        return max(o, t)
    except TypeError:
        return max(o, t, key=_canon)


def _same(x: Any, y: Any) -> bool:
    if x is _MISSING or y is _MISSING:
        return x is y
    return _canon(x) == _canon(y)


def _three(b: Any, o: Any, t: Any) -> tuple[bool, Any]:
    """(settled, value) by the plain three-way rule: equal sides, or one side unchanged."""
    if _same(o, t) or _same(t, b):
        return True, o
    if _same(o, b):
        return True, t
    return False, None


def merge_meta(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """The merged frontmatter of three versions (``base`` empty when there was
    none). Pure; see the module's rules."""
    later = _later(ours, theirs)
    so, st = ours.get("status") or "active", theirs.get("status") or "active"
    status_winner = 0 if so == st else (1 if STATUS_ORDER.get(so, 0) > STATUS_ORDER.get(st, 0) else -1)
    keys = [*base, *(k for k in ours if k not in base), *(k for k in theirs if k not in base and k not in ours)]
    extra = sorted(k for k in keys if k not in base)
    out: dict[str, Any] = {}
    for k in [k for k in keys if k in base] + extra:
        b, o, t = base.get(k, _MISSING), ours.get(k, _MISSING), theirs.get(k, _MISSING)
        settled, v = _three(b, o, t)
        if not settled:
            v = _by_rule(k, b, o, t, later=later, status_winner=status_winner)
        if v is not _MISSING:
            out[k] = v
    return out


def _by_rule(k: str, b: Any, o: Any, t: Any, *, later: int, status_winner: int) -> Any:
    """The merged value of key ``k`` that both sides changed, by its rule."""
    if k == "status":
        return o if status_winner >= 0 else t
    if k == "reason" and status_winner:
        return o if status_winner > 0 else t
    if k in SET_FIELDS:
        return _set_union(b, o, t)
    if k in ("updated", "created"):
        return _time_pick(k, o, t)
    if k == "value" and o is not _MISSING and t is not _MISSING:
        return _number(o, t, later)
    if k == "weights" and isinstance(o, dict) and isinstance(t, dict):
        return _weights(b if isinstance(b, dict) else {}, o, t, later)
    if o is _MISSING or t is _MISSING:
        return t if o is _MISSING else o  # one side removed what the other changed: the change stays
    return _by_update(o, t, later)


def _time_pick(k: str, o: Any, t: Any) -> Any:
    """``updated``: the later of the two; ``created``: the earlier (a time that
    does not read as one loses to one that does)."""
    times = [(x, parse_time(x, key=k).timestamp()) for x in (o, t) if x is not _MISSING and _safe_time(x)]
    if times:
        pick = max if k == "updated" else min
        return pick(times, key=lambda p: (p[1], _canon(p[0])))[0]
    return max((x for x in (o, t) if x is not _MISSING), key=_canon)


def _weights(b: Mapping[str, Any], o: Mapping[str, Any], t: Mapping[str, Any], later: int) -> dict[str, Any]:
    """Tideline weights merged one by one: each by the three-way rule, else as a number."""
    v = {}
    for wk in [*o, *(x for x in t if x not in o)]:
        ok, wv = _three(b.get(wk, _MISSING), o.get(wk, _MISSING), t.get(wk, _MISSING))
        if not ok:
            wv = _number(o.get(wk), t.get(wk), later) if wk in o and wk in t else o.get(wk, t.get(wk))
        if wv is not _MISSING:
            v[wk] = wv
    return v


def _safe_time(x: Any) -> bool:
    try:
        parse_time(x)
        return True
    except (ParseError, TypeError, ValueError, OverflowError):
        return False


def _split(data: bytes) -> tuple[str, str] | None:
    """(frontmatter block with its fences, body) of a note's text, or None."""
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s.startswith("---\n"):
        return None
    end = s.find("\n---\n", 3)
    if end < 0:
        return None
    return s[:end + 5], s[end + 5:]


def merge_text(base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str, str]) -> tuple[bytes, bool]:
    """git's three-way merge of plain text: (result, clean)."""
    git = shutil.which("git")
    if git is None:
        raise StorageError("git is not installed: notes cannot be merged")
    with tempfile.TemporaryDirectory(prefix="sediment-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = os.path.join(tmp, name)
            with open(p, "wb") as fh:
                fh.write(data)
            paths.append(p)
        proc = subprocess.run([git, "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2],
                               *paths], capture_output=True)
    if proc.returncode < 0 or proc.returncode > 127:
        raise StorageError(f"git merge-file failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout, proc.returncode == 0


def merge_note(base: bytes, ours: bytes, theirs: bytes, path: str = "") -> tuple[bytes, bool]:
    """The merged bytes of one note and whether the merge is clean. A note
    only one side changed comes back byte for byte as that side wrote it."""
    if theirs in (ours, base):
        return ours, True
    if ours == base:
        return theirs, True
    labels = (f"{path} (this machine)", f"{path} (common ancestor)", f"{path} (incoming)")
    parts = [_split(x) for x in (base, ours, theirs)]
    po, pt = parts[1], parts[2]
    metas: list[dict[str, Any] | None] = []
    for p, raw in zip(parts, (base, ours, theirs)):
        if p is None:
            metas.append(None)
            continue
        try:
            e = E.parse(raw, path)
            metas.append(dict(e.meta))
        except ParseError:
            metas.append(None)
    if po is None or pt is None or metas[1] is None or metas[2] is None:
        return merge_text(base, ours, theirs, labels)
    mb = metas[0] or {}
    meta = merge_meta(mb, metas[1], metas[2])
    body_b = parts[0][1] if parts[0] is not None else ""
    body, clean = merge_text(body_b.encode(), po[1].encode(), pt[1].encode(), labels)
    # the frontmatter as one side wrote it, where the merge chose all of it
    # (a person's own formatting stays); otherwise written afresh
    if _canon(meta) == _canon(metas[1]) and list(meta) == list(metas[1]):
        head = po[0]
    elif _canon(meta) == _canon(metas[2]) and list(meta) == list(metas[2]):
        head = pt[0]
    else:
        head = E.render(E.Entry(meta=meta, body=""))
    return head.encode() + body, clean


def run_driver(base_path: str, ours_path: str, theirs_path: str, path: str = "") -> bool:
    """What ``sediment merge-driver %O %A %B %P`` does: the result goes to
    ``ours_path`` (git's %A); returns whether it is clean. Raises
    ``NotFound`` when one of the three files is not there (git always
    passes three files, an empty one for a side that has no note): nothing
    is written, so git never takes an empty file for the merge."""
    texts: dict[str, bytes] = {}
    missing = []
    for p in (base_path, ours_path, theirs_path):
        try:
            with open(p, "rb") as fh:
                texts[p] = fh.read()
        except FileNotFoundError:
            missing.append(p)
    if missing:
        raise NotFound(f"merge-driver: no file at {', '.join(missing)}; git runs it with three files "
                       "(%O %A %B: the base, ours, theirs)", path=missing[0])
    result, clean = merge_note(texts[base_path], texts[ours_path], texts[theirs_path], path)
    with open(ours_path, "wb") as fh:
        fh.write(result)
    return clean
