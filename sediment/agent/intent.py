"""Todos, promises and "done" in what an agent hears and says: plain
patterns, no model. Pure (working memory keeps what these find).

Precision matters more than recall: "I'll" and "明天" are everywhere, and a
working memory filled with every future-tense sentence would push the real
promises out (it holds three). So a sentence counts only when

* it is not a question, and not a condition or a report of the past;
* a todo has an unmistakable trigger (remember to, don't forget, TODO, 别忘了,
  记得 at the start, 提醒我, 答应过 …), or a first-person future (I'll, 我准备,
  我明天 …) *and* a time anchor or an action verb that make it a commitment;
* a "done" is said in the first person or as a bare report (done, sent it,
  做完了, 已经发了), never negated (not done yet, 还没发).

The labelled sentences in ``tests/test_working.py`` measure it.
"""

from __future__ import annotations

import re

from ..model.lexicon import CJK_RUN, MESSAGE_FUNCTION_CHARS, MESSAGE_STOP

# ---------------------------------------------------------------------------
# sentences

_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*|[。！？!?；;]+")
_EN_SPLIT = re.compile(r"(?<=[a-z0-9)\"']\.)\s+(?=[A-Z])")


def sentences(text: str) -> list[str]:
    """The sentences of a message, each with its closing punctuation."""
    out: list[str] = []
    for m in _SENTENCE.finditer(text):
        for s in _EN_SPLIT.split(m.group(0)):
            s = s.strip()
            if s.strip("。！？!?；;.,，、 "):
                out.append(s)
    return out


def _question(s: str) -> bool:
    core = s.rstrip("。.！!；; ")
    return core.endswith(("?", "？", "吗", "么", "呢")) or bool(re.search(r"[吗呢][？?]?$", core))


# ---------------------------------------------------------------------------
# English

_EN_TIME = (r"(?:today|tonight|tomorrow|later(?: today| on)?|this (?:morning|afternoon|evening|week|weekend)|"
            r"next (?:week|month|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
            r"by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|noon|eod|"
            r"end of|the end|\d)|before (?:monday|tuesday|wednesday|thursday|friday|the (?:meeting|call|"
            r"release|deadline|weekend))|after (?:lunch|the (?:meeting|call|standup))|first thing|"
            r"in (?:an?|a few|\d+) (?:hour|minute|day)s?|on (?:monday|tuesday|wednesday|thursday|friday|"
            r"saturday|sunday)|asap|right after)")
_EN_FUTURE = r"(?:i'll|i will|i’ll|i'm going to|i am going to|i need to|i have to|i must|we'll|we will|let me)"
# a future that is a state or a refusal, not a commitment
_EN_NOT_ACT = r"(?:be|never|not|probably not|think about whether|see if|have been)"
_EN_TODO = [
    re.compile(r"\b(?:remember|don't forget|don’t forget|do not forget|remind me|make sure) to\b", re.I),
    re.compile(r"(?:^|\s)(?:todo|to-do)\s*[:：]", re.I),
    re.compile(r"\b(?:i|we) (?:have |had |'ve )?promised\b", re.I),
    re.compile(rf"\b{_EN_FUTURE} (?!{_EN_NOT_ACT}\b)\w+.*\b{_EN_TIME}\b", re.I),
    re.compile(rf"\b{_EN_TIME}\b.*\b{_EN_FUTURE} (?!{_EN_NOT_ACT}\b)\w+", re.I),
]
# said of the past, or only if something else happens
_EN_NOT_TODO = re.compile(r"\b(?:if|unless|would|could|yesterday|last (?:week|time|night)|used to|said i'?d|"
                          r"remember when|forgot to)\b", re.I)

_EN_DONE_VERB = (r"(?:done|finished|sent|fixed|completed|shipped|submitted|merged|booked|paid|called|emailed|"
                 r"replied|deployed|uploaded|pushed|updated|resolved|handled|taken care of|took care of|did|renewed|"
                 r"ordered|signed|filed|reviewed|cancell?ed|scheduled|returned)")
_EN_DONE = [
    re.compile(rf"^\W*(?:ok(?:ay)?[,!.]?\s+|great[,!.]?\s+|so\s+)?(?:all\s+)?{_EN_DONE_VERB}\b", re.I),
    re.compile(rf"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|already\s+|finally\s+)?{_EN_DONE_VERB}\b", re.I),
    re.compile(r"(?:^\W*\w+|\b(?:it|that|this|the \w+))(?:'s| is| was| has been| got)\s+(?:all\s+|now\s+)?"
               r"(?:done|finished|sent|fixed|shipped|merged|deployed|resolved)\b", re.I),
]
_EN_NOT_DONE = re.compile(r"\b(?:not|n't|never|nothing|nobody|none|yet to|when|once|until|if|after|before|will|"
                          r"going to|'ll|need to|have to|should)\b", re.I)

# ---------------------------------------------------------------------------
# Chinese

