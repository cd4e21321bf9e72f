"""Where index terms occur in a text as written: the place a snippet starts
at, and the words a hit shows for the terms it matched. The text is
tokenized as the index does it (``tokenize``), so stemmed and normalised
terms are found in their written forms."""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable, Iterator

from ..model.lexicon import CJK, CJK_RUN, is_cjk_char
from .stem import stem as _stem
from . import textnorm as TN
from .textnorm import fold
from .tokenize import normalize


def find_term(text: str, terms: set[str]) -> int:
    """Where in ``text`` (as written) the first of these index terms occurs, or -1.
    Tokenizes the text the way the index does, so stemmed and normalised terms
    ('study' for 'studies', 'pkce' for 'ＰＫＣＥ') are found too."""
    best = -1
    cjk = [t for t in terms if t and is_cjk_char(t[0])]
    # (a CJK run folds alike alone and in its text: one fold of the text says
    # whether any run holds a term, most often none)
    folded = fold(text) if cjk else ""
    if any(t in folded for t in cjk):
        for m in CJK_RUN.finditer(text):
            run = fold(m.group(0))  # one character for one on a CJK run: positions hold
            at = [i for t in terms if (i := run.find(t)) >= 0]
            if at:
                best = m.start() + min(at)
                break
    for m in _candidates(text, terms):  # (the first Latin word that is one, before the CJK run found)
        if best >= 0 and m.start() > best:
            break
        norm = normalize(m.group(0))
        if norm in terms or _stem(norm) in terms:
            return m.start()
    return best


@functools.cache
def _latin_at() -> re.Pattern[str]:
    # (compiled on first use, as _wide: their CJK classes cost ~2 ms of every
    # fresh process, and only one that shows a hit's words needs them)
    return re.compile(rf"[^\W_{CJK}]+")


@functools.lru_cache(maxsize=1024)
def _hint(stem: str) -> re.Pattern[str]:
    """Where in a text a word may begin that stands for a Latin index term
    whose stem (the term but its last letter) is ``stem``: the stem written
    in any case, whole or with the separator of a name written as two words
    inside it (max_connectio of max_connections; argo cd). Literal
    alternatives, quick to compile (a Unicode class is not: ``_wide``), one
    pattern a stem: a search's hits ask for the same few."""
    alts = [re.escape(stem)] + [re.escape(stem[:i]) + "[-_ ]" + re.escape(stem[i:]) for i in range(1, len(stem))]
    # (a look-ahead: every place, overlapping ones too: the 'm o' of 'vimbompim oauth')
    return re.compile(rf"(?=(?i:{'|'.join(alts)}))")


@functools.lru_cache(maxsize=1024)
def _spellings(stem: str) -> tuple[str, ...]:
    """``_hint``'s alternatives as plain strings, for a lowered text: found by
    ``str.find``, which needs no pattern compiled (~1 ms a stem, most of a
    search's hits' time when every query brings new words)."""
    return (stem, *(stem[:i] + c + stem[i:] for i in range(1, len(stem)) for c in "-_ "))


def _places(text: str, part: str) -> Iterator[int]:
    """Every place ``part`` occurs in ``text``, overlapping ones too."""
    i = text.find(part)
    while i >= 0:
        yield i
        i = text.find(part, i + 1)


# a character of a word that is neither ASCII nor CJK: folded before it is compared
@functools.cache
def _wide() -> re.Pattern[str]:
    return re.compile(rf"[^\x00-\x7f{CJK}]")


def _letter(c: str) -> bool:
    """``c`` is a character of a Latin-ish word (``_latin_at``: a word
    character of ``re``, which is ``str.isalnum``, but '_' and CJK)."""
    return c.isalnum() and not is_cjk_char(c)


