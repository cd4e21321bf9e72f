"""Which open item a "done" closes: the one that names the same things.

A todo and its done seldom share their verbs ("Remember to send the Q4
report tomorrow" → "Q4 report sent"; 我得记得给李四回邮件 → 已经给李四回过邮件了),
and a done often shares a word with another task ("Q4 budget approved",
给王五回过邮件了). So each text is reduced to its **things**:

* English words, lower case and lightly stemmed (books → book, migration
  and migrate → migrat), without stop words, times ("tomorrow", "after
  lunch"), the words of todo talk ("remember", "done") and the verbs of
  doing where they stand as a verb ("send" of "to send the report", every
  "sent"; but "the water bill" keeps its water);
* runs of Chinese words (jieba's dictionary words), cut where a verb of doing,
  a result (完, 好, 出去), a function word, a time (明天, 这个月) or todo talk
  (记得, 已经) stands: 我得记得给李四回邮件 → 李四, 邮件.

Two things match when they are the same, or one ends the other (纪要 of
会议纪要: a Chinese noun's head comes last; cert of certificate: an English
short form is a prefix), 1; when one holds the other elsewhere (银行 in
银行卡), ½; otherwise by the share of character pairs they have in common
(测试服务器 / 生产服务器: ½).

The score of a done against an item is the share of the things of the side
with fewer things that the other side matches (both ways when they have as
many). A done closes the item it scores highest with (on a tie the oldest)
when more than half match: "Q4 report sent" scores 2/2 against "Remember to
send the Q4 report tomorrow", "Q4 budget approved" 1/2. An English done
whose head noun is neither a thing nor the action of the item is about
another task on the same object ("Database backups are done" does not
close "Next I'll migrate the database"). Each clause that reports a done
closes one item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model.lexicon import (CJK_RUN, DOING_EN, DOING_ZH_CHARS, DOING_ZH_WORDS, EN_STOP, MESSAGE_FUNCTION_CHARS,
                             MESSAGE_STOP, RESULTS_ZH, TALK_ZH, ZH_FUNCTION_CHARS, ZH_STOP)
from ..search.tokenize import shared
from . import intent, intent_zh

CLOSES = 0.5  # a done closes an item when more than this share of things match
_PAIR = 2  # characters of a pair
_PREFIX = 4  # letters an English short form keeps at least (cert, cert-ificate)
_STEM_MIN = 3  # letters a stem keeps at least
_HALF = 0.5  # how alike a done's lead thing must be to a thing of the todo

# ---------------------------------------------------------------------------
# English

# times, and the words of todo talk: in nearly every todo and done, about none
_EN_TALK = frozenset("""
today tonight tomorrow yesterday morning afternoon evening night noon midnight week weekend month year day days
hour hours minute minutes later soon asap eod eow am pm monday tuesday wednesday thursday friday saturday sunday
mon tue tues wed thu thur thurs fri sat sun lunch dinner breakfast way first thing next last ago time tmrw
remember remind reminder forget note self todo to-do list promise promised plan planning need needs gonna gotta
going want please pls plz okay sure let still really finally already yep yeah yes lol hey thanks thank done
finished complete completed ready sorted handled care owe will shall set all now around able got gone went
change changes task tasks stuff errand errands chore chores item items job fix status state issue issues problem
problems
""".split())
# words before which a verb of doing stands as a thing ("the water bill")
_DETERMINER = frozenset("the a an my your his her our their its this that these those some any every each no "
                        "one two three new old".split())
_IRREGULAR = {"sent": "send", "paid": "pay", "bought": "buy", "brought": "bring", "took": "take", "taken": "take",
              "got": "get", "gotten": "get", "made": "make", "did": "do", "done": "do", "wrote": "write",
              "written": "write", "gave": "give", "given": "give", "ran": "run", "found": "find", "met": "meet",
              "built": "build", "drove": "drive", "driven": "drive", "sold": "sell", "held": "hold", "fed": "feed",
              "threw": "throw", "thrown": "throw", "told": "tell", "went": "go", "redid": "redo", "redone": "redo"}
_EN_TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_NUMBERISH = re.compile(r"\d+(?:st|nd|rd|th|am|pm|h|m|min)?")
# a time said as a phrase: its noun is no thing of the task ("after the release", "by the end of June")
_EN_WHEN = re.compile(r"\b(?:after|before|until|till|by|once) (?:the |my |our |this |next )?(?:end of (?:the )?)?"
                      r"[a-z0-9]+\b|\bon (?:the|my) way(?: home| back)?\b")


def _stem(w: str) -> str:
    """Enough of an English stemmer to meet a word's other forms."""
    if len(w) <= _STEM_MIN or not w.isalpha():
        return w
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ations", "at"), ("ation", "at"), ("ions", ""),
                         ("ion", ""), ("ments", ""), ("ment", ""), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= _STEM_MIN and not (
                suffix == "s" and w.endswith(("ss", "us", "is"))):
            w = w[:-len(suffix)] + keep
            break
    return w[:-1] if len(w) > _STEM_MIN + 1 and w.endswith("e") else w


