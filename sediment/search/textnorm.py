"""What a person may type two ways and mean the same: folded the same way on the
index side and the query side, so each form finds the other. Only index terms
are folded; a note's bytes and the snippet shown are never changed.

* **Width and compatibility forms**: NFKC, so ＡＢＣ１２３ is ABC123, full-width
  punctuation and spaces are the ASCII ones, half-width katakana the full ones.
* **Traditional → Simplified**, one character each (記憶 → 记忆), from OpenCC's
  ``TSCharacters`` table (``data/t2s.txt``, Apache License 2.0; written by
  ``tools/make_t2s.py``, which names the source). Single characters are enough
  for matching: both sides fold alike, so even a character whose Simplified
  form depends on the word (乾隆 / 乾燥) folds to the same term on both sides.
  Traditional text is also cut by jieba's (Simplified) dictionary this way.
* **Latin names written apart or together** (ArgoCD / Argo CD / argo-cd,
  Mate60 / Mate 60): :func:`parts` splits a compound name where its case or
  its number starts, :func:`joins` says when two adjacent words are one name
  written apart; the tokenizer indexes the pieces and the joined form as extra
  words, so any spelling of the name shares a term with any other.

Pure: reads its one data file once, on first use.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from pathlib import Path

from ..model.lexicon import CJK

TABLE_PATH = Path(__file__).resolve().parent.parent / "data" / "t2s.txt"

# Part of the index fingerprint: bump it whenever fold, parts or joins change
# what they produce, so that snapshots made before are rebuilt.
VERSION = "1"


@functools.cache
def _table() -> dict[int, str]:
    pairs = [ln for ln in TABLE_PATH.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    return {ord(p[0]): p[1] for p in pairs}


@functools.cache
def _traditional() -> re.Pattern[str]:
    # a scan for any Traditional character is a C loop over a bitmap: Simplified
    # text, the common case, skips the per-character translate
    return re.compile("[" + "".join(map(chr, _table())) + "]")


# Until this many characters have been folded, text is translated without the
# scan: compiling its class of 2,956 characters costs ~2.5 ms, what translating
# ~50,000 characters does (~47 ns each), and a fresh process that searches once
# folds a question and a few hits' text. A text longer than what is left is
# scanned (translating a million characters costs ~55 ms more than the scan)
SCAN_AFTER = 50_000
_translated = [0]  # (how many so far: a count, not a lock-guarded total)


@functools.cache
def table_digest() -> str:
    return hashlib.sha256(TABLE_PATH.read_bytes()).hexdigest()[:16]


def fold(text: str) -> str:
    """NFKC, then Traditional → Simplified characters; case is kept (the
    tokenizer needs it to see names). Length-preserving on CJK runs, so a
    position found in a folded run is a position in the text as written.

    >>> fold("記憶體 ＡＢＣ１２３，")
    '记忆体 ABC123,'
    """
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    if _translated[0] + len(text) <= SCAN_AFTER:
        _translated[0] += len(text)
        return text.translate(_table())
    return text.translate(_table()) if _traditional().search(text) else text


_SEG = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CAMEL = re.compile(r"[a-z][A-Z]")


def parts(word: str) -> list[str]:
    """The alphabetic pieces of a compound Latin name as written, or [] for a
    plain word. Case boundaries split (ArgoCD → Argo, CD; GitHub → Git, Hub);
    a number splits off only at the end of a capitalised name (Mate60 → Mate),
    so identifiers and hashes (doc12, b4b6e05) stay whole; so does a word
    whose piece would be one letter (OAuth2, iPhone).

    >>> parts("ArgoCD"), parts("HTTPServer"), parts("Mate60"), parts("doc12"), parts("OAuth2")
    (['Argo', 'CD'], ['HTTP', 'Server'], ['Mate'], [], [])
    """
    if not word.isascii() or not word.isalnum():
        return []
    segs = _SEG.findall(word)
    if len(segs) <= 1:  # (one piece: a plain word)
        return []
    digits = [i for i, s in enumerate(segs) if s.isdigit()]
    if len(digits) > 1 or digits and (digits[0] != len(segs) - 1 or not word[0].isupper()):
        return []  # doc12, mp3, b4b6e05 are identifiers; Mate60, COVID19 a name and its number
    if any(len(s) == 1 for s in segs if not s.isdigit()):
        return []  # a one-letter prefix makes another word: OAuth is not auth, iPhone not phone
    return [s for s in segs if not s.isdigit()]


# A Latin-ish word character (what the tokenizer's words are made of), and the
# candidates of the two scans below: a word with an inner capital or a capital
# and a trailing number; two ASCII words with a space, hyphen or underscore
# between them, at least one capital or the separator saying "compound".
_L = rf"[^\W_{CJK}]"


@functools.cache
def _scans() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The two scans, compiled on first use: their Unicode classes take a
    few ms to compile, which a process whose text never gives a hint (a
    search in plain prose) need not pay at import."""
    compound = re.compile(rf"(?<!{_L})(?=[A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Z][a-z]*[0-9]))"
                          rf"[A-Za-z0-9]+(?!{_L})")
    pair = re.compile(rf"(?<!{_L})(?=([A-Za-z][A-Za-z0-9]*)([-_]|\s(?=[A-Za-z0-9]*[A-Z0-9]))([A-Za-z0-9]+)(?!{_L}))")
    return compound, pair