def _candidates(text: str, terms: Iterable[str]) -> list[re.Match[str]]:
    """The words of ``text`` (as ``_latin_at`` finds them) that may stand for
    one of the Latin index ``terms``, in order: every word that does, and few
    that do not. A word that does, lowered, holds its term but the last
    letter (a stem is a prefix of its word but for the 'y' of 'ies': studies
    → study; a piece of a compound name is in its word; an ASCII word is
    folded by lowering it), or begins one written as two words (max of
    max_connections), or is written in more than ASCII (folded first, it
    may: then so may the word before it, for the name the two make).
    Normalising and stemming every word of a hit's text, to find its words
    as written and its snippet, was most of a search's time."""
    stems = {t[:-1] for t in terms if t and not is_cjk_char(t[0])}
    if not stems:
        return []
    if "" in stems:  # (a one-letter term: any word may)
        return list(_latin_at().finditer(text))
    starts: set[int] = set()
    low = text.lower()
    if len(low) == len(text):  # (one character for one: its places are the text's)
        hints = [i for x in stems for v in _spellings(x) for i in _places(low, v)]
    else:
        hints = [h.start() for x in stems for h in _hint(x).finditer(text)]
    wide = [] if text.isascii() else [h.start() for h in _wide().finditer(text)]
    for at in hints + wide:
        p = at
        if not _letter(text[p]):
            continue  # (punctuation written full width: no word)
        while p and _letter(text[p - 1]):
            p -= 1
        starts.add(p)
        if text[at].isascii():
            continue
        q = p - 2  # the word before, one character apart
        if q >= 0 and _letter(text[q]) and not _letter(text[q + 1]):
            while q and _letter(text[q - 1]):
                q -= 1
            starts.add(q)
    return [m for p in sorted(starts) if (m := _latin_at().match(text, p)) is not None]


def surfaces(text: str, terms: Iterable[str]) -> dict[str, str]:
    """Index term → the word of ``text`` it stands for, as written there
    ('Databases' for 'databas', '資料庫' for '资料库', 'max_connections' for
    'maxconnection', 'Argo' for the 'argo' of 'ArgoCD'); the first occurrence
    wins, and a term the text does not hold is left out. A term may carry the
    index's '#' of a tag taken whole ('#移动端'): its words are looked for."""
    want: dict[str, list[str]] = {}
    for t in terms:
        if t.lstrip("#"):
            want.setdefault(t.lstrip("#"), []).append(t)
    out: dict[str, str] = {}

    def found(key: str, word: str) -> bool:
        named = want.get(key)
        if named is None or named[0] in out:
            return False
        for term in named:
            out[term] = word
        return True

    cjk = [t for t in want if is_cjk_char(t[0])]
    if cjk:
        _cjk_surfaces(text, cjk, found)
    latin = len(want) - len(cjk)
    if not latin:
        return out
    # Latin words, each with the one after it (two words written as one name)
    for m in _candidates(text, want):
        tok, norm = m.group(0), normalize(m.group(0))
        latin -= found(norm, tok) + found(_stem(norm), tok)
        for part in TN.parts(fold(tok)):  # a piece of a compound name (Argo of ArgoCD)
            latin -= found(_stem(part.lower()), part)
        # the next word, when one character apart (a word ends where letters do)
        nxt = _latin_at().match(text, m.end() + 1)
        if nxt is not None and TN.joins(fold(tok), text[m.end()], fold(nxt.group(0))):  # max_connections, Argo CD
            latin -= found(_stem(normalize(tok + nxt.group(0))), text[m.start():nxt.end()])
        if not latin:
            break
    return out


def _cjk_surfaces(text: str, terms: list[str], found: Callable[[str, str], bool]) -> None:
    """``surfaces`` of CJK terms: found in the folded text (one character for
    one on CJK text; where folding changed the length elsewhere, run by run)."""
    folded = fold(text)
    if folded == text:  # (most text: written as the index spells it)
        for t in terms:
            if t in text:
                found(t, t)
        return
    left = terms
    if len(folded) == len(text):
        left = []
        for t in terms:
            k = folded.find(t)
            if k >= 0 and fold(text[k:k + len(t)]) == t:
                found(t, text[k:k + len(t)])
            elif k >= 0:  # (folding moved it: rare)
                left.append(t)
    if not left:
        return
    for m in CJK_RUN.finditer(text):
        run, rest = fold(m.group(0)), []
        for t in left:
            k = run.find(t)
            if k >= 0:
                found(t, m.group(0)[k:k + len(t)])
            else:
                rest.append(t)
        if not rest:
            return
        left = rest