_DOING_STEMS = frozenset(_stem(v) for v in DOING_EN)


@dataclass(frozen=True)
class _English:
    """What the English words of a text name: its things (with weights),
    the head of its first noun phrase, and the verbs of doing it uses."""
    things: list[tuple[str, float]]
    head: str | None
    actions: frozenset[str]


def _past(word: str) -> bool:
    return word in _IRREGULAR or (len(word) > _STEM_MIN + 1 and word.endswith("ed") and not word.endswith("eed"))


def _english(text: str) -> _English:
    """The things of the English words of ``text``, each with its weight: a
    verb of doing said as a noun at the end of a noun phrase ("billing
    refactor") names the action rather than a thing, half; before another
    noun ("the water bill") or in the plural ("library books") it is a thing
    like any. A past ("moved", "sent") is never a thing."""
    found: list[tuple[str, bool, int]] = []  # (thing, the action said as a noun?, where)
    actions: set[str] = set()
    after_thing = False  # the word before was a thing: a verb after it is a noun ("library books")
    prev = ""
    for at, tok in enumerate(_EN_TOKEN.findall(_EN_WHEN.sub(" ", text.lower()))):
        word = tok.replace("’", "'").split("'")[0]
        if tok in MESSAGE_STOP or word in EN_STOP or word in _EN_TALK or _NUMBERISH.fullmatch(word):
            prev, after_thing = word, False
            continue
        verb = word in _IRREGULAR or word in DOING_EN or _stem(word) in _DOING_STEMS
        if _past(word) or verb and not (after_thing or prev in _DETERMINER):
            actions.add(_stem(_IRREGULAR.get(word, word)))
            prev, after_thing = word, False
            continue
        # the action said as a noun: one, not several ("invoices", "books" are things)
        found.append((_stem(word), verb and not word.endswith("s"), at))
        prev, after_thing = word, True
    where = {at for _, _, at in found}
    head = None
    if found:  # the last of the first run of things
        at = found[0][2]
        while at + 1 in where:
            at += 1
        head = next(t for t, _, w in found if w == at)
    return _English([(t, 0.5 if action and at + 1 not in where else 1.0) for t, action, at in found],
                    head, frozenset(actions))


# ---------------------------------------------------------------------------
# Chinese

# times and the words of todo talk, taken out before jieba cuts the rest
_ZH_TALK = re.compile(intent_zh.TIME + r"|别忘了|别忘记|不要忘了|不要忘记|千万别忘了?|别让我忘了?|提醒一下我|提醒我|"
                      r"帮我记一下|帮我记着|记一下|先记下|记下来|记得|记的|记着|待办|备忘|准备|打算|计划|必须|需要|"
                      r"一定要|一定|应该|已经|赶紧|终于|刚刚|一下|一个|这个|那个|一些|一遍|答应过|答应|保证过|"
                      r"保证|承诺过|承诺|说好了|好的|嗯+|收到|没问题|搞定|完成|顺路|顺便|ok|"
                      # what a task is about, not what: 部署情况 is 部署, 打印机的问题 is 打印机
                      r"问题|情况|事情|的事", re.I)
# characters that are no thing on their own: function words, results,
# measures, adverbs and prepositions
_GLUE = (set("".join(RESULTS_ZH)) | ZH_FUNCTION_CHARS | MESSAGE_FUNCTION_CHARS
         | set("个件份次遍趟下点些都也还再就先又才已刚跟和与及或被让对向在从为于到之后前里欠"))
_SKIP = ZH_STOP | set(DOING_ZH_WORDS) | set(TALK_ZH)
# a verb of doing as jieba cuts it, with its result: 签好, 发给, 去取, 整理出来 (not 租约, 发票)
_VERB_WORD = re.compile(rf"(?:[去来]?[{DOING_ZH_CHARS}]|{'|'.join(DOING_ZH_WORDS)})"
                        rf"(?:{'|'.join(RESULTS_ZH)}|[了过着])*")
_DOING_ZH = frozenset(DOING_ZH_WORDS)


def _nothing(w: str) -> bool:
    return w in _SKIP or all(c in _GLUE for c in w) or bool(_VERB_WORD.fullmatch(w))


