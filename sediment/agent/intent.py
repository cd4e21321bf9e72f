"""Todos, promises and "done" in what an agent hears and says: plain
patterns, no model, in Chinese (``intent_zh``) and English (``intent_en``).
Pure (working memory keeps what these find; ``closing`` says which open
item a "done" is about).

A message is cut into sentences, and a sentence into clauses (at commas,
dashes, "but", and at the spaces of a run-on Chinese message: 嗯 牛奶买了
鸡蛋也买了). A sentence

* is a **done** when one of its clauses, not a question, reports a finished
  task: "called the plumber, he's coming thursday", "简历改完了，发你看看？";
* else a **todo** when one of its clauses commits the speaker (not a
  question, unless it asks to be reminded: "Can you remind me to …?") and
  nothing in the sentence hedges ("maybe", 有空再…), sets a condition ("if
  it rains", 的话) or speaks of the past ("yesterday", 以前).

Quoted words are mentioned, not said: "the 'done' button", 《明天会更好》.

Recall matters as much as precision: a promise missed is a promise the
agent forgets. Precision still matters (working memory holds three items, a
false one pushes a real one out), so the hard cases are spelled out in the
two language modules: other people's promises, hedges, conditions,
questions, negations, mentions, the past.

Two labelled sets measure it: ``tests/data/intent_dev`` (written for tuning
these patterns) and ``benchmarks/intent`` (frozen, written before them, the
yardstick: ``benchmarks/bench_intent.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..model.lexicon import CJK, CJK_RUN, MESSAGE_FUNCTION_CHARS, MESSAGE_STOP
from . import intent_en, intent_zh

# ---------------------------------------------------------------------------
# sentences and clauses

_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*|[。！？!?；;]+")
_EN_SPLIT = re.compile(r"(?<=[a-z0-9)\"']\.)\s+(?=[A-Z])")
_CLAUSE = re.compile(rf"[,，、;；]|\s+[-–—]+\s+|…+|\.\.\.+|(?<=[{CJK}])\s+(?=[{CJK}])|\s+but\s+", re.I)
# a "sentence" longer than this is pasted text, not something said to an
# assistant; left alone, it would also cost time for nothing
LONGEST = 1000
_QUOTED = re.compile(r"“[^”]*”|「[^」]*」|《[^》]*》|\"[^\"]*\"|‘[^’]*’|(?<![\w])'[^']*'(?![\w])")


def sentences(text: str) -> list[str]:
    """The sentences of a message, each with its closing punctuation."""
    out: list[str] = []
    for m in _SENTENCE.finditer(text):
        for s in _EN_SPLIT.split(m.group(0)):
            s = s.strip()
            if s.strip("。！？!?；;.,，、 "):
                out.append(s)
    return out


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence, quoted words left out (a mention, not a
    thing said); the last keeps the sentence's closing punctuation."""
    said = _QUOTED.sub(" ", sentence)
    return [c.strip() for c in _CLAUSE.split(said) if c.strip(" \t.。!！~～")]


@dataclass(frozen=True)
class _Rules:
    """One language's clause tests."""
    todo: Callable[[str], bool]
    done: Callable[[str], bool]
    question: Callable[[str], bool]
    unsure: Callable[[str], bool]


_EN = _Rules(intent_en.todo, intent_en.done, intent_en.question, intent_en.unsure)
_ZH = _Rules(intent_zh.todo, intent_zh.done, intent_zh.question, intent_zh.unsure)


def _rules(text: str) -> _Rules:
    return _ZH if CJK_RUN.search(text) else _EN


def _done_clauses(parts: list[str]) -> list[str]:
    return [c for c in parts if not _rules(c).question(c) and _rules(c).done(c)]


def classify(sentence: str) -> str | None:
    """'done', 'todo' or None for one sentence (done wins: "fixed it, I'll
    deploy tomorrow" reports, it does not ask).

    >>> classify("好的，我记得明天给张三发周报。"), classify("Q4 report sent."), classify("Did you send it?")
    ('todo', 'done', None)
    """
    if len(sentence) > LONGEST:
        return None
    parts = clauses(sentence)
    if _done_clauses(parts):
        return "done"
    if _rules(sentence).unsure(_QUOTED.sub(" ", sentence)):
        return None
    if any(not _rules(c).question(c) and _rules(c).todo(c) for c in parts):
        return "todo"
    return None


def reported(sentence: str) -> list[str]:
    """The clauses of a sentence that report a done ("called the dentist" and
    not "he's coming thursday"; 牛奶买了 and 鸡蛋也买了)."""
    return _done_clauses(clauses(sentence)) if len(sentence) <= LONGEST else []


def is_done(text: str) -> bool:
    """Does a sentence of this text say that something is done?"""
    return any(classify(s) == "done" for s in sentences(text))


def is_todo(text: str) -> bool:
    """Does a sentence of this text make a todo or a promise?"""
    return any(classify(s) == "todo" for s in sentences(text))


def recognise(text: str) -> list[tuple[str, str]]:
    """(what, sentence) for each sentence of ``text`` that is a todo or says
    something is done; ``what`` is 'todo' or 'done'.

    >>> recognise("别忘了明天给老王发报价单。今天天气不错")
    [('todo', '别忘了明天给老王发报价单。')]
    >>> recognise("Sent the invoice to Wang. What's next?")
    [('done', 'Sent the invoice to Wang.')]
    """
    out = []
    for s in sentences(text):
        what = classify(s)
        if what:
            out.append((what, s))
    return out


# ---------------------------------------------------------------------------
# which item a message is about

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_PLURAL_MIN = 4  # a word longer than this loses a final s ("keys", not "bus")


def terms(text: str) -> set[str]:
    """Words two messages can share: Latin words (not stop words), CJK
    bigrams, and single CJK characters that carry meaning."""
    out: set[str] = set()
    for run in CJK_RUN.findall(text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
        out.update("·" + ch for ch in run if ch not in MESSAGE_FUNCTION_CHARS)
    for w in _WORD.findall(CJK_RUN.sub(" ", text.lower())):
        if len(w) > 1 and w not in MESSAGE_STOP:
            out.add(w[:-1] if len(w) > _PLURAL_MIN and w.endswith("s") else w)
    return out


def overlap(a: set[str], b: set[str]) -> float:
    """How much two term sets share: a bigram or word counts 1, a single CJK
    character 0.3 (it says less)."""
    return sum(0.3 if t.startswith("·") else 1.0 for t in a & b)
