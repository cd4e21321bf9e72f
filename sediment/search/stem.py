"""A light English stemmer, with what it found remembered: the index's and
a query's Latin words are stemmed alike (``tokenize``). Pure."""

from __future__ import annotations

import re

# letters a stem keeps at least: a word this short is left as it is
STEM_MIN = 3
# stems found so far (words repeat: a cold open stems each of a root's words
# many times); emptied when full
STEMS: dict[str, str] = {}
STEMS_MAX = 200_000


def stem(w: str) -> str:
    """``stem_of``, remembered."""
    got = STEMS.get(w)
    if got is None:
        if len(STEMS) >= STEMS_MAX:
            STEMS.clear()
        got = STEMS[w] = stem_of(w)
    return got


def stem_of(w: str) -> str:
    """A light English stemmer (plural, -ed, -ing, final e): enough for 'painted',
    'paints', 'painting' → 'paint', with no dependency. Non-ASCII words are kept."""
    if len(w) <= STEM_MIN or not w.isascii() or not w.isalpha():
        return w
    if w.endswith(("ies", "ied")) and len(w) > STEM_MIN + 1:  # (ties, died: kept)
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suf in ("ing", "ed"):
        if w.endswith(suf) and len(w) - len(suf) >= STEM_MIN and re.search("[aeiouy]", w[:-len(suf)]):
            w = w[:-len(suf)]
            if len(w) > STEM_MIN and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if len(w) > STEM_MIN and w.endswith("e"):
        w = w[:-1]
    return w
