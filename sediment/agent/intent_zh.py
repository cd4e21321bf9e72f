"""Chinese clauses: does one make a todo or a promise, or report that a task
is done? Plain patterns over the characters; ``intent`` cuts messages into
clauses and weighs them.

A **todo** is the speaker's own commitment, so a clause counts when

* it asks to be reminded (别忘了, 记得 as "remember to", 提醒我, 帮我记一下,
  先记下, 待办：), even as a question (你能提醒我…吗);
* or the speaker (我, 我们, 咱们 as the subject, not 帮我 / 我妈) says a
  settled future, an obligation or a promise (我会, 我要, 我得, 我准备, 我打算,
  我来, 回头我, 我答应过) and an action follows (a verb, 把, 去, 一下);
* or it opens, with no subject, with an obligation or a time to come and an
  action: 得交水费了, 周末必须把车库收拾出来, 下班顺路去取个快递.

What someone else will do (小王答应…), a state (我明天休息), a refusal
(我不打算续了) and, over the whole sentence, a hedge (也许, 有空再…), a
condition (如果, 的话) or the past (昨天, 以前) is not. 等…了我就… is a
sequence, not a condition.

A **done** reports a finished task: a verb of doing with a result and 了
(合同发了, 报告写完了, 给牙医打过电话了), 已经 / 已 and a verb (已提交, PR 已经
拆好了), 完成 / 搞定, a check mark — whoever did it, but never negated (还没,
没), planned (要, 得, 明天), almost (快…了) or a step in a sequence (到家了我就…).
"""

from __future__ import annotations

import functools
import re

from ..model.lexicon import CJK, DOING_ZH_CHARS, DOING_ZH_WORDS, RESULTS_ZH, TALK_ZH

_FILLER = re.compile(r"^(?:好的|好嘞|好吧|好滴|得嘞|好|嗯+|哦+|噢|啊对|啊|对|行|收到|没问题|可以|ok|okay|"
                     r"那|哈哈+|呃|额|诶|欸|唉|哎|妥|对了)(?!\s*了)[，,。.!！~～、\s]*", re.I)
_CHECK = re.compile(r"[✅✔☑✓]")


_SYMBOL = re.compile(r"[^\w\s，,。.!！?？：:、~～《》“”\"'‘’]")


@functools.lru_cache(maxsize=256)
def normalise(clause: str) -> str:
    """The clause without leading fillers (好的, 嗯嗯, ok) and emoji."""
    s = _SYMBOL.sub("", clause).strip()
    while True:
        t = _FILLER.sub("", s, count=1)
        if t == s:
            return s
        s = t


# ---------------------------------------------------------------------------
# words

TIME = (r"(?:待会儿?|等会儿?|等一下|等下|一会儿?|回头|晚点|稍后|明天|明早|明晚|后天|今天|今晚|今早|早上|上午|中午|"
         r"下午|晚上|夜里|下班|下班后|午饭后|饭后|睡前|周末|下周[一二三四五六日天末]?|这周[一二三四五六日天末]?|"
         r"本周[一二三四五六日天末]?|下个?星期[一二三四五六日天]?|星期[一二三四五六日天]|礼拜[一二三四五六日天]|"
         r"周[一二三四五六日末]|月底|月初|年底|下个月|这个月|本月|下次|过两天|过几天|马上|立刻|这就|尽快|"
         r"下一步|接下来|然后|之后|一小时后|[0-9一二三四五六七八九十两]+\s*(?:号|日|点|点半|月)|"
         r"这周之内|今年|明年)(?:之前|之内|以前|前|后|以后)?")
_FUTURE = re.compile(r"待会|等会|等一下|等下|一会|回头|晚点|稍后|明天|明早|明晚|后天|下周|下个月|下次|改天|"
                     r"过两天|过几天|今晚")
_V1 = DOING_ZH_CHARS
_V1R = "对过"  # verbs that report a task only with a result: 对完了, 过完一遍了 (not 对了, 过了)
_V2 = "|".join(DOING_ZH_WORDS)
_VERB = rf"(?:{_V2}|[{_V1}]|[A-Za-z][A-Za-z0-9-]*|[{_V1R}](?=完|好))"
_RESULT = "(?:" + "|".join(RESULTS_ZH) + ")"
_ACTION = re.compile(rf"{_V2}|[{_V1}]|{'|'.join(TALK_ZH)}|把|一下|[A-Za-z]{{2,}}")

