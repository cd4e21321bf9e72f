"""Obsidian's conventions, as the format's defaults for a person's notes. Pure.

A person's note is any ``.md`` file outside the layer folders (and outside
``_system/``, dot-folders and what ``.obsidian/`` says to leave out). It is
read the way Obsidian reads it and never written:

* its id is derived from its path when it has none (``path_id``: the same on
  every machine, no stored state; a rename by hand gives a new id);
* its frontmatter is read as YAML 1.2 reads it (``load_properties``): ``yes``,
  ``no``, ``12:30``, ``0755`` stay text, as Obsidian shows them; a template
  placeholder (``{{date}}``) and a date PyYAML cannot construct
  (``2024-02-30``) are kept as written;
* ``aliases`` name it too; ``tags`` (a list, or text separated by commas or
  spaces) and inline ``#tags`` tag it, and a nested tag ``#a/b`` is also
  ``a`` (``tag_closure``);
* ``[[name]]``, ``[[folder/name]]``, ``[[name#heading]]``, ``[[name|label]]``
  and ``![[embeds]]`` are links (``wikilinks``); a link to an attachment
  (``[[photo.png]]``) is a link to a file, not to a note.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import re
import unicodedata
from typing import Any, Iterable, Mapping, NamedTuple

import yaml

try:
    from yaml import CSafeLoader as _Base
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Base  # type: ignore[assignment]

PATH_ID_PREFIX = "path-"


def path_id(rel: str) -> str:
    """The id of a person's note that has none: a digest of its path relative
    to the root (Unicode-normalised, so macOS and Linux agree), 80 bits in
    hex after ``path-``. No ULID starts so."""
    digest = hashlib.blake2b(unicodedata.normalize("NFC", rel).encode("utf-8"), digest_size=10).digest()
    return PATH_ID_PREFIX + digest.hex()


def own_id(value: Any) -> str | None:
    """A person's ``id`` property as an id, or None when it cannot be one (a
    list, a boolean, empty text, a template placeholder)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    s = str(value).strip()
    return s if s and "{{" not in s and not any(c.isspace() for c in s) else None


# ---------------------------------------------------------------------------
# properties

class _VaultLoader(_Base):
    """YAML as Obsidian reads it: the YAML 1.2 core schema's booleans, ints
    and floats (so ``yes``, ``NO``, ``12:30``, ``1_000`` and ``0755`` stay
    text), YAML 1.1's dates (Obsidian's date properties stay dates)."""


_KEEP = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"}
_VaultLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag in _KEEP] for k, v in _Base.yaml_implicit_resolvers.items()}
_VaultLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                   list("tTfF"))
_VaultLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"),
                                   list("-+0123456789"))
_VaultLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def _timestamp(loader: Any, node: Any) -> Any:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):  # 2024-02-30: kept as written
        return loader.construct_scalar(node)


_VaultLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)

# a value that is a template placeholder ({{date}}, {{title}}): YAML would
# read it as a flow mapping; it is quoted for reading only, so it stays text
_PLACEHOLDER = re.compile(r"^(?P<pre>\s*(?:-\s+)?(?:[^\s'\"{\[#-][^:]*?:\s+)?)(?P<val>\{\{.*?)\s*$", re.MULTILINE)


def load_properties(fm_text: str) -> Any:
    """The frontmatter of a person's note, read as Obsidian reads it. Raises
    what PyYAML raises for text that is no YAML at all."""
    if "{{" in fm_text:
        fm_text = _PLACEHOLDER.sub(lambda m: m["pre"] + "'" + m["val"].replace("'", "''") + "'", fm_text)
    return yaml.load(fm_text, Loader=_VaultLoader) if fm_text.strip() else {}


def text_of(value: Any) -> str | None:
    """A scalar property as text (a title, a kind), or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    s = str(value).strip()
    return s or None


def number_of(value: Any, default: float) -> float:
    """A property as a number 0–1 (``value``), else ``default``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    return v if not isinstance(value, bool) and math.isfinite(v) and 0 <= v <= 1 else default


