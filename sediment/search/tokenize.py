"""Text → index terms. No I/O except jieba's one-time dictionary cache.

Two kinds of terms, for two retrieval lanes:

* words: jieba words for Chinese (search mode, so '移动端' also yields '移动'),
  lower-cased Latin words and numbers with a light English stemmer; stop words
  and Chinese function words removed;
* bigrams: every pair of adjacent CJK characters, so a 2-character Chinese word
  is found even where jieba cut the sentence differently. A pair of a function
  character ('的', '了', '在', …) and a neighbour is dropped (it would match half
  the corpus) unless jieba cut it as a word there ('现在', '地方', '个人', '对面'
  in search mode, also inside a longer word); a pair of two function characters
  or a stop word ('一个') is always dropped.

Both sides of a match go through ``textnorm.fold`` first (full-width forms,
Traditional characters), and Latin names get their spellings apart and together
('ArgoCD' / 'Argo CD') as extra words.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..model.lexicon import CJK, CJK_RUN, EN_STOP, ZH_FUNCTION_CHARS, ZH_STOP, is_cjk_char
from . import textnorm as TN
from .stem import STEMS as _STEMS, stem as _stem
from .textnorm import fold

# Latin-ish words and numbers; CJK runs; everything else separates.
_TOKEN_RE = re.compile(rf"([{CJK}]+)|([^\W_{CJK}]+(?:['’][^\W_{CJK}]+)*)", re.UNICODE)

_log = logging.getLogger("sediment")
_FUNCTION_RUN = re.compile("[" + "".join(sorted(ZH_FUNCTION_CHARS)) + "]+")  # (CJK: nothing to escape)

# Named in the fingerprint: how a pair with a function character is kept.
BIGRAM_RULE = "a pair with one function character counts once per jieba cut of it; glue and stop words never"

# jieba's HMM guesses words its dictionary lacks (names, new terms). It costs
# about a third of tokenizing time; the bigram lane finds such words anyway.
HMM = True


# characters of a bigram
PAIR = 2


def _rjieba_available() -> bool:
    # found, not imported: importing rjieba loads its dictionary (~75 ms), which
    # a warm open never needs
    import importlib.util
    return importlib.util.find_spec("rjieba") is not None


def default_segmenter() -> str:
    """'rjieba' (jieba-rs: jieba's dictionary and algorithm, ~15× faster, its
    dictionary loads in ~0.05 s) where it can be imported, else 'jieba'. The
    environment variable ``SEDIMENT_SEGMENTER`` (rjieba or jieba) chooses."""
    chosen = os.environ.get("SEDIMENT_SEGMENTER", "").strip().lower()
    if chosen in ("rjieba", "jieba"):
        return chosen if chosen == "jieba" or _rjieba_available() else "jieba"
    return "rjieba" if _rjieba_available() else "jieba"


class Tokenizer:
    """Holds one segmenter for CJK runs, created lazily so that opening a root
    whose tokens are cached never pays its start-up: an ``rjieba.Jieba`` by
    default, or a pure-Python ``jieba.Tokenizer`` (not jieba's global one: it
    would attach its stderr logging and dictionary cache to the whole process).
    The two give the same words for all but a handful of CJK runs in 40,000;
    the index fingerprint names the segmenter, so a switch rebuilds the index
    instead of mixing the two."""

    def __init__(self, cache_dir: Path | None = None, *, segmenter: str | None = None,
                 process_wide: bool = False) -> None:
        self._cache_dir = cache_dir
        self._process_wide = process_wide  # may use rjieba's own default instance
        self.segmenter = segmenter or default_segmenter()
        if self.segmenter not in ("rjieba", "jieba"):
            raise ValueError(f"segmenter must be rjieba or jieba, not {self.segmenter!r}")
        self._seg: Any = None
        self._words: list[tuple[str, int | None]] = []  # add_word calls, replayed on a lazy load
        self._lock = threading.Lock()

    def add_word(self, word: str, freq: int | None = None) -> None:
        """Teach the segmenter a word (a name, a product). Call it before
        opening a root: what was indexed before is not cut again."""
        with self._lock:
            self._words.append((word, freq))
            if self._seg is not None:
                self._teach(self._seg, word, freq)

    def _segment(self, text: str) -> list[str]:
        seg = self._seg or self._load()
        if self.segmenter == "rjieba":
            return [w for w in seg.cut_for_search(text, HMM) if not w.isspace()]
        return [w for w in seg.cut_for_search(text, HMM=HMM) if not w.isspace()]

    def _load(self) -> Any:
        with self._lock:
            if self._seg is None:
                seg = self._load_rjieba() if self.segmenter == "rjieba" else self._jieba_tokenizer()
                for word, freq in self._words:
                    self._teach(seg, word, freq)
                self._seg = seg
        return self._seg

    def _teach(self, seg: Any, word: str, freq: int | None) -> None:
        if self.segmenter == "rjieba":
            seg.add_word(word, freq, None)  # (rjieba's third argument is the tag)
        else:
            seg.add_word(word, freq)

    def _load_rjieba(self) -> Any:
        import rjieba
        # importing rjieba has built its default instance already: the
        # process-wide tokenizer uses it rather than load the dictionary twice
        default = getattr(rjieba, "_DEFAULT_JIEBA", None) if self._process_wide else None
        return default if default is not None else rjieba.Jieba()

    def _jieba_tokenizer(self) -> Any:
        import jieba

        logging.getLogger("jieba").setLevel(logging.WARNING)
        jieba.setLogLevel(logging.WARNING)
        tk = jieba.Tokenizer()
        # jieba's dictionary cache takes ~4 s to build and is the same
        # for every root: keep it in the user's cache folder, else in
        # the root's, never loose in /tmp.
        for cache_dir in (default_cache_dir(), self._cache_dir):
            if cache_dir is None:
                continue
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                if os.access(cache_dir, os.W_OK):
                    tk.tmp_dir = str(cache_dir)
                    break
            except OSError:
                _log.debug("cannot use %s for jieba's cache", cache_dir)
        tk.initialize()
        return tk

    @staticmethod
    def _name_variants(text: str) -> list[str]:
        """A Latin name's other spellings: its pieces (ArgoCD → argo, cd) and
        two adjacent words as one (Argo CD, argo-cd → argocd)."""
        out = []
        for word in TN.compounds(text):
            for part in TN.parts(word):
                p = part.lower()
                if len(p) > 1 and p not in EN_STOP:
                    out.append(_stem(p))
        for a, sep, b in TN.adjacent(text):
            if a.lower() not in EN_STOP and b.lower() not in EN_STOP and TN.joins(a, sep, b):
                out.append(_stem((a + b).lower()))
        return out

    def tag(self, text: str) -> list[tuple[str, str]]:
        """(word, part of speech) of the CJK runs of ``text``, with jieba's tag
        set ('n' noun, 'nr' person, 'ns' place, 'v' verb, …), by the same
        segmenter (and added words) as ``terms``. Not used for indexing: the
        palace map picks its nouns with it."""
        runs = " ".join(CJK_RUN.findall(text))
        if not runs:
            return []
        seg = self._seg or self._load()
        if self.segmenter == "rjieba":
            pairs = seg.tag(runs, HMM)
        else:
            import jieba.posseg
            pairs = [(p.word, p.flag) for p in jieba.posseg.POSTokenizer(seg).cut(runs, HMM=HMM)]
        return [(w, f) for w, f in pairs if not w.isspace()]

    def words(self, text: str, *, hmm: bool = HMM) -> list[str]:
        """The words of ``text`` as jieba cuts them in its precise mode (each
        character once; not the overlapping search mode the index uses), by
        the same segmenter and added words as ``terms``. ``hmm=False`` keeps
        to the dictionary: on a short chat message, HMM glues unknown
        neighbours into a word (纪要发群 of 纪要发群里了)."""
        seg = self._seg or self._load()
        if self.segmenter == "rjieba":
            return [w for w in seg.cut(text, hmm) if not w.isspace()]
        return [w for w in seg.cut(text, HMM=hmm) if not w.isspace()]

    def fingerprint(self) -> str:
        """Changes whenever what this tokenizer produces may change."""
        extra = "|".join(f"{w}:{f}" for w, f in self._words)
        return _fingerprint(HMM, self.segmenter, extra, BIGRAM_RULE, TN.VERSION, TN.table_digest())

    def terms(self, text: str) -> tuple[list[str], list[str]]:
        """(words, bigrams) of ``text``."""
        text = fold(text)
        words: list[str] = []
        cjk_runs = []
        low = text.lower()
        stem = _STEMS.get
        for run, w in _TOKEN_RE.findall(low):  # (the matches' groups made in C)
            if run:
                cjk_runs.append(run)
                continue
            if "’" in w:
                w = w.replace("’", "'")
            if w in EN_STOP:
                continue
            if "'" in w:
                w = w.split("'")[0]
                if w in EN_STOP or not w:
                    continue
            words.append(stem(w) or _stem(w))
        # a name needs a capital, a hyphen or an underscore: most text is let go
        # by these checks in C, before any scan
        if (low != text or "-" in text or "_" in text) and TN.may_have_names(text):
            words += self._name_variants(text)
        bigrams: list[str] = []
        if cjk_runs:
            # one jieba call for all runs (it splits on the spaces itself): the
            # per-call overhead, not the segmentation, dominated mixed text
            multi = [r for r in cjk_runs if len(r) > 1]
            zh = [r for r in cjk_runs if len(r) == 1]
            seg = self._segment(" ".join(multi)) if multi else []
            zh += seg
            fc = ZH_FUNCTION_CHARS
            # the pairs of neighbours neither of which is a function character:
            # those within the pieces between function characters
            for run in multi:
                for piece in _FUNCTION_RUN.split(run):
                    bigrams += [piece[i:i + PAIR] for i in range(len(piece) - 1)]
            # a pair with a function character counts where jieba cut it as a
            # word (现在, 地方, 个人, 对面), once per cut; glue never does
            bigrams += [w for w in seg if len(w) == PAIR and (w[0] in fc) != (w[1] in fc) and w not in ZH_STOP]
            # a word made only of function characters (这是, 对于, 我们) is glue, not content
            glue = _FUNCTION_RUN.fullmatch
            words.extend(w for w in zh if w not in ZH_STOP and w and not glue(w))
        return words, bigrams


@functools.lru_cache(maxsize=8)
def _fingerprint(hmm: bool, segmenter: str = "jieba", words: str = "", *rules: str) -> str:
    """A derived index made with another fingerprint is rebuilt, not trusted."""
    import hashlib
    from .._version import __version__
    parts = [__version__, segmenter, _dist_version(segmenter), str(hmm), " ".join(sorted(EN_STOP)),
             " ".join(sorted(ZH_STOP)), "".join(sorted(ZH_FUNCTION_CHARS)), _TOKEN_RE.pattern, *rules, words]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _dist_version(name: str) -> str:
    """The installed version of the segmenter's package, read from the name of
    its one ``<name>-<version>.dist-info`` folder beside it: a warm open needs
    it for the fingerprint, and ``importlib.metadata`` costs a fresh process
    more to import (~15 ms) than the rest of a small open. Anything less plain
    (an egg, a zip, two dist-infos) asks ``importlib.metadata``."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
        where = spec.submodule_search_locations if spec is not None else None
        if where:  # a package: its dist-info sits in the folder that holds it
            site = os.path.dirname(list(where)[0])
            found = [d for d in os.listdir(site) if d.startswith(name + "-") and d.endswith(".dist-info")]
            if len(found) == 1:
                version = found[0][len(name) + 1:-len(".dist-info")]
                if version and "-" not in version:
                    return version
    except (ImportError, OSError, ValueError):
        pass
    from importlib.metadata import PackageNotFoundError, version as dist_version
    try:
        return dist_version(name)
    except PackageNotFoundError:  # pragma: no cover
        return "?"


