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

from .entry import display_text

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?=\s|$)\s*(.*?)(?:\s+#+)?\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:[-*_]\s*){3,}|=+)\s*$")  # a thematic break, a setext underline
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_CALLOUT = re.compile(r"^\[![\w-]+\][+-]?\s*")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX/-]\]\s+)?")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMENT = re.compile(r"<!--.*?-->|%%.*?%%", re.S)
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
_CODE = re.compile(r"(`+)(.+?)\1")
# emphasis: the mark hugs its text (``* a *`` is no emphasis); an underscore
# only outside a word (max_connections keeps its underscore)
_EMPHASIS = (
    re.compile(r"(\*\*|~~|==)(?=\S)(.+?)(?<=\S)\1"),
    re.compile(r"(?<![\w_])(__)(?=\S)(.+?)(?<=\S)__(?![\w_])"),
    re.compile(r"(?<![\w*])(\*)(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"),
    re.compile(r"(?<![\w_])(_)(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"),
)


def plain(markdown: str) -> str:
    """``markdown`` without its markup, line by line (lines are kept: a
    caller joins them as it likes). Wikilinks and embeds become the text they
    show (``entry.display_text``), ``[text](url)`` its text."""
    text = _COMMENT.sub("", markdown) if ("%%" in markdown or "<!--" in markdown) else markdown
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


def _inline(line: str) -> str:
    if "`" in line:
        line = _CODE.sub(lambda m: m.group(2).strip(), line)
    if "[" in line:
        line = display_text(line)
        line = _IMAGE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
    if any(c in line for c in "*_~="):
        for rx in _EMPHASIS:
            line = rx.sub(r"\2", line)
    return line
