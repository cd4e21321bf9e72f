"""rjieba's dictionary, a text's words at a time: a short text segmented in a
fresh process without loading all of it.

Importing rjieba builds jieba-rs's dictionary of 349,045 words (~75 ms, ~25 MB)
before it segments anything, more than the rest of a fresh ``sediment search``
together. But jieba's segmentation of a text reads only the dictionary words
that occur in the text (its DAG, the HMM's check of an unknown run, search
mode's 2- and 3-character pieces), each with its frequency, and the
dictionary's total frequency. So an empty ``Jieba`` taught just those words,
plus one word that jieba never reads carrying the rest of the total, cuts the
text exactly as the full one does: the same words, the same route.

The words come from ``data/rjieba-dict.txt``, the dictionary compiled into
rjieba (``tools/make_segdict.py`` extracts it from the installed wheel), read
from a memory map by binary search: nothing is loaded but the pages a look-up
touches. It is used only with the rjieba version it was taken from (its first
line), and only while the look-ups stay cheaper than loading the whole
dictionary would have been (``Tokenizer`` decides when to stop).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import mmap
import os
import sys
import threading
from pathlib import Path
from typing import Any

DICT_PATH = Path(__file__).resolve().parent.parent / "data" / "rjieba-dict.txt"

# the word that holds the rest of the total. jieba reads its dictionary only
# inside the runs it cuts by it (CJK, ASCII letters and digits, "+#&._%-"), so
# a word of control characters is never read, in any text: one word for all
# texts (one swapped for another when a text held it kept its frequency, and
# the total was then the dictionary's and that more)
FILLER = "\x00\x01"

# a look-up's answers
_NO_PREFIX = -1  # no dictionary word starts with this
_PREFIX = 0  # not a word, but some word starts with it


class Dictionary:
    """The sorted ``word frequency`` lines of the file, looked up by binary
    search over the mapped bytes (no offsets table: a probe steps back to the
    start of its line)."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        head: list[bytes] = []
        at = 0
        while self._map[at:at + 1] == b"#":
            end = self._map.find(b"\n", at)
            head.append(self._map[at:end])
            at = end + 1
        self._start = at
        # "# key value" lines; the others are prose
        fields = dict(line.split(b" ", 2)[1:] for line in head if line.count(b" ") == 2)
        self.version = fields.get(b"rjieba", b"").strip().decode()
        self.total = int(fields.get(b"total", b"0"))
        self.longest = int(fields.get(b"longest", b"0"))

    def close(self) -> None:
        self._map.close()

    def find(self, word: str) -> int:
        """The frequency of ``word`` if it is a dictionary word, else
        ``_PREFIX`` if a word starts with it, else ``_NO_PREFIX``."""
        mm, key = self._map, word.encode()
        lo, hi = self._start, len(mm)
        while lo < hi:  # the first line whose word is not below key
            line = mm.rfind(b"\n", lo, (lo + hi) // 2) + 1 or lo  # (the start of the middle's line)
            space = mm.find(b" ", line)
            if mm[line:space] < key:
                lo = mm.find(b"\n", space) + 1
            else:
                hi = line
        if lo >= len(mm):
            return _NO_PREFIX
        space = mm.find(b" ", lo)
        found = mm[lo:space]
        if found == key:
            return int(mm[space + 1:mm.find(b"\n", space)])
        return _PREFIX if found.startswith(key) else _NO_PREFIX


_EXTENSION: list[Any] = []  # rjieba's compiled module, once loaded here
_EXTENSION_LOCK = threading.Lock()


def extension() -> Any:
    """rjieba's compiled module, without its package's ``__init__`` (which
    builds the full dictionary at import): the package's own when it has
    been imported, else loaded here once. Not put in ``sys.modules``: a later
    ``import rjieba`` makes its own, and sets it on the package as Python
    does (loading the extension twice is allowed, and gives one ``Jieba``
    type)."""
    if "rjieba.rjieba" in sys.modules:
        return sys.modules["rjieba.rjieba"]
    with _EXTENSION_LOCK:
        if not _EXTENSION:
            _EXTENSION.append(_load_extension())
    return _EXTENSION[0]


def extension_path() -> str | None:
    """Where rjieba's compiled module is (beside its package's ``__init__``),
    or None without one."""
    spec = importlib.util.find_spec("rjieba")
    for folder in list(spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "rjieba" + suffix)
            if os.path.isfile(path):
                return path
    return None


def _load_extension() -> Any:
    path = extension_path()
    if path is not None:
        loader = importlib.machinery.ExtensionFileLoader("rjieba.rjieba", path)
        spec = importlib.util.spec_from_file_location("rjieba.rjieba", path, loader=loader)
        if spec is not None:
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
    raise ImportError("rjieba's compiled module was not found")


class Partial:
    """A ``Jieba`` that holds only the words of the texts it has been given
    (it keeps them: later texts share most of their words) and cuts them as
    the full dictionary would. ``lookups`` counts the binary searches it has
    made, what its caller weighs against loading the full dictionary."""

    def __init__(self, dictionary: Dictionary, module: Any) -> None:
        self._dict = dictionary
        self._jieba = module.Jieba.empty()
        self._known: dict[str, int] = {}
        self._taught = 0  # the sum of the taught words' frequencies
        self.lookups = 0
        self._lock = threading.Lock()

    def _learn(self, text: str) -> None:
        known, find, longest = self._known, self._dict.find, self._dict.longest
        n = len(text)
        for i in range(n):
            if text[i].isspace():
                continue
            for j in range(i + 1, min(n, i + longest) + 1):
                piece = text[i:j]
                got = known.get(piece)
                if got is None:
                    got = known[piece] = find(piece)
                    self.lookups += 1
                    if got > 0:
                        self._jieba.add_word(piece, got, None)
                        self._taught += got
                if got == _NO_PREFIX:
                    break
        # (add_word on a word it has replaces its frequency in the total; 0
        # when every word has been taught: the filler is never read)
        self._jieba.add_word(FILLER, self._dict.total - self._taught, None)

    def cut_for_search(self, text: str, hmm: bool) -> list[str]:
        with self._lock:  # (one text's words and filler, then its cut)
            self._learn(text)
            return list(self._jieba.cut_for_search(text, hmm))


def partial(installed_version: str) -> Partial | None:
    """A ``Partial`` over the shipped dictionary, or None when the file is
    missing or was taken from another rjieba than the one installed (its
    words could differ: the full dictionary is then the only exact one)."""
    try:
        dictionary = Dictionary(DICT_PATH)
    except (OSError, ValueError):
        return None
    if dictionary.version != installed_version or dictionary.total <= 0 or dictionary.longest <= 0:
        dictionary.close()
        return None
    try:
        module = extension()
    except ImportError:
        dictionary.close()
        return None
    return Partial(dictionary, module)