_ZH_ACT = (r"(?:发|给|把|做|写|改|修|提交|交|打|联系|回复|回|整理|准备|看|查|跟进|安排|买|订|寄|处理|确认|"
           r"更新|补|提醒|还|带|约|问|测|部署|上线|检查|清|备份|汇报|通知|找|签|报名|预约|取|交给|转给|办)")
_ZH_TIME = (r"(?:待会儿?|等会儿?|一会儿|明天|明早|明晚|回头|下周|下午|晚上|晚点|稍后|今晚|"
            r"周[一二三四五六日末]|改天|过两天)")
_ZH_TODO = [
    re.compile(r"(?:别忘了|别忘记|不要忘了|不要忘记|千万别忘|提醒我|待办|TODO)", re.I),
    re.compile(r"^(?:[你您]?(?:要|请|一定要|得)?)记得"),
    re.compile(rf"^(?:{_ZH_TIME}|周[一二三四五六日]|月底|下班)(?:之前|前|以前)?[，, ]?(?:要|一定要|得)?记得"),
    re.compile(r"(?:我|我们|咱们?)(?:已经|之前)?(?:答应过|答应了|承诺过|保证过)"),
    re.compile(rf"(?:我|我们|咱们?)(?:准备|打算|计划|回头|待会儿?|等会儿?|明天|稍后|晚点|下周)(?!好了)"
               rf".{{0,12}}?{_ZH_ACT}"),
    re.compile(rf"{_ZH_TIME}.{{0,4}}(?:我|我们|咱们?)(?:再|去|来|会|要|就|先)?.{{0,8}}?{_ZH_ACT}"),
]
_ZH_NOT_TODO = re.compile(r"(?:昨天|上周|上次|以前|曾经|如果|要是|假如|的话|我记得|还记得|不记得|没答应|"
                          r"他答应|她答应|准备好了)")

_ZH_DONE = [
    re.compile(r"(?:做|弄|搞|改|修|写|发|办|处理|交|提交|寄|回复|打|整理|部署|上线|测|买|订)(?:完|好|定)了"),
    re.compile(r"(?:搞定|完成了|发过了|发出去了|已完成|已发送?|已提交|已处理|已修复|已寄出|已回复|已上线|已部署)"),
    re.compile(rf"已经(?:把.{{0,12}}?)?{_ZH_ACT}"),
]
_ZH_NOT_DONE = re.compile(r"(?:还没|没有?|未|不|别|等.{0,6}(?:完|好)|之后|以后|的时候|如果|要是)")


def _has_cjk(s: str) -> bool:
    return bool(CJK_RUN.search(s))


def is_done(sentence: str) -> bool:
    """Does this sentence say that something is done?"""
    s = sentence.strip()
    if not s or _question(s):
        return False
    if _has_cjk(s):
        return any(p.search(s) for p in _ZH_DONE) and not _ZH_NOT_DONE.search(s)
    return any(p.search(s) for p in _EN_DONE) and not _EN_NOT_DONE.search(s)


def is_todo(sentence: str) -> bool:
    """Does this sentence make a todo or a promise?"""
    s = sentence.strip()
    if not s or _question(s):
        return False
    if _has_cjk(s):
        zh = any(p.search(s) for p in _ZH_TODO) and not _ZH_NOT_TODO.search(s)
        if zh:
            return True
    return any(p.search(s) for p in _EN_TODO) and not _EN_NOT_TODO.search(s)


def recognise(text: str) -> list[tuple[str, str]]:
    """(what, sentence) for each sentence of ``text`` that is a todo or says
    something is done; ``what`` is 'todo' or 'done' (done wins in a sentence
    that has both: "fixed it, I'll deploy tomorrow" reports, it does not ask).

    >>> recognise("别忘了明天给老王发报价单。今天天气不错")
    [('todo', '别忘了明天给老王发报价单。')]
    >>> recognise("Sent the invoice to Wang. What's next?")
    [('done', 'Sent the invoice to Wang.')]
    """
    out = []
    for s in sentences(text):
        if is_done(s):
            out.append(("done", s))
        elif is_todo(s):
            out.append(("todo", s))
    return out


# ---------------------------------------------------------------------------
# which item a message is about

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def terms(text: str) -> set[str]:
    """Words two messages can share: Latin words (not stop words), CJK
    bigrams, and single CJK characters that carry meaning."""
    out: set[str] = set()
    for run in CJK_RUN.findall(text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
        out.update("·" + ch for ch in run if ch not in MESSAGE_FUNCTION_CHARS)
    for w in _WORD.findall(CJK_RUN.sub(" ", text.lower())):
        if len(w) > 1 and w not in MESSAGE_STOP:
            out.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


def overlap(a: set[str], b: set[str]) -> float:
    """How much two term sets share: a bigram or word counts 1, a single CJK
    character 0.3 (it says less)."""
    return sum(0.3 if t.startswith("·") else 1.0 for t in a & b)