# Cheaper than both scans, and most text has neither (a Chinese note, plain
# prose): only where it finds a hint do the scans run.
_HINT = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Z][a-z]*[0-9]"
                   r"|[A-Za-z0-9][-_][A-Za-z0-9]|[A-Za-z0-9]\s[A-Za-z0-9]*[A-Z0-9]")


def may_have_names(text: str) -> bool:
    """False when neither :func:`compounds` nor :func:`adjacent` can find anything."""
    return _HINT.search(text) is not None


def compounds(text: str) -> list[str]:
    """The words of ``text`` (folded, case kept) that :func:`parts` may split.
    A scan in C: plain prose yields nothing to look at in Python."""
    return _scans()[0].findall(text)


def adjacent(text: str) -> list[tuple[str, str, str]]:
    """(word, separator, word) for the adjacent ASCII words :func:`joins` may
    join, overlapping (Visual Studio Code gives two pairs)."""
    return [(a, sep, b) for a, sep, b in _scans()[1].findall(text) if sep != " " or not a.islower()]


# the digits of a number that may belong to a name (Mate 60, covid-19); a
# longer one (a year, a port) is a quantity of its own
SHORT_NUMBER = 3


def _named(w: str) -> bool:
    return any(c.isupper() for c in w)


def _caps(w: str) -> bool:
    return len(w) > 1 and w.isupper()


def joins(a: str, sep: str, b: str) -> bool:
    """Whether two adjacent Latin words, as written with ``sep`` between them,
    may be one name written apart: joined by a hyphen or underscore (argo-cd,
    covid-19), or by a space when they look like a name — capitals in one
    and all capitals or an inner capital in either (Argo CD, AWS Lambda,
    GitHub Actions), or a name and its short number (Mate 60, iPhone 15).
    Two capitalised words of prose (Hey Mel, Visual Studio) are not joined.

    >>> joins("Argo", " ", "CD"), joins("Mate", " ", "60"), joins("argo", "-", "cd"), joins("Hey", " ", "Mel")
    (True, True, True, False)
    """
    if not (a.isascii() and b.isascii() and a.isalnum() and b.isalnum()) or a.isdigit():
        return False
    if sep in "-_":
        return not b.isdigit() or len(b) <= SHORT_NUMBER
    if sep != " ":
        return False
    if b.isdigit():
        return len(b) <= SHORT_NUMBER and _named(a)
    if _caps(a) or _caps(b):
        return _named(a) and _named(b)
    return bool(_CAMEL.search(a) or _CAMEL.search(b)) and _named(a) and _named(b)