# ---------------------------------------------------------------------------
# questions

_ASK = re.compile(r"(?:吗|么|嘛|呢|没|没有|不|了没|好没|对吧|是吧)[?？!！。.\s]*$|[?？]\s*$|是不是|有没有|要不要|"
                  r"会不会|能不能|可不可以|行不行|好不好|什么|啥|谁|哪|几点|几号|多少|怎么|为什么|咋|何时|多久|"
                  rf"([{CJK}])没\1")
_REQUEST = re.compile(r"提醒我|提醒一下我|帮我记|记得提醒")


def question(clause: str) -> bool:
    """Does the clause ask (合同发了吗, 那个 bug 你修好了没, 要不要…)? A request
    to be reminded is not one (你能提醒我…吗)."""
    s = normalise(clause)
    return not _REQUEST.search(s) and bool(_ASK.search(s))


# ---------------------------------------------------------------------------
# todo

_REMIND = re.compile(r"别忘了|别忘记|不要忘了|不要忘记|千万别忘|别让我忘|提醒我|提醒一下我|帮我记|记一下|记下来|"
                     r"先记下|备忘|待办\s*[：:]|加[到进入].{0,12}待办|todo\s*[：:]?", re.I)
_REMEMBER = re.compile(r"(?P<before>.?)(?:记得|记的|记着|记住)(?P<after>.{0,10})")
# what follows 记得 when it recalls rather than reminds
_RECALL = re.compile(r"^(?:[他她它你]|那|上次|上周|以前|当时|那天|那时|小时候|曾|好像|是|我们.{0,6}那)|过|吗|么|呢")
# 我 as the subject: not an object (帮我, 给我, 提醒我) and not someone of mine (我姐, 我们公司)
_SELF = (r"(?<![帮给跟让叫替和对陪诉醒问找带教请被同与向催等])(?:我们|咱们|我|咱)"
         r"(?![们姐妈爸哥弟妹老婆公媳女男儿子孩家朋同板领导经室邻爷奶外姥司团部组])")
_PROMISE = re.compile(rf"{_SELF}[^，,。]{{0,8}}?(?<![没不])(?:答应|保证|承诺|说好|发誓)|{_SELF}还?欠|"
                      r"包在我身上|交给我吧?$|我来(?!自|了|过|到|啦|的)")
_MARK = (r"(?:会|要|(?<![记觉获值懂显晓舍免])得(?!了|到)|准备|打算|计划|必须|一定|需要|来|去|负责|争取|尽快|马上|"
         r"这就|立刻|赶紧|先|再|就|"
         r"回头|待会儿?|等会儿?|等下|晚点|稍后|明天|明早|明晚|今晚|下午|晚上|周末|下周|这周|" + TIME + ")")
_COMMIT = re.compile(rf"{_SELF}[^，,。]{{0,10}}?{_MARK}(?P<rest>.*)")
# 我把报告写完, 我重构一下计费模块: a plan said in the present (not 我把钥匙弄丢了)
_PRESENT = re.compile(rf"{_SELF}(?:{TIME}\s*)*(?P<rest>(?:把|.{{1,6}}一下)[^了]*)$")
_BARE = re.compile(rf"^(?:{TIME}\s*)*(?:顺路|顺便|赶紧|先|再|就|还|也|一定)*"
                   rf"(?:得(?!了|到)|必须|一定要|要记得|需要|该|去|把|还得)(?P<rest>.*)")
_TIMED = re.compile(rf"^(?:(?:{_FUTURE.pattern})\S{{0,3}}?\s*)+(?:顺路|顺便|赶紧|先|再|就|去|来)*(?P<rest>[^了]*)$")
_HEDGE = re.compile(r"也许|可能|大概|或许|说不定|估计|不一定|不确定|看情况|再说|有空|有时间|有机会|改天|哪天|"
                    r"以后再|考虑|想想|随缘|不知道|没想好|到时候再|要不要|有一天|总有一天")
_CONDITION = re.compile(r"如果|要是|假如|万一|的话|只要|除非|假设|倘若|若是")
_PAST = re.compile(r"昨天|前天|上周|上个月|去年|曾经|当时|那时|上次|本来|原本|小时候|"
                   r"(?<![一二三四五六日天末底号点周])以前|准备了|打算过(?![两几]天)")