def items(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(x) for x in value if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    return []


def aliases(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """``aliases`` (or the older ``alias``): a list, or text separated by commas."""
    raw = meta.get("aliases", meta.get("alias"))
    if raw is None:
        return ()
    out = []
    for item in items(raw):
        parts = item.split(",") if isinstance(raw, str) else [item]
        out += [p.strip() for p in parts if p.strip()]
    return tuple(dict.fromkeys(out))


_TAG_CHARS = r"[^\s!\"#$%&'()*+,.:;<=>?@\[\\\]^`{|}~]"
_INLINE_TAG = re.compile(r"(?<!\S)#(" + _TAG_CHARS + r"+)", re.MULTILINE)
# a code block: a fence of 3+ backticks or tildes (indented too: in a list item), to a
# line that starts with the same fence, or to the end
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_TICKS = re.compile(r"`+")
_COMMENT = re.compile(r"%%.*?%%", re.DOTALL)


def _tag(s: str) -> str | None:
    s = s.strip().lstrip("#").strip("/")
    return s if s and not s.isdigit() else None


def property_tags(value: Any) -> list[str]:
    """The ``tags`` property: a list, or text separated by commas or spaces;
    a leading ``#`` dropped (Obsidian accepts both)."""
    out = []
    for item in items(value):
        for part in re.split(r"[,\s]+", item) if isinstance(value, str) else [item]:
            t = _tag(part)
            if t:
                out.append(t)
    return out


def inline_tags(body: str) -> list[str]:
    """``#tags`` in the text, outside code and comments: a ``#`` at the start of
    a word, followed by letters, digits, ``_``, ``-`` or ``/``, not digits only.
    (``# Heading``, ``[[note#part]]`` and ``url#anchor`` are no tags.)"""
    if "#" not in body:
        return []
    text = _COMMENT.sub(" ", outside_code(body))
    return [t for t in (_tag(m) for m in _INLINE_TAG.findall(text)) if t]


def tag_closure(tags: Iterable[str]) -> frozenset[str]:
    """Each tag and the tags it is nested under: ``a/b/c`` is also ``a/b`` and ``a``."""
    out: set[str] = set()
    for t in tags:
        parts = t.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(out)


# ---------------------------------------------------------------------------
# links

class Link(NamedTuple):
    target: str  # the note (or file) named: 'name', 'folder/name', 'photo.png'; '' for the note itself
    heading: str  # after '#': a heading, or '^block'
    label: str  # after '|': the text shown
    embed: bool  # ![[…]]


_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
ATTACHMENT = re.compile(r"\.(?!md$)[A-Za-z0-9]{1,10}$")  # photo.png, paper.pdf, board.canvas


def wikilinks(text: str) -> list[Link]:
    """Every ``[[…]]`` and ``![[…]]`` in ``text``, parsed. ``\\|`` (a link in a
    table) is a ``|``."""
    out = []
    for m in _LINK.finditer(text):
        inner = m.group(2).replace("\\|", "|")
        target, _, label = inner.partition("|")
        target, _, heading = target.partition("#")
        out.append(Link(target.strip(), heading.strip(), label.strip(), bool(m.group(1))))
    return out


def _without_spans(line: str) -> str:
    """A line without its code spans: a run of backticks to the next run of
    the same length (``a `b` c``), as CommonMark pairs them. Linear: each
    run's partner is found once, from the right (a regex backtracks over
    every unmatched run, quadratic in a line of many)."""
    runs = list(_TICKS.finditer(line))
    partner: list[int | None] = [None] * len(runs)
    later: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        n = len(runs[i].group())
        partner[i] = later.get(n)
        later[n] = i
    out, at, i = [], 0, 0
    while i < len(runs):
        j = partner[i]
        if j is None:
            i += 1
            continue
        out += [line[at:runs[i].start()], " "]
        at, i = runs[j].end(), j + 1
    return "".join(out) + line[at:] if out else line


def outside_code(text: str) -> str:
    """``text`` without its code blocks and code spans, where ``[[…]]`` and
    ``#tags`` are text, not links or tags (as Obsidian reads them)."""
    if "`" not in text and "~~~" not in text:
        return text
    return "".join(_without_spans(line) if "`" in line else line
                   for line in _FENCE.sub("", text).splitlines(keepends=True))


def link_key(target: str) -> str:
    """A link target as notes are looked up: without ``.md``, with ``/``."""
    t = target.strip().replace("\\", "/").strip("/")
    return t[:-3] if t.lower().endswith(".md") else t


# how deep in lists a text property's [[links]] are read
LINK_NESTING = 3


def property_links(meta: Mapping[str, Any]) -> list[str]:
    """Targets of ``[[links]]`` written in any text property (``up: "[[MOC]]"``)."""
    out: list[str] = []

    def visit(v: Any, depth: int) -> None:
        if isinstance(v, str):
            if "[[" in v:
                out.extend(link_key(x.target) for x in wikilinks(v) if x.target)
        elif isinstance(v, (list, tuple)) and depth < LINK_NESTING:
            for x in v:
                visit(x, depth + 1)

    for v in meta.values():
        visit(v, 0)
    return out


def pick(paths: Iterable[str]) -> str | None:
    """Of the notes one ``[[name]]`` may mean, Obsidian's choice: the
    shortest path, then path order."""
    return min(paths, key=lambda p: (len(p), p), default=None)


# ---------------------------------------------------------------------------
# times and the vault's settings

CREATED_KEYS = ("created", "date", "created_at", "createdAt", "date created", "creation date", "ctime")
UPDATED_KEYS = ("updated", "modified", "updated_at", "last_modified", "lastmod", "date modified", "mtime")


def time_property(meta: Mapping[str, Any], keys: Iterable[str], tz: _dt.tzinfo) -> _dt.datetime | None:
    """The first of ``keys`` that holds a time (a date is midnight in ``tz``)."""
    for k in keys:
        v = meta.get(k)
        if isinstance(v, _dt.datetime):
            return v if v.tzinfo else v.replace(tzinfo=tz)
        if isinstance(v, _dt.date):
            return _dt.datetime(v.year, v.month, v.day, tzinfo=tz)
        if isinstance(v, str):
            try:
                dt = _dt.datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
            except ValueError:
                continue
            return dt if dt.tzinfo else dt.replace(tzinfo=tz)
    return None


def ignore_filters(app_json: Any) -> tuple[str, ...]:
    """``userIgnoreFilters`` of ``.obsidian/app.json`` (parsed), as given."""
    if not isinstance(app_json, dict):
        return ()
    return tuple(f for f in app_json.get("userIgnoreFilters") or () if isinstance(f, str) and f.strip())


def templates_folder(config: Any, key: str = "folder") -> str | None:
    """The templates folder named in ``templates.json`` (``folder``) or
    Templater's settings (``templates_folder``), relative to the root."""
    if not isinstance(config, dict) or not isinstance(config.get(key), str):
        return None
    folder = config[key].replace("\\", "/").strip().strip("/")
    return folder or None


def excluded(rel: str, filters: Iterable[str]) -> bool:
    """Whether Obsidian's *Excluded files* leave ``rel`` out: a filter
    written ``/regex/`` is searched in the path; any other is a path prefix
    (``Archive/``: that folder; ``Archive``: also ``Archive notes.md``)."""
    for f in filters:
        if len(f) > len("//") and f.startswith("/") and f.endswith("/"):
            try:
                if re.search(f[1:-1], rel):
                    return True
            except re.error:
                continue
        elif rel.startswith(f.lstrip("/")):
            return True
    return False


class Names:
    """What ``[[…]]`` may name, kept current with the notes: file names (as
    written and case-folded), aliases and the titles of sediment's own
    memories → ids, and each id's path."""

    def __init__(self) -> None:
        self.exact: dict[str, list[str]] = {}
        self.folded: dict[str, list[str]] = {}
        self.alias: dict[str, list[str]] = {}
        self.title: dict[str, list[str]] = {}
        self.path_of: dict[str, str] = {}

    def _keys(self, name: str, aliases: Iterable[str], title: str | None) -> list[tuple[dict[str, list[str]], str]]:
        return [(self.exact, name), (self.folded, name.casefold()),
                *((self.alias, a) for a in dict.fromkeys(x.casefold() for x in aliases or ())),
                *([(self.title, title.casefold())] if title else [])]

    def add(self, eid: str, rel: str, name: str, aliases: Iterable[str], title: str | None = None) -> None:
        """``title``: a memory's title, which ``[[title]]`` names when no file
        name or alias does (a link written before the memory existed, when
        its name was not known yet); None for a person's note."""
        self.path_of[eid] = rel
        for table, key in self._keys(name, aliases, title):
            table.setdefault(key, []).append(eid)

    def remove(self, eid: str, name: str, aliases: Iterable[str], title: str | None = None) -> None:
        self.path_of.pop(eid, None)
        for table, key in self._keys(name, aliases, title):
            ids = table.get(key)
            if ids and eid in ids:
                ids.remove(eid)
                if not ids:
                    del table[key]

    def candidates(self, target: str) -> list[str]:
        """The ids ``[[target]]`` may mean, in the first way that finds any:
        ``folder/name`` (a path's tail), the file name as written, the file
        name in any case, an alias (in any case), a memory's title (in any
        case). Obsidian then takes the shortest path (``pick``)."""
        return self._found(target)[0]

    def _found(self, target: str) -> tuple[list[str], bool]:
        """``candidates``, and whether they were found by title only."""
        key = link_key(target.split("|", 1)[0].split("#", 1)[0])
        if not key:
            return [], False
        if "/" in key:
            tail = "/" + key.casefold()
            ids = self.folded.get(key.rsplit("/", 1)[-1].casefold(), [])
            return [i for i in ids if ("/" + self.path_of[i][:-3].casefold()).endswith(tail)], False
        named = self.exact.get(key) or self.folded.get(key.casefold()) or self.alias.get(key.casefold())
        return (list(named), False) if named else (list(self.title.get(key.casefold(), ())), True)

    def resolve(self, target: str) -> str | None:
        """The id ``[[target]]`` links to, by Obsidian's rule; None for no
        note, or for a title several memories have (no file name says which)."""
        ids, by_title = self._found(target)
        if not ids or (by_title and len(ids) > 1):
            return None
        best = pick(self.path_of[i] for i in ids)
        return next(i for i in ids if self.path_of[i] == best)
