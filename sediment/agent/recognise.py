"""People, organisations and places named in a text, found without a model.

Three sources, the first to claim a stretch of text keeping it:

1. the known people (``model.people.Known``): their names and other names,
   the longest winning (张三丰, not 张三), Latin ones as whole words in any
   case; a Chinese name must not cut a word jieba sees (老李明天 is 老李 +
   明天, no 李明; 静静地 is an adverb), and a given name at a sentence start
   before a determiner is the word ("Mark the ticket");
2. Chinese: jieba's part-of-speech tags — ``nr`` a person (老/小 + a surname,
   a bare surname + 总/老师 joined to it), ``ns`` a place, ``nt`` an
   organisation — with the endings that make an organisation (…大学, …公司)
   or a place (…区, …湖), and the companies everybody knows;
3. English (and Latin words in Chinese text): runs of capitalised words,
   without the words that start sentences, products, months and weekdays
   (``gazetteer``), typed by what ends them (Corp, University, Lake, …), by
   the organisations, places and given names everybody knows, and by the
   words around them ("April said", "moving to berlin").

What it finds is a proposal: nothing here writes a note.
``benchmarks/bench_people.py`` measures it on the frozen labelled set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from . import gazetteer as G
from ..model.lexicon import is_cjk_char
from ..model.people import Known

TYPES = ("person", "org", "place")


@dataclass(frozen=True)
class Mention:
    """A name in a text: as written, its type (person, org or place), where
    it stands, and for a known person the name they are filed under."""
    text: str
    type: str
    start: int
    end: int
    entity: str | None = None


@lru_cache(maxsize=1)
def _posseg() -> Any:
    import jieba
    import jieba.posseg
    jieba.setLogLevel(60)  # (its "Building prefix dict" lines are no one's business)
    return jieba.posseg.dt


Token = tuple[int, int, str, str]  # start, end, word, part of speech


def _tokens(text: str) -> list[Token]:
    out, pos = [], 0
    for word, flag in _posseg().cut(text):
        out.append((pos, pos + len(word), word, flag))
        pos += len(word)
    return out


def recognise(text: str, known: Known | None = None) -> list[Mention]:
    """The names in ``text``, left to right (see the module's docstring).

    >>> [(m.text, m.type) for m in recognise("老张和 Alice 在上海见了腾讯的人")]
    [('老张', 'person'), ('Alice', 'person'), ('上海', 'place'), ('腾讯', 'org')]
    """
    if not isinstance(text, str) or not text.strip():
        return []
    tokens = _tokens(text) if any(is_cjk_char(c) for c in text) else []
    found: list[Mention] = []
    taken = bytearray(len(text))

    def claim(m: Mention) -> None:
        if m.end > m.start and not any(taken[m.start:m.end]):
            taken[m.start:m.end] = b"\x01" * (m.end - m.start)
            found.append(m)

    for m in _known(text, known or Known(), tokens):
        claim(m)
    for m in _chinese(text, tokens):
        claim(m)
    for m in _english(text):
        claim(m)
    return sorted((m for m in found if m.type), key=lambda m: m.start)


# --------------------------------------------------------------------------- known people

def _cuts_a_word(tokens: list[Token], start: int, end: int) -> bool:
    """Whether [start, end) cuts a word jieba sees (a name glued to 和/跟 … is not cut)."""
    for s, e, word, flag in tokens:
        if e <= start or s >= end or (start <= s and e <= end):
            continue
        if flag.startswith("nr") and word[0] in G.ZH_GLUE and s + 1 == start and e <= end:
            continue  # 和小王: the glue, then the name
        return True
    return False


def _known(text: str, known: Known, tokens: list[Token]) -> Iterator[Mention]:
    for start, end, who in known.find(text):
        if is_cjk_char(text[start]) and _cuts_a_word(tokens, start, end):
            continue
        if not is_cjk_char(text[start]) and _word_not_name(text, start, end):
            continue
        yield Mention(text[start:end], "person", start, end, who)


def _at_sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'“‘(（[-*")
    return not before or before[-1] in ".!?。！？:：\n;；"


def _next_word(text: str, end: int) -> str:
    m = re.match(r"\s+([A-Za-z']+)", text[end:])
    return m.group(1).lower() if m else ""


def _prev_word(text: str, start: int) -> str:
    m = re.search(r"([A-Za-z']+)\s+$", text[:start])
    return m.group(1).lower() if m else ""


def _word_not_name(text: str, start: int, end: int) -> bool:
    """A given name that is also a word, used as the word ("Mark the ticket", "Will you …")."""
    word = text[start:end].lower()
    if word not in G.WORD_NAMES or not _at_sentence_start(text, start):
        return False
    return _next_word(text, end) in G.DETERMINERS


# --------------------------------------------------------------------------- Chinese

def _scan(text: str, tokens: list[Token], words: frozenset[str], kind: str) -> Iterator[Mention]:
    """Every place a listed word stands in ``text``, longest first (``kind`` "" blocks the
    stretch), where it does not cut a word jieba sees (国家 is not in 国家统计局)."""
    for word in sorted(words, key=len, reverse=True):
        for m in re.finditer(re.escape(word), text):
            if kind != "org" and _cuts_a_word(tokens, m.start(), m.end()):
                continue
            end = m.end() + 2 if kind == "org" and text.startswith(("公司", "集团"), m.end()) else m.end()
            yield Mention(text[m.start():end], kind, m.start(), end)


def _chinese(text: str, tokens: list[Token]) -> Iterator[Mention]:
    yield from _scan(text, tokens, G.ZH_NOT_NAMES, "")  # products and things jieba may take for names
    yield from _scan(text, tokens, G.ZH_ORGS, "org")
    yield from _scan(text, tokens, G.ZH_PLACES, "place")
    for i in range(len(tokens)):
        m = _zh_token(text, tokens, i)
        if m is not None:
            yield m


def _in_dictionary(word: str) -> bool:
    return word in _posseg().word_tag_tab


def _surname(word: str) -> bool:
    return word[0] in G.ZH_SURNAMES or word.startswith(G.ZH_COMPOUND_SURNAMES)


def _zh_token(text: str, tokens: list[Token], i: int) -> Mention | None:
    """The name token ``i`` starts, if any."""
    if not is_cjk_char(tokens[i][2][0]):
        return None
    return _zh_person(text, tokens, i) or _zh_thing(text, tokens, i)


def _zh_person(text: str, tokens: list[Token], i: int) -> Mention | None:  # noqa: PLR0911 - one rule a return
    s, e, word, flag = tokens[i]
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if flag.startswith("nr") and word[0] in G.ZH_GLUE and len(word) >= 3:
        s, word = s + 1, word[1:]  # 和小王: the glue, then the name
    if len(word) == 2 and word[0] in "老小" and word[1] in G.ZH_SURNAMES:
        return Mention(word, "person", s, e)  # 老张, 小王 (jieba's tag varies)
    if (word in G.ZH_SURNAMES or word in G.ZH_COMPOUND_SURNAMES) and nxt and nxt[0] == e:
        if nxt[2] in G.ZH_TITLES and word in G.ZH_SURNAMES:
            return Mention(text[s:nxt[1]], "person", s, nxt[1])  # 张 + 老师
        if nxt[3].startswith("nr") or (not _in_dictionary(nxt[2]) and len(nxt[2]) <= 2 and is_cjk_char(nxt[2][0])):
            return Mention(text[s:nxt[1]], "person", s, nxt[1])  # 林 + 小雨, 司徒 + 静怡
    if len(word) == 1:
        prev = tokens[i - 1] if i else None
        if flag.startswith("nr") and prev and prev[2] in ("老", "小") and prev[1] == s:
            return Mention(text[prev[0]:e], "person", prev[0], e)
        return None
    if nxt and nxt[2] in G.ZH_TITLES and flag[:2] in ("nr", "ns") and _surname(word):
        return Mention(word, "person", s, e)  # 钟南山 + 院士: the name without the title
    before = tokens[i - 1][2] if i else ""
    if word[0] == "张" and before and before[-1] in "了一这那几每两三四五六七八九十":
        return None  # 办了张卡: 张 counts the card
    if flag.startswith("nr") and (flag == "nrt" or _surname(word) or (len(word) == 2 and word[1] in "哥姐")):
        return Mention(word, "person", s, e)
    return None


def _zh_thing(text: str, tokens: list[Token], i: int) -> Mention | None:  # noqa: PLR0911 - one rule a return
    s, e, word, flag = tokens[i]
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if len(word) == 1:
        return None
    guessed = not _in_dictionary(word)  # jieba's HMM made the word: its tag is a guess
    if word.endswith(G.ZH_ORG_ENDS) and len(word) > 2 and (flag in ("nt", "ns", "nz") or guessed):
        return Mention(word, "org", s, e)
    if flag == "ns" and re.search(r"[一二三四五六七八九十\d]中$", word):
        return Mention(word, "org", s, e)  # 北京四中
    if flag == "nt" and not guessed:
        return Mention(word, "org", s, e)
    if flag == "ns" and not guessed:
        if nxt and nxt[2] in G.ZH_ORG_ENDS:
            return Mention(text[s:nxt[1]], "org", s, nxt[1])
        if nxt and nxt[2] in G.ZH_PLACE_ENDS and nxt[3] != "v":
            return Mention(text[s:nxt[1]], "place", s, nxt[1])
        if nxt and nxt[2] == "人":
            return None  # 德国人: a demonym
        return Mention(word, "place", s, e)
    return None


# --------------------------------------------------------------------------- English

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9&]*(?:[-'’][A-Za-z]+)*")


def _words(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _WORD.finditer(text):
        s, e, w = m.start(), m.end(), m.group()
        if re.search(r"['’]s$", w):  # Alice's → Alice
            e, w = e - 2, w[:-2]
        if w.rstrip(".") in G.TITLES and text[e:e + 1] == ".":
            e, w = e + 1, w + "."
        out.append((s, e, w))
    return out


def _capital(w: str) -> bool:
    return w[0].isupper()


def _runs(text: str) -> Iterator[list[tuple[int, int, str]]]:
    """Runs of capitalised words, each next to the one before ('of' may join two)."""
    words, run = _words(text), []  # type: list[tuple[int, int, str]], list[tuple[int, int, str]]
    for i, (s, e, w) in enumerate(words):
        joined = run and text[run[-1][1]:s] == " "
        if _capital(w) and (not run or joined):
            run.append((s, e, w))
        elif (w == "of" and joined and i + 1 < len(words) and _capital(words[i + 1][2])
              and text[e:words[i + 1][0]] == " "):
            run.append((s, e, w))
        else:
            if run:
                yield run
            run = [(s, e, w)] if _capital(w) else []
    if run:
        yield run


def _english(text: str) -> Iterator[Mention]:
    for run in _runs(text):
        yield from _typed_run(text, run)
    for s, e, w in _words(text):  # lower case: a place after "to", "in" …; a given name after "with", "ping" …
        if _capital(w):
            continue
        prev = _prev_word(text, s)
        if w.capitalize() in G.PLACES and w not in G.NOT_NAMES and prev in G.PLACE_CUES_BEFORE:
            yield Mention(w, "place", s, e)
        elif w in G.GIVEN_NAMES and w not in G.WORD_NAMES and w not in G.NOT_NAMES \
                and prev in G.PERSON_CUES_BEFORE:
            yield Mention(w, "person", s, e)


def _keeps_first(text: str, run: list[tuple[int, int, str]]) -> bool:
    """Whether the first word of a run that is also a word stays: "April said",
    "Will Turner" (a given name before a surname that is no given name)."""
    first = run[0][2]
    if first in G.ORGS or first in G.PLACES:
        return True
    if first.lower() in G.NEVER_NAMES:
        return False
    if len(run) == 1:
        return _next_word(text, run[0][1]) in G.PERSON_CUES_AFTER
    second = run[1][2].lower()
    return first.lower() in G.GIVEN_NAMES | G.WORD_NAMES and second not in G.GIVEN_NAMES \
        and second not in G.NOT_NAMES


def _typed_run(text: str, run: list[tuple[int, int, str]]) -> Iterator[Mention]:
    while run and (run[0][2].lower() in G.NOT_NAMES or run[0][2] == "of") and \
            " ".join(w for _, _, w in run).lower() not in G.NOT_NAMES_MULTI and not _keeps_first(text, run):
        run = run[1:]  # a sentence start, a weekday before a name …
    if not run:
        return
    words = [w for _, _, w in run]
    phrase = " ".join(words)
    if phrase.lower() in G.NOT_NAMES_MULTI or any(w.lower() in G.NOT_NAMES for w in words[1:] if w != "of"):
        return
    if len(words) == 1 and words[0] in G.ORGS and _prev_word(text, run[0][0]) in G.PRODUCT_CUES_BEFORE:
        return  # on Google: the product
    if words[0].rstrip(".") in G.TITLES and len(words) > 1:
        if len(words) == 2:  # Dr. Smith: the title makes the surname a name
            yield Mention(text[run[0][0]:run[-1][1]], "person", run[0][0], run[-1][1])
            return
        run, words = run[1:], words[1:]
        phrase = " ".join(words)
    start, end = run[0][0], run[-1][1]
    kind = _kind(text, words, phrase, start, end)
    if kind:
        yield Mention(text[start:end], kind, start, end)


def _kind(text: str, words: list[str], phrase: str, start: int, end: int) -> str | None:
    """The type of a run of capitalised words: by what the lists say, else by the words around it."""
    prev = _prev_word(text, start)
    first = words[0].lower()
    if phrase in G.PLACES and (phrase not in G.ORGS or prev == "the"):
        if first in G.GIVEN_NAMES and prev not in G.PLACE_CUES_BEFORE:
            return "person"  # Jordan said …; in Jordan
        return "place"
    if phrase in G.ORGS or words[-1] in G.ORG_WORDS or words[0] == "Team":
        return "org"
    if words[-1] in G.PLACE_WORDS or words[0] in ("Lake", "Mount", "Mt."):
        return "place"
    return _kind_by_context(text, words, start, end)


def _kind_by_context(text: str, words: list[str], start: int, end: int) -> str | None:
    prev, nxt = _prev_word(text, start), _next_word(text, end)
    first = words[0].lower()
    sentence_start = _at_sentence_start(text, start)
    if first in G.GIVEN_NAMES or (first in G.WORD_NAMES and len(words) > 1):
        if sentence_start and first in G.WORD_NAMES and nxt in G.DETERMINERS:
            return None
        return "person"
    if len(words) >= 2 and not sentence_start:
        return "person"  # two capitalised words mid-sentence, none a product: most often a name
    if first in G.NEVER_NAMES:
        return None
    if nxt in G.PERSON_CUES_AFTER or (not sentence_start and prev in G.PERSON_CUES_BEFORE - {"to", "and"}):
        return "person"  # "April said", "met Okafor"
    if not sentence_start and prev in ("in", "from", "near"):
        return "place"  # in Frankfurt
    return None
