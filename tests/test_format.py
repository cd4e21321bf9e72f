"""The file format: golden files, the render/parse round trip, slugs and ids.

A memory file is what a person reads in an editor and what git versions, so its
bytes matter: rendering must be stable (render -> parse -> render identical),
Unicode must be readable as written, times must be quoted ISO 8601 with an offset,
and other tools (python-frontmatter, Obsidian) must read the same fields.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import stat
import unicodedata
from pathlib import Path

import frontmatter
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sediment import Entry, InvalidInput, Repository, parse, render

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_NAMES = sorted(p.stem for p in GOLDEN.glob("*.md"))

# The known fields, in the order the format writes them (README, "The file format").
KNOWN_ORDER = ("id", "title", "created", "updated", "kind", "tags", "value", "weights", "status",
               "source", "source_links", "event", "links", "supersedes", "superseded_by", "reason",
               "unclassified")

ISO_WITH_OFFSET = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d")


def frontmatter_text(text: str) -> str:
    assert text.startswith("---\n")
    return text[4:text.index("\n---\n", 3) + 1]


# --------------------------------------------------------------------------- golden files


def test_golden_files_exist():
    assert {"zh", "en", "mixed"} <= set(GOLDEN_NAMES)
    for name in GOLDEN_NAMES:
        assert (GOLDEN / f"{name}.result.json").exists(), f"{name}.md has no {name}.result.json"


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_parse(name):
    raw = (GOLDEN / f"{name}.md").read_bytes()
    want = json.loads((GOLDEN / f"{name}.result.json").read_text(encoding="utf-8"))
    e = parse(raw, want["path"])

    assert dict(e.meta) == want["meta"]
    assert e.path == want["path"]
    assert (e.layer, e.room, e.name) == (want["layer"], want["room"], want["name"])
    assert e.id == want["id"]
    assert e.title == want["title"]
    assert e.created.isoformat() == want["created"]
    assert e.updated.isoformat() == want["updated"]
    assert e.created.tzinfo is not None and e.updated.tzinfo is not None
    assert e.kind == want["kind"]
    assert list(e.tags) == want["tags"]
    assert e.value == pytest.approx(want["value"])
    assert e.status == want["status"]
    assert e.source == want["source"]
    assert list(e.source_links) == want["source_links"]
    assert e.event == want["event"]
    assert list(e.links) == want["links"]
    assert e.text == want["text"]
    assert dict(e.sections) == want["sections"]


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_render_is_byte_identical(name):
    raw = (GOLDEN / f"{name}.md").read_bytes()
    assert render(parse(raw)).encode("utf-8") == raw


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_readable_by_python_frontmatter(name):
    raw = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    post = frontmatter.loads(raw)
    assert post.metadata == dict(parse(raw).meta)
    assert post.content.strip() == parse(raw).body.strip()


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_file_served_by_a_repository(tmp_path, name):
    """A golden file dropped into a root by hand is read as the same memory and
    is left byte-identical."""
    raw = (GOLDEN / f"{name}.md").read_bytes()
    want = json.loads((GOLDEN / f"{name}.result.json").read_text(encoding="utf-8"))
    target = tmp_path / want["path"]
    target.parent.mkdir(parents=True)
    target.write_bytes(raw)
    repo = Repository(tmp_path)
    e = repo.get(want["id"])
    assert e.path == want["path"] and dict(e.meta) == want["meta"]
    assert repo.get(want["name"]).id == want["id"]  # [[name]] resolves
    assert target.read_bytes() == raw


# --------------------------------------------------------------------------- hypothesis round trip

# Printable text: letters (Latin, CJK, ...), marks, numbers, punctuation, symbols (emoji),
# spaces. PyYAML may legitimately escape control characters; these it must not.
PRINTABLE = st.characters(categories=("L", "M", "N", "P", "S", "Zs"))
CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
EMOJI = st.sampled_from(["🚀", "😀", "🎉", "👍🏽", "❤️", "🧠", "𠮷", "𝒜"])
UNICODE_TEXT = st.lists(st.one_of(PRINTABLE, CJK, EMOJI), max_size=30).map("".join)
NONEMPTY_TEXT = st.lists(st.one_of(PRINTABLE, CJK, EMOJI), min_size=1, max_size=30).map("".join)

OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda m: dt.timezone(dt.timedelta(minutes=m)))
AWARE = st.builds(
    lambda d, tz: d.replace(tzinfo=tz, microsecond=0),
    st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2100, 1, 1)), OFFSETS)
TIME_STR = AWARE.map(lambda d: d.isoformat())

EXTRA_KEY = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda k: k not in KNOWN_ORDER and k != "density")
SCALAR = st.one_of(
    st.text(max_size=20),  # anything, control characters included
    st.integers(min_value=-10**12, max_value=10**12),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)
PLAIN_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(EXTRA_KEY, inner, max_size=3)),
    max_leaves=6,
)
# Bodies: any text. Carriage returns are left out here; they have their own test
# (test_carriage_returns_in_text_survive) so that one failure names one cause.
BODY = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r"), max_size=200)


@st.composite
def memories(draw):
    meta = {
        "id": draw(st.from_regex(r"[0-9A-Z]{26}", fullmatch=True) | NONEMPTY_TEXT.filter(str.strip)),
        "title": draw(UNICODE_TEXT),
        "created": draw(TIME_STR),
        "updated": draw(TIME_STR),
        "kind": draw(st.sampled_from(["core", "rule", "fact", "skill", "event", "inbox"]) | NONEMPTY_TEXT),
        "tags": draw(st.lists(NONEMPTY_TEXT, max_size=5, unique=True)),
        "value": draw(st.floats(min_value=0, max_value=1)),
        "status": draw(st.sampled_from(["active", "superseded", "archived", "purged"])),
        "source": draw(NONEMPTY_TEXT),
        "source_links": draw(st.lists(NONEMPTY_TEXT, max_size=2)),
        "event": draw(NONEMPTY_TEXT),
        "links": [f"[[{x}]]" for x in draw(st.lists(
            NONEMPTY_TEXT.filter(lambda s: "[" not in s and "]" not in s), max_size=3))],
    }
    for key in draw(st.lists(st.sampled_from(list(meta)[4:]), unique=True)):
        del meta[key]  # every optional field may be absent
    if not meta.get("tags"):
        meta.pop("tags", None)
    extras = draw(st.dictionaries(EXTRA_KEY, PLAIN_VALUE, max_size=4))
    meta.update(extras)
    return meta, draw(BODY)


@settings(max_examples=100, deadline=None)
@given(memories())
def test_round_trip_is_byte_identical_and_fields_survive(mem):
    meta, body = mem
    first = render(Entry(meta=meta, body=body))
    back = parse(first.encode("utf-8"))
    assert render(back) == first
    assert dict(back.meta) == meta
    assert back.body == (body if body == "" or body.endswith("\n") else body + "\n")
    # and once more from the bytes of the second render
    assert render(parse(render(back))) == first


@settings(max_examples=200, deadline=None)
@given(title=UNICODE_TEXT, tags=st.lists(NONEMPTY_TEXT, min_size=1, max_size=4, unique=True),
       value=NONEMPTY_TEXT)
def test_unicode_is_written_as_is(title, tags, value):
    meta = {"id": "01JDX4M9Q3", "title": title, "created": "2026-11-20T14:30:00+08:00",
            "tags": tags, "note": value}
    fm = frontmatter_text(render(Entry(meta=meta, body="x\n")))
    for s in (title, value, *tags):
        for ch in s:
            if ord(ch) < 0x80:
                continue
            assert ch in fm, f"{ch!r} (U+{ord(ch):04X}) was not written as-is"
            for esc in (f"\\u{ord(ch):04x}", f"\\U{ord(ch):08x}", f"\\x{ord(ch):02x}"):
                assert esc not in fm.lower(), f"{ch!r} was escaped as {esc}"


@pytest.mark.parametrize("text", ["🚀", "部署 🚀", "𠮷野家", "😀 emoji tag", "𝒜lgebra"])
def test_astral_plane_characters_are_written_as_is(text):
    """Emoji and CJK Extension B characters are outside the Basic Multilingual Plane;
    they too are written as written, not as \\U0001F680."""
    meta = {"id": "X1", "title": text, "created": "2026-11-20T14:30:00+08:00", "tags": [text]}
    out = render(Entry(meta=meta, body="x\n"))
    fm = frontmatter_text(out)
    assert "\\U" not in fm and "\\u" not in fm, fm
    assert fm.count(text) == 2, fm


@settings(max_examples=60, deadline=None)
@given(mem=memories(), data=st.data())
def test_key_order_is_stable(mem, data):
    meta, body = mem
    known = [k for k in meta if k in KNOWN_ORDER]
    extras = [k for k in meta if k not in KNOWN_ORDER]
    shuffled_known = data.draw(st.permutations(known))
    # known keys in any insertion order (and interleaved with the extras) render the same
    reordered = {k: meta[k] for k in (*extras[:1], *shuffled_known, *extras[1:])}
    a = render(Entry(meta=meta, body=body))
    b = render(Entry(meta=reordered, body=body))
    assert a == b
    keys = [line.split(":", 1)[0].strip("'\"") for line in frontmatter_text(a).split("\n")
            if line and not line.startswith((" ", "-"))]
    assert keys == [k for k in KNOWN_ORDER if k in meta] + extras


# --------------------------------------------------------------------------- times


@pytest.mark.parametrize("offset_minutes", [0, 480, -420, 330, 765])
def test_times_are_quoted_iso8601_with_offset(tmp_path, offset_minutes):
    tz = dt.timezone(dt.timedelta(minutes=offset_minutes))
    when = dt.datetime(2026, 11, 20, 14, 30, 5, tzinfo=tz)
    repo = Repository(tmp_path)
    e = repo.add("a note", title="timed", now=when)
    text = (tmp_path / e.path).read_text(encoding="utf-8")
    fm = frontmatter_text(text)
    m = re.search(r"^created: '(.+)'$", fm, re.MULTILINE)
    assert m, fm
    assert ISO_WITH_OFFSET.fullmatch(m.group(1)), m.group(1)
    assert dt.datetime.fromisoformat(m.group(1)) == when
    assert e.created == when and e.created.utcoffset() == when.utcoffset()
    u = re.search(r"^updated: '(.+)'$", fm, re.MULTILINE)
    assert u and ISO_WITH_OFFSET.fullmatch(u.group(1))

    e2 = repo.update(e.id, text="changed")
    fm2 = frontmatter_text((tmp_path / e2.path).read_text(encoding="utf-8"))
    u2 = re.search(r"^updated: '(.+)'$", fm2, re.MULTILINE)
    assert u2 and ISO_WITH_OFFSET.fullmatch(u2.group(1)), fm2
    assert e2.updated.tzinfo is not None


def test_a_naive_time_is_in_the_roots_timezone_and_written_with_its_offset(tmp_path):
    repo = Repository(tmp_path, policy={"timezone": "Asia/Shanghai"})
    e = repo.add("a note", now=dt.datetime(2026, 1, 1, 12, 0))
    created = re.search(r"^created: '(.+)'$", frontmatter_text((tmp_path / e.path).read_text(encoding="utf-8")),
                        re.MULTILINE)
    assert created and created.group(1) == "2026-01-01T12:00:00+08:00"
    with pytest.raises(InvalidInput):
        repo.add("another note", now="noon")


# --------------------------------------------------------------------------- files the library writes


def test_written_file_is_readable_by_python_frontmatter(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("决定：移动端登录用 PKCE，不再下发 client secret。", title="用 PKCE 代替 client secret",
                 room="auth", kind="rule", tags=["auth", "oauth2", "移动端", "🔐"], value=0.8,
                 source="session-2026-11-20", links=["移动端不能保存密钥"], event="auth-flow-choice",
                 source_links=["raw/2026-11-20.md#L10"], weights={"importance": 4},
                 evidence=["移动客户端无法安全保存密钥"], hesitation="旧版 App 还在用 implicit flow")
    written = []
    for step in (lambda: e, lambda: repo.move(e.id, "sediment"),
                 lambda: repo.update(e.id, tags=["auth", "移动端"])):
        entry = step()
        written.append(entry.path)
        text = (tmp_path / entry.path).read_text(encoding="utf-8")
        post = frontmatter.loads(text)
        assert post.metadata == dict(entry.meta)
        assert post.content.strip() == entry.body.strip()
        assert post["title"] == "用 PKCE 代替 client secret"
        assert isinstance(post["created"], str) and ISO_WITH_OFFSET.fullmatch(post["created"])
        assert render(parse(text)) == text


def test_fields_survive_a_reopen(tmp_path):
    # tags YAML would read as other types, as Obsidian accepts them ('C++' or '1.5' are refused)
    tags = ["偏好", "Ünïcödé", "emoji-🎉", "C-sharp", "a_b", "yes", "null", "2026-01-01", "0x1F", "1_000"]
    with Repository(tmp_path) as repo:
        e = repo.add("正文 body\n\nsecond paragraph", title="标题: with colon & 'quotes'", tags=tags,
                     kind="fact", value=0.25, source="s-1", links=["[[别的笔记]]", "other"],
                     custom={"nested": [1, "二", True]}, flag_count=3)
    again = Repository(tmp_path).get(e.id)
    assert dict(again.meta) == dict(e.meta)
    assert again.body == e.body and again.version == e.version
    assert list(again.tags) == tags
    assert again.title == "标题: with colon & 'quotes'"
    assert again.meta["custom"] == {"nested": [1, "二", True]}
    assert list(again.links) == ["别的笔记", "other"]


@pytest.mark.parametrize("text", ["line one\r\nline two", "ends with a carriage return\r",
                                  "mixed\r\nline\nends"])
def test_carriage_returns_in_text_survive(tmp_path, text):
    """Text pasted from a Windows program: what add() returns is what a later reader
    gets, and the file the library wrote is itself stable under render(parse(x))."""
    repo = Repository(tmp_path)
    e = repo.add(text, title="pasted")
    raw = (tmp_path / e.path).read_bytes()
    again = Repository(tmp_path).get(e.id)
    assert again.body == e.body
    assert render(parse(raw)).encode("utf-8") == raw


# --------------------------------------------------------------------------- names and ids


def test_slug_is_readable_and_keeps_chinese(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("x", title="用 PKCE 代替 client secret", room="auth")
    assert e.path == f"shallow/auth/{e.name}.md"
    assert (tmp_path / "shallow" / "auth" / f"{e.name}.md").is_file()
    assert unicodedata.normalize("NFC", e.name) == e.name
    for part in ("用", "pkce", "代替", "client", "secret"):
        assert part in e.name.lower()
    assert not re.search(r"[\s/\\:*?\"<>|%]", e.name), e.name
    assert e.name in {p.stem for p in (tmp_path / "shallow" / "auth").iterdir()}  # not escaped on disk
    assert repo.get(e.name).id == e.id


def test_slug_of_english_title(tmp_path):
    e = Repository(tmp_path).add("x", title="Run DB migrations: before deploy!")
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", e.name), e.name
    assert "migrations" in e.name and "deploy" in e.name


def test_same_title_twice_gives_two_files(tmp_path):
    repo = Repository(tmp_path)
    a = repo.add("first", title="部署流程")
    b = repo.add("second", title="部署流程")
    assert a.id != b.id
    assert a.path != b.path and a.name != b.name
    assert (tmp_path / a.path).read_text(encoding="utf-8").endswith("first\n")
    assert (tmp_path / b.path).read_text(encoding="utf-8").endswith("second\n")
    assert repo.get(a.id).text == "first" and repo.get(b.id).text == "second"
    assert len(list((tmp_path / "shallow").rglob("*.md"))) == 2


def test_names_are_unique_across_the_whole_root(tmp_path):
    """Not only within a folder: [[name]] must point to one memory whatever layer or
    room it sits in."""
    repo = Repository(tmp_path)
    made = [repo.add("a", title="Deploy"),
            repo.add("b", title="Deploy", room="ops"),
            repo.add("c", title="Deploy", layer="bedrock"),
            repo.add("d", title="Deploy", layer="sediment", room="ops/k8s")]
    assert len({e.name for e in made}) == 4
    # names stay unique when memories later move into the same folder
    for e in made:
        repo.move(e.id, "sediment", room="same")
    assert len({p.name for p in (tmp_path / "sediment" / "same").iterdir()}) == 4


@pytest.mark.parametrize("hard_links", [True, False])
def test_a_move_that_changes_no_field_keeps_the_bytes_a_person_formatted(tmp_path, monkeypatch, hard_links):
    """A move that changes no field (no reason given, the status kept) leaves
    the note's bytes as they are: a second name of the same file where the
    file system has hard links, a copy of the bytes where it has none (FAT,
    some network shares), never the note rendered again over a person's
    formatting. Either way it keeps its permissions (a private note stays
    private)."""
    note = tmp_path / "shallow" / "ops" / "deploy.md"
    note.parent.mkdir(parents=True)
    data = (b"---\nid: HAND1\ntitle:   Deploy   # typed by hand\n"
            b"created: '2026-01-01T00:00:00+00:00'\n---\nby hand\n")
    note.write_bytes(data)
    repo = Repository(tmp_path)
    if not hard_links:
        def refused(*a, **k):
            raise OSError(errno.EPERM, "this file system has no hard links")
        monkeypatch.setattr(os, "link", refused)
    os.chmod(note, 0o600)  # a note its person keeps private stays private
    moved = repo.move("HAND1", "sediment")
    assert moved.path == "sediment/ops/deploy.md" and not note.exists()
    assert (tmp_path / moved.path).read_bytes() == data
    if hasattr(os, "fchmod"):
        assert stat.S_IMODE((tmp_path / moved.path).stat().st_mode) == 0o600
    assert repo.get("HAND1").text == "by hand" and repo.check() == []


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="permissions as POSIX has them")
def test_a_move_that_rewrites_a_note_keeps_its_permissions(tmp_path):
    """A move that changes a field (a reason) writes the note anew at its new
    place; a note its person keeps private (0600) stays private there."""
    repo = Repository(tmp_path)
    e = repo.add("a private memory", title="private")
    os.chmod(tmp_path / e.path, 0o600)
    moved = repo.move(e.id, "sediment", reason="promoted")
    assert moved.get("reason") == "promoted"
    assert stat.S_IMODE((tmp_path / moved.path).stat().st_mode) == 0o600


def test_name_of_a_hand_written_file_is_not_reused(tmp_path):
    hand = tmp_path / "bedrock" / "ops" / "deploy.md"
    hand.parent.mkdir(parents=True)
    hand.write_text("---\nid: HAND1\ntitle: Deploy\ncreated: '2026-01-01T00:00:00+00:00'\n---\nby hand\n",
                    encoding="utf-8")
    repo = Repository(tmp_path)
    e = repo.add("by the library", title="Deploy", room="x")
    assert e.name != "deploy"
    assert repo.get("deploy").id == "HAND1"
    assert hand.read_text(encoding="utf-8").endswith("by hand\n")


def test_id_and_name_are_stable_across_update_move_and_reopen(tmp_path):
    with Repository(tmp_path) as repo:
        e = repo.add("v1", title="稳定的名字", room="r")
        u = repo.update(e.id, text="v2", title="A completely different title")
        assert (u.id, u.name, u.path) == (e.id, e.name, e.path)
        m = repo.move(e.id, "bedrock")
        assert (m.id, m.name, m.room) == (e.id, e.name, "r")
        a = repo.archive(e.id, reason="done")
        assert (a.id, a.name) == (e.id, e.name)
    again = Repository(tmp_path).get(e.id)
    assert (again.id, again.name, again.path) == (e.id, e.name, a.path)
    assert again.meta["created"] == e.meta["created"]
    assert again.text == "v2"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.lists(st.one_of(PRINTABLE, CJK, EMOJI), min_size=1, max_size=60).map("".join))
def test_any_title_gives_a_usable_file_name(tmp_path, title):
    assume(title.strip() and "\n" not in title)
    repo = _shared_repo(tmp_path)
    e = repo.add(f"x {title}", title=title)  # (one text per note: a duplicate is not written twice)
    assert (tmp_path / e.path).is_file()
    assert e.path.count("/") == 1 and e.path.startswith("shallow/")
    assert len(e.name.encode("utf-8")) <= 200
    assert not e.name.startswith(".") and e.name.strip() == e.name
    assert e.name.split(".")[0].lower() not in {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                                                *(f"lpt{i}" for i in range(1, 10))}
    assert repo.get(e.id).title == title


_REPOS: dict[Path, Repository] = {}


def _shared_repo(path: Path) -> Repository:
    if path not in _REPOS:
        _REPOS.clear()
        _REPOS[path] = Repository(path)
    return _REPOS[path]



def test_a_field_with_a_yaml_line_break_character_reads_back_the_same():
    """Found by Hypothesis: with a character the C emitter escapes (U+FFFE),
    the pure-Python emitter was used, and it writes NEL (U+0085) raw inside
    quotes, where a reader folds it into a space."""
    meta = {"id": "x", "created": "2000-01-01T00:00:00+00:00", "a": "\ufffe", "b": "\x85"}
    text = render(Entry(meta=meta, body=""))
    assert parse(text).meta["b"] == "\x85" and render(parse(text)) == text