_SHARED: Tokenizer | None = None
_SHARED_LOCK = threading.Lock()


def shared(cache_dir: Path | None = None) -> Tokenizer:
    """One tokenizer per process: jieba's dictionary takes ~1 s and tens of MB
    to load, and is the same for every root."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Tokenizer(cache_dir, process_wide=True)
        return _SHARED


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


_LATIN_AT = re.compile(rf"[^\W_{CJK}]+")


@functools.lru_cache(maxsize=1024)
def _hint(stem: str) -> re.Pattern[str]:
    """Where in a text a word may begin that stands for a Latin index term
    whose stem (the term but its last letter) is ``stem``: the stem written
    in any case, whole or with the separator of a name written as two words
    inside it (max_connectio of max_connections; argo cd). Literal
    alternatives, quick to compile (a Unicode class is not: ``_WIDE``), one
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
_WIDE = re.compile(rf"[^\x00-\x7f{CJK}]")


def _letter(c: str) -> bool:
    """``c`` is a character of a Latin-ish word (``_LATIN_AT``: a word
    character of ``re``, which is ``str.isalnum``, but '_' and CJK)."""
    return c.isalnum() and not is_cjk_char(c)


def _candidates(text: str, terms: Iterable[str]) -> list[re.Match[str]]:
    """The words of ``text`` (as ``_LATIN_AT`` finds them) that may stand for
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
        return list(_LATIN_AT.finditer(text))
    starts: set[int] = set()
    low = text.lower()
    if len(low) == len(text):  # (one character for one: its places are the text's)
        hints = [i for x in stems for v in _spellings(x) for i in _places(low, v)]
    else:
        hints = [h.start() for x in stems for h in _hint(x).finditer(text)]
    wide = [] if text.isascii() else [h.start() for h in _WIDE.finditer(text)]
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
    return [m for p in sorted(starts) if (m := _LATIN_AT.match(text, p)) is not None]


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
        nxt = _LATIN_AT.match(text, m.end() + 1)
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


def normalize(text: str) -> str:
    """``textnorm.fold`` (full-width forms, Traditional characters), lower-cased."""
    return fold(text).lower()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sediment"
