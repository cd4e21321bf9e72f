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
from typing import Any

from ..model.lexicon import CJK, CJK_RUN, EN_STOP, ZH_FUNCTION_CHARS, ZH_STOP
from . import segdict, textnorm as TN
from .stem import STEMS as _STEMS, stem as _stem
from .textnorm import fold

# Latin-ish words and numbers; CJK runs; everything else separates.
_TOKEN_RE = re.compile(rf"([{CJK}]+)|([^\W_{CJK}]+(?:['’][^\W_{CJK}]+)*)", re.UNICODE)

_log = logging.getLogger("sediment")
_FUNCTION_RUN = re.compile("[" + "".join(sorted(ZH_FUNCTION_CHARS)) + "]+")  # (CJK: nothing to escape)

# Named in the fingerprint: how a pair with a function character is kept.
BIGRAM_RULE = ("a pair with one function character counts once per jieba cut of it; glue and stop words never; "
               "a run of CJK and a number written together gives its pairs with a digit")
# a number written against CJK text ("1994年", "17号线", "3楼", "版本v2"): the
# pairs with a digit of that run go in the bigram lane as well, so that the
# lane is not blind to the number a Chinese question asks about (the word lane
# alone saw 1994, and the bigram lane's votes for 加盟 outweighed it). Letters
# are left to the word lane (coverage.py: the bigram lane abstains for them)
_DIGIT = re.compile(r"\d")


@functools.cache
def _number_runs() -> re.Pattern[str]:
    # (compiled on first use: its CJK classes cost a fresh process ~2 ms)
    return re.compile(rf"[^\W_]*(?:[{CJK}][^\W_{CJK}]|[^\W_{CJK}][{CJK}])[^\W_]*")  # (CJK meets a letter or digit)

# jieba's HMM guesses words its dictionary lacks (names, new terms). It costs
# about a third of tokenizing time; the bigram lane finds such words anyway.
HMM = True


# characters of a bigram
PAIR = 2

# A short text, in a process that has not loaded rjieba's whole dictionary, is
# cut by a Jieba taught only the text's words (``segdict``: the same cut), for
# up to this many dictionary look-ups in all (~8 µs each: about what loading
# the whole dictionary costs, ~75 ms); a text that would take more, or any text
# after that, loads it. A fresh ``sediment search`` of a Chinese question then
# does not pay for it, nor does a process that only searches a few.
PARTIAL_LOOKUPS = 10_000
# look-ups per character of a text, a bound for the estimate (~2.5 measured on
# CMRC paragraphs: a character and the prefixes starting at it)
LOOKUPS_PER_CHAR = 3


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
        self._partial: segdict.Partial | None | bool = None  # None: not tried; False: not usable
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
        seg = self._seg
        if seg is None:
            part = self._partial_for(text)
            if part is not None:
                return [w for w in part.cut_for_search(text, HMM) if not w.isspace()]
            seg = self._load()
        if self.segmenter == "rjieba":
            return [w for w in seg.cut_for_search(text, HMM) if not w.isspace()]
        return [w for w in seg.cut_for_search(text, HMM=HMM) if not w.isspace()]

    def _partial_for(self, text: str) -> segdict.Partial | None:
        """The partial dictionary for this text, while it is the cheaper way
        (rjieba's, no added words: it would not know them)."""
        if self.segmenter != "rjieba" or self._words:
            return None
        with self._lock:
            if self._partial is None:
                self._partial = segdict.partial(_dist_version("rjieba")) or False
            part = self._partial
        if not isinstance(part, segdict.Partial) or part.lookups + LOOKUPS_PER_CHAR * len(text) > PARTIAL_LOOKUPS:
            return None
        return part

    def load(self) -> None:
        """Load the segmenter's whole dictionary now: for a bulk job (before
        forking workers, which then share its pages), not a question."""
        self._load()

    def _load(self) -> Any:
        with self._lock:
            if self._seg is None:
                seg = self._load_rjieba() if self.segmenter == "rjieba" else self._jieba_tokenizer()
                for word, freq in self._words:
                    self._teach(seg, word, freq)
                self._seg = seg
                self._partial = False  # (its map is let go with it)
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
            for m in _number_runs().finditer(low) if _DIGIT.search(low) else ():
                r = m.group(0)
                bigrams += [p for i in range(len(r) - 1) if (p := r[i:i + PAIR])[0] not in fc and p[1] not in fc
                            and (p[0].isdigit() or p[1].isdigit())]  # (two CJK: the pairs above)
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


def normalize(text: str) -> str:
    """``textnorm.fold`` (full-width forms, Traditional characters), lower-cased."""
    return fold(text).lower()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sediment"
