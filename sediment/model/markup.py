"""A note's markdown as a reader sees it rendered, for the short texts shown
about a note (a search hit's snippet, a context item): no heading marks,
list markers, quote marks, emphasis, code ticks or link syntax — each link
shown as its text. Only what is shown changes; the note, and what is indexed,
keep every byte.

Hand-rolled, line by line, rather than a markdown parser: no runtime
dependency parses markdown, a snippet needs the words and not the structure,
and Obsidian's own syntax (wikilinks, embeds, callouts, highlights, ``%%``
comments) is outside CommonMark anyway. What it does not know it leaves as
written.
"""

from __future__ import annotations

import re

_EMBED_OR_LINK = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")


def display_text(body: str) -> str:
    """The body as a reader sees it: each wikilink replaced by the text it
    shows (``[[name|label]]`` → label, ``[[name#part]]`` → name)."""
    def shown(m: re.Match[str]) -> str:
        target, _, label = m.group(1).partition("|")
        return label.strip() or target.split("#")[0].strip()
    return _EMBED_OR_LINK.sub(shown, body) if "[[" in body else body


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?=\s|$)\s*(.*?)(?:\s+#+)?\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:[-*_]\s*){3,}|=+)\s*$")  # a thematic break, a setext underline
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_CALLOUT = re.compile(r"^\[![\w-]+\][+-]?\s*")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX/-]\]\s+)?")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
# A link's text (no bracket inside) is rendered up to SPAN characters long,
# its address up to ADDRESS, a code span up to SPAN; a longer one keeps its
# marks. The bounds keep a line linear: with open-ended spans each unclosed
# mark of a line scanned the rest of it (a 24 KB line of '[a' took 10 s).
SPAN = 300
ADDRESS = 2000
_COMMENTS = (("<!--", "-->"), ("%%", "%%"))
_IMAGE = re.compile(rf"!\[([^\[\]\n]{{0,{SPAN}}}+)\]\([^)\n]{{0,{ADDRESS}}}+\)")
_LINK = re.compile(rf"\[([^\[\]\n]{{1,{SPAN}}}+)\]\([^)\n]{{0,{ADDRESS}}}+\)")
_CODE = re.compile(rf"(?<!`)(`++)(.{{1,{SPAN}}}?)(?<!`)\1(?!`)")  # (a run of ticks opens, the same run closes)
# emphasis, as (opening, closing, width of the mark): the mark hugs its text
# (``* a *`` is no emphasis); an underscore only outside a word
# (max_connections keeps its underscore). Paired by ``_unmark`` in one pass.
_EMPHASIS = tuple((re.compile(o), re.compile(c), w) for o, c, w in (
    (r"\*\*(?=\S)", r"(?<=\S)\*\*", 2),
    (r"~~(?=\S)", r"(?<=\S)~~", 2),
    (r"==(?=\S)", r"(?<=\S)==", 2),
    (r"(?<![\w_])__(?=\S)", r"(?<=\S)__(?![\w_])", 2),
    (r"(?<![\w*])\*(?=[^\s*])", r"(?<=[^\s*])\*(?![\w*])", 1),
    (r"(?<![\w_])_(?=[^\s_])", r"(?<=[^\s_])_(?![\w_])", 1),
))


def plain(markdown: str) -> str:
    """``markdown`` without its markup, line by line (lines are kept: a
    caller joins them as it likes). Wikilinks and embeds become the text they
    show (``display_text``), ``[text](url)`` its text."""
    text = _uncomment(markdown) if ("%%" in markdown or "<!--" in markdown) else markdown
    out = []
    fence = ""  # the fence of the code block we are in
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m and (not fence or m.group(1).startswith(fence)):
            fence = "" if fence else m.group(1)
            continue
        if fence:  # code: as written
            out.append(line)
            continue
        if _RULE.match(line) or _TABLE_RULE.match(line) and "-" in line:
            continue
        m = _HEADING.match(line)
        if m:
            line = m.group(1)
        line = _QUOTE.sub("", line)
        line = _CALLOUT.sub("", line)
        line = _ITEM.sub("", line)
        if line.lstrip().startswith("|"):  # a table row: its cells, apart
            line = " ".join(c.strip() for c in line.strip().strip("|").split("|"))
        out.append(_inline(line))
    return "\n".join(out)


def _uncomment(text: str) -> str:
    """``text`` without its comments (``<!-- … -->``, Obsidian's ``%% … %%``,
    across lines); an opening with no close after it stays as written. One
    pass: where one kind of comment opens or closes no more, it is not looked
    for again (a regex retried each unclosed opening to the end of the text)."""
    parts, pos = [], 0
    kinds = dict(_COMMENTS)
    starts = dict.fromkeys(kinds, -1)  # each kind's next opening (found again once passed)
    while kinds:
        for o in list(kinds):
            if starts[o] < pos:
                starts[o] = text.find(o, pos)
                if starts[o] < 0:
                    del kinds[o]
        if not kinds:
            break
        opening = min(kinds, key=starts.__getitem__)
        k = starts[opening]
        end = text.find(kinds[opening], k + len(opening))
        if end < 0:  # (nor does any later opening of its kind close)
            del kinds[opening]
            continue
        parts.append(text[pos:k])
        pos = end + len(kinds[opening])
    parts.append(text[pos:])
    return "".join(parts)


def _unmark(line: str, opening: re.Pattern[str], closing: re.Pattern[str], width: int) -> str:
    """``line`` with each span between an ``opening`` mark and the first
    ``closing`` one after it (a character at least between) as its text,
    left to right: what ``(mark)(.+?)(mark)`` would do, without retrying each
    unclosed mark to the end of the line."""
    opens = [m.start() for m in opening.finditer(line)]
    if not opens:
        return line
    closes = [m.start() for m in closing.finditer(line)]
    out, pos, j = [], 0, 0
    for p in opens:
        if p < pos:
            continue
        while j < len(closes) and closes[j] <= p + width:
            j += 1
        if j == len(closes):  # (nor does any later mark close)
            break
        c = closes[j]
        out += [line[pos:p], line[p + width:c]]
        pos = c + width
    out.append(line[pos:])
    return "".join(out)


def _inline(line: str) -> str:
    if "`" in line:
        line = _CODE.sub(lambda m: m.group(2).strip(), line)
    if "[" in line:
        line = display_text(line)
        line = _IMAGE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
    if any(c in line for c in "*_~="):
        for opening, closing, width in _EMPHASIS:
            line = _unmark(line, opening, closing, width)
    return line
