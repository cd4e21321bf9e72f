"""The words and characters the library reads text with, in one place: stop
words, generic words, function characters, and what counts as a CJK
character. Pure data and two small tests of a character; imports nothing of
the package, so anything may read it.

Three kinds of word lists, each for its own question, and kept apart on
purpose (each list's comment says why it is not one of the others):

* the index's stop words and function characters (``EN_STOP``, ``ZH_STOP``,
  ``ZH_FUNCTION_CHARS``): terms that never become index terms. They are part
  of the index fingerprint (``search/tokenize.py``): changing one rebuilds
  every index, and changes every retrieval figure;
* generic words (``GENERIC_EN``, ``GENERIC_ZH``): real words, indexed and
  searchable, but too common in memories to say two memories are about the
  same thing (a conflict's anchor, a place on the palace map);
* the words of a chat message that say nothing about *which* todo it is about
  (``MESSAGE_STOP``, ``MESSAGE_FUNCTION_CHARS``): what working memory's
  matcher (``agent/intent.py``) drops before comparing a message with the open
  items;
* the verbs of doing (``DOING_EN``, ``DOING_ZH_CHARS``, ``DOING_ZH_WORDS``,
  ``RESULTS_ZH``): what a todo or a "done" does to its things. The Chinese
  recogniser (``agent/intent_zh.py``) reads a task in them, and the closer
  (``agent/closing.py``) leaves them out, so that "sent" and "send", 发了 and
  发 do not stand between a done and its todo, nor make two tasks that share
  only a verb look alike.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- characters

# The CJK ideographs: the unified ones, extension A, and the compatibility
# ideographs (which NFKC folds into the unified ones). What the tokenizer cuts
# as Chinese, and what the rest of the library means by "a CJK character".
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RUN = re.compile(f"[{CJK}]+")
# (the ranges as numbers: a class this wide costs a fresh process ~1.5 ms to compile)
(_EXT_A, _EXT_A_END), (_UNIFIED, _UNIFIED_END), (_COMPAT, _COMPAT_END) = (
    (ord(CJK[i]), ord(CJK[i + 2])) for i in range(0, len(CJK), 3))

# Characters a model's tokenizer spends about one token on: the ideographs and
# the rest of what East Asian text is written with (CJK punctuation and
# spaces, kana, Hangul, full-width forms). Wider than ``CJK`` because it
# answers another question: how long a text is for a model (a context block's
# size), not which characters are Chinese words.
TOKEN_WIDE = CJK + "\u3000-\u303f\u3040-\u30ff\uac00-\ud7af\uff00-\uffef"


def is_cjk_char(ch: str) -> bool:
    """Whether ``ch`` is one CJK ideograph (``CJK``).

    >>> is_cjk_char("记"), is_cjk_char("a"), is_cjk_char("。")
    (True, False, False)
    """
    if len(ch) != 1:
        return False
    code = ord(ch)
    return _UNIFIED <= code <= _UNIFIED_END or _EXT_A <= code <= _EXT_A_END or _COMPAT <= code <= _COMPAT_END


# --------------------------------------------------------------------------- the index's

# English stop words, lower-cased as the tokenizer sees them (with the pieces
# an apostrophe leaves: s, t, d, ll, m, re, ve).
EN_STOP = frozenset("""
a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
not of off on once only or other ought our ours ourselves out over own same shan't she she'd
she'll she's should shouldn't so some such than that that's the their theirs them themselves
then there there's these they they'd they'll they're they've this those through to too under
until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
you've your yours yourself yourselves also just s t d ll m re ve
""".split())

# Function characters: particles, pronouns and copulas that glue sentences
# together. A bigram with one of them is kept only where jieba cut it as a
# word; a word made only of them is glue (``search/tokenize.py``).
ZH_FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊呀着过地得之乎也么嘛哦哈是在和与及或就都而且但并被把给让向从对于这那其此个们我你他她它")

# Chinese stop words: the function characters as words, and the common
# pronouns, question words, conjunctions and auxiliaries.
ZH_STOP = frozenset("""
的 了 吗 呢 吧 啊 呀 着 过 地 得 之 也 么 嘛 哦 是 在 和 与 及 或 就 都 而 且 但 并 被 把 给 让 向 从 对 于
这 那 其 此 个 们 我 你 他 她 它 我们 你们 他们 她们 它们 这个 那个 这些 那些 什么 怎么 如何 为什么
哪 哪里 哪个 一个 一些 没有 不是 就是 还是 可以 因为 所以 如果 但是 而且 以及 还有 已经 这样 那样 自己
有 会 要 能 说 让 又 再 很 太 更 最 被 吧 呢 么 是不是 不是 是否 怎样 哪些 谁 吗
""".split())

# --------------------------------------------------------------------------- generic words

# Words too common in memories to anchor anything, whatever their document
# frequency in one root (a root of 10 memories makes every word rare). Not
# stop words: a search for "project" must still find the memories that say it.
GENERIC_EN = frozenset("""
user users person people thing things stuff way time times day days today yesterday tomorrow week
month year like likes liked want wants need needs use used uses using make made get got go goes
going think thought know knew say said see saw look good bad better best new old great nice
much many lot lots really always usually often sometimes maybe probably also still now then
work works working project note notes memory memories idea ideas plan plans prefer prefers
something anything everything nothing someone anyone everyone thing one two first last next
""".split())
GENERIC_ZH = frozenset("""
用户 喜欢 使用 需要 觉得 认为 时候 今天 明天 昨天 事情 东西 问题 可能 现在 知道 应该 一直 经常
有时 总是 比较 非常 时间 地方 方面 情况 工作 项目 记录 记忆 想法 计划 打算 希望 开始 结束 进行
一下 一起 然后 这里 那里 大家 人们 别人 我们 他们 目前 最近 之前 之后 以后 以前
""".split())

# --------------------------------------------------------------------------- chat messages

# What two messages about todos share without naming the same item: a short
# English stop list (all of it in ``EN_STOP``), and the words of todo talk
# itself ("remember", "sent", "tomorrow", "ok"), which are in nearly every
# message the matcher compares. Not ``EN_STOP``: that list keeps words such as
# "done" and "today" searchable, and its longer tail was never measured here
# (``tests/test_working.py`` measures this one).
MESSAGE_STOP = frozenset("""a an the to of and or in on at for with by from it its is are was were be been i me my we
our you your he she they them this that these those will would shall should can could do does did done
have has had not no yes just already also so then than but if as up out about into over after before
again all any some more most very too please ok okay now today tomorrow later tonight remember forget
don't dont i'll ill let sent fixed finished""".split())

# The characters of a Chinese message that say nothing about which item it is
# about: glue, and the verbs and adverbs of todo talk (要, 会, 再, 还, 没, 有).
# Not ``ZH_FUNCTION_CHARS``: the matcher compares single characters, and these
# are the ones that occur in nearly every message about a todo.
MESSAGE_FUNCTION_CHARS = frozenset("了的是我你他她它们在把被给和也都就要会这那个一不没有很还再吧呢吗啊呀")

# --------------------------------------------------------------------------- verbs of doing

# English verbs a todo is done with (base forms; the closer stems what it
# reads, so "booked" and "books" meet "book"). In the place of a verb (after
# "to", "I'll", at the start) they are the action, not the thing: "send" of
# "Remember to send the Q4 report"; after "the" or a noun they are a thing
# again ("the water bill", "library books").
DOING_EN = frozenset("""
send pay fix book buy call email text ping reply answer submit file sign renew cancel order return pick drop
deliver ship merge deploy push release publish upload update migrate rotate back clean wash water feed walk take
schedule reschedule confirm finish complete write draft review approve test install upgrade configure setup
restart reboot archive pack print post mail replace repair register apply refill cook tidy vacuum mow paint
repaint organize organise sort handle resolve close tag label check verify move transfer wire deposit
charge refund lock unlock prep prepare wrap do make get go bring give put set run find meet build drive sell
hold cut throw tell read follow reach contact notify ask invite visit see look fetch collect grab redo remove
add delete rename share forward print scan fill hand lodge change get finalize finalise patch refactor rebalance
repot respond
""".split())

# Single characters that are a verb of doing on their own in a todo or a
# done (发 of 合同发了, 寄 of 寄出去了), and the longer verbs (提交, 部署).
DOING_ZH_CHARS = ("发寄交缴付买订还修改写做办弄搞打回取拿送收洗扔充续签约退换装删加补测跑拆清关贴填报存转汇接剪刷浇"
                  "喂遛锁铺扫擦晒煮烤卖租搬借教看查问催定批审推传归迁配调印读背见陪带找请吃倒挑选放去学")
DOING_ZH_WORDS = tuple("""
提交 部署 上线 下线 发布 合并 迁移 备份 归档 更新 处理 确认 安排 联系 通知 回复 答复 预约 报名 报销 申请 激活 挂失
注册 登记 缴费 交费 体检 复查 重构 重启 重做 测试 检查 整理 打扫 收拾 清理 打包 上传 下载 下单 付款 转账 还款 续费
审核 审批 签字 盖章 起草 对接 跟进 汇报 修复 解决 配置 安装 升级 取消 退订 预订 购买 采购 发送 寄出 核对 对账 打印
复印 扫描 填写 提取 领取 充值 续约 续签 签约 浇水 遛狗 倒垃圾 做饭 买菜 复习 排查 优化 评审 拜访 看望 探望 接送 预习
练习 锻炼 跑步 理发 洗车 加油 上课 交接 打电话 发邮件 回邮件 回电话 打疫苗 打针 吃药 拿药 取快递 寄快递
""".split())
# What a verb gets to: 完 (写完), 好 (修好), 过 (打过), 出去 (寄出去).
RESULTS_ZH = tuple("""
完毕 干净 出去 出来 回来 回去 进去 下来 起来 完 好 过 掉 定 上 到 齐 清 妥 成 光 走 出 回 给
""".split())
# Talking: a task when planned (跟 HR 聊下), an event when past (下午开会讨论了预算).
TALK_ZH = ("聊", "谈", "讨论", "沟通", "商量")