_REFUSE = re.compile(r"(?:不|没|别|甭)(?!然|错|过|少|久|管|忘|要忘|让我忘|停|论|仅|但|如)")
_ORDER = re.compile(r"要(?:一|两|几)[杯个份碗瓶张]")


def _reminds(s: str) -> bool:
    if _REMIND.search(s):
        return True
    for m in _REMEMBER.finditer(s):
        if m.group("before") in ("还", "不", "没") or _RECALL.search(m.group("after")):
            continue
        return True
    return False


def _acts(rest: str | None) -> bool:
    return rest is not None and bool(_ACTION.search(rest))


def todo(clause: str) -> bool:
    """Does this clause (not a question) make a todo or a promise of the
    speaker's? Hedges, conditions and the past are the sentence's business
    (``unsure``)."""
    s = normalise(clause)
    if _reminds(s):
        return True
    if _PROMISE.search(s):
        return True
    if _REFUSE.search(s) or _ORDER.search(s):
        return False
    for p in (_COMMIT, _PRESENT, _BARE, _TIMED):
        m = p.search(s)
        if m and _acts(m.group("rest")):
            return True
    return False


def unsure(sentence: str) -> bool:
    """Does the sentence make a would-be promise uncertain (也许, 有空再…),
    conditional (如果, 的话) or past (昨天, 以前)? A request to be reminded is
    held back by a condition only (its past words are about the task:
    记得把昨天的发票寄了), a promise made earlier by a condition, a hedge
    or the past (以前我答应过她，但没做到)."""
    s = normalise(sentence)
    if _reminds(s):
        return bool(_CONDITION.search(s))
    return bool(_HEDGE.search(s) or _CONDITION.search(s) or _PAST.search(s))


# ---------------------------------------------------------------------------
# done

_DONE = [
    re.compile(rf"{_VERB}\s*{_RESULT}*\s*了|{_VERB}{_RESULT}+.{{0,8}}?了|{_VERB}\s*[在到进给].{{1,8}}?了|"
               rf"{_VERB}[你我他她]们?了|把[^，,。]{{1,16}}了|刚.{{0,2}}{_VERB}{_RESULT}|"
               # where it went: 照片传群里了, 钥匙放门口鞋柜上了
               rf"{_VERB}[^，,。了]{{1,6}}?[里上内中边口]了"),
    re.compile(r"(?:完成|搞定|弄好|办妥|完事|完毕|ok\s*了|done|收工)(?!的)", re.I),
    re.compile(rf"已经?(?:都|全|把.{{0,12}}?|给.{{0,8}}?)?(?>{_VERB})(?!的|文件夹|列表|箱|栏|状态|按钮|标签)"),
]
_NOT_DONE = re.compile(r"还没|没有|没来得及|来不及|没|未|(?<!差)不(?!错|过|少|久)|别|忘了|忘记|差不多|"
                       r"快(?!递|乐|速|餐|捷|照|手).{0,4}了|"
                       r"[一二三四五六日天末底号点]前|之前(?!就|已)|"
                       r"正在|还在|一半|^等|了.{0,8}就|完.{0,8}就|之后|以后|的时候|每天|每周|每次|经常|总是|通常|"
                       r"一般|以前")
# a modal before the verb makes it a plan (我得把发票报销了): at the start, or after a subject or an adverb
_PLANNED = re.compile(r"(?:^|[我你他她们咱就也还都再先一定，,\s])(?:要(?![求点素闻是])|会(?![议计员场所话长])|"
                      r"得(?![很挺不好到了])|必须|准备|打算|计划|需要|该|想(?!法))|记得|提醒|[我们咱][来去]$")
_ACK = re.compile(r"^(?:知道了|明白了|懂了|收到了?|好了|行了|算了|对了|完了|太好了|晕了|累了|好的了)$")


def done(clause: str) -> bool:
    """Does this clause (not a question) report that a task is done?"""
    s = normalise(clause)
    if _CHECK.search(clause) and not _NOT_DONE.search(s):
        return True
    if not s or _ACK.match(s.rstrip("。.!！~～ ")) or _NOT_DONE.search(s) or _FUTURE.search(s):
        return False
    for p in _DONE:
        m = p.search(s)
        if m and not _PLANNED.search(s[:m.start()]):
            return True
    return False