def _zh_things(text: str) -> list[str]:
    """The things of the Chinese runs of ``text``: runs of jieba's words,
    cut at the words that are no thing. A verb of two characters or more
    before a thing is part of it (测试 of 测试服务器), and 的 joins what it
    stands between (房东的消息 is one thing, 房东消息, not 消息)."""
    out: list[str] = []
    for run in CJK_RUN.findall(_ZH_TALK.sub("|", text)):
        words = shared().words(run, hmm=False)
        nothing = [_nothing(w) for w in words]
        thing = ""
        for i, w in enumerate(words):
            before_thing = i + 1 < len(words) and not nothing[i + 1]
            if not nothing[i] or w in _DOING_ZH and before_thing:
                thing += w
            elif not (w == "的" and thing and before_thing):
                if thing:
                    out.append(thing)
                thing = ""
        if thing:
            out.append(thing)
    return out


def _weighed(text: str) -> list[tuple[str, float]]:
    return [(t, 1.0) for t in _zh_things(text)] + _english(text).things


def things(text: str) -> list[str]:
    """The things a todo or a done names (see the module's docstring).

    >>> things("Remember to send the Q4 report tomorrow."), things("我得记得给李四回邮件。")
    (['q4', 'report'], ['李四', '邮件'])
    """
    return [t for t, _ in _weighed(text)]


# ---------------------------------------------------------------------------
# matching

def _pairs(s: str) -> set[str]:
    return {s[i:i + _PAIR] for i in range(len(s) - 1)}


def _alike(a: str, b: str) -> float:
    """How far two things are the same thing (the module's docstring)."""
    if a == b:
        return 1.0
    short, long_ = sorted((a, b), key=len)
    if CJK_RUN.fullmatch(a) and CJK_RUN.fullmatch(b):
        if len(short) < _PAIR:
            return 0.0
        if long_.endswith(short):
            return 1.0
        if short in long_:
            return 0.5
        pa, pb = _pairs(a), _pairs(b)
        return 2 * len(pa & pb) / (len(pa) + len(pb))
    return 1.0 if len(short) >= _PREFIX and long_.startswith(short) else 0.0


def _covered(mine: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> float:
    total = sum(w for _, w in mine)
    return sum(w * max(_alike(a, b) for b, _ in theirs) for a, w in mine) / total


def _lead(done: str) -> str | None:
    """The thing a done is about first: the first of its Chinese things (the
    object comes first: 发票发给玛雅了), else the head of its first English
    noun phrase ("backups" of "Database backups are done")."""
    zh = _zh_things(done)
    return zh[0] if zh else _english(done).head


def _about_another(done: str, todo: str) -> bool:
    """A done whose lead thing is neither a thing nor an action of the todo
    is about another task on the same object: "Database backups are done"
    is not "Next I'll migrate the database" ("Database migration done" is),
    发票发给玛雅了 is not 我得把签好的租约发给玛雅."""
    lead = _lead(done)
    if lead is None:
        return False
    theirs = _english(todo)
    names = [t for t, _ in theirs.things] + list(theirs.actions) + _zh_things(todo)
    return not any(_alike(lead, n) >= _HALF for n in names)


def score(done: str, todo: str) -> float:
    """The share of the things of the side with fewer things (``done`` or
    ``todo``) that the other side names too (by weight); 0 when one names
    none, or when the done is about another task (``_about_another``)."""
    d, t = _weighed(done), _weighed(todo)
    if not d or not t or _about_another(done, todo):
        return 0.0
    if len(d) == len(t):
        return max(_covered(d, t), _covered(t, d))
    return _covered(d, t) if len(d) < len(t) else _covered(t, d)


def _said_alike(done: str, todo: str) -> float:
    """For a done that names no thing ("已经发给他了", "sent it over"): the
    words and character pairs it shares with the todo, verbs and all (the
    rule before things were: 发给他 of 我明天把说明整理好发给他)."""
    return intent.overlap(intent.terms(done), intent.terms(todo))


def closes(sentence: str, todos: list[str]) -> list[int]:
    """The indexes in ``todos`` of the open items this "done" sentence
    closes: for each clause that reports a done (嗯 牛奶买了 鸡蛋也买了 reports
    two), the item it scores best with over ``CLOSES`` (on a tie the first,
    the oldest), each item once. A clause that names no thing closes the
    item it shares most words with (``_said_alike``: at least a word or a
    character pair)."""
    out: list[int] = []
    for done in intent.reported(sentence):
        named = bool(things(done))
        best: tuple[float, int] | None = None
        for i, todo in enumerate(todos):
            s = score(done, todo) if named else _said_alike(done, todo)
            enough = s > CLOSES if named else s >= 1
            if i not in out and enough and (best is None or s > best[0]):
                best = (s, i)
        if best:
            out.append(best[1])
    return out
