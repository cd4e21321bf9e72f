"""Working memory hears what people promise and what they finish (issue 26
items 4 and 5), through the public API: the issue's sentences open and close
items, hedges, other people's promises, questions, conditions, negations
and mentions open nothing, and a "done" closes the item it is about, not one
it merely shares a word with. The development set (tests/data/intent_dev,
written for tuning) keeps its figures; the frozen yardstick is
benchmarks/intent (benchmarks/bench_intent.py)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment import Repository
from sediment.agent import closing
from sediment.agent.intent import is_done, is_todo, recognise

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)
LATER = T0 + dt.timedelta(hours=2)
DEV = Path(__file__).parent / "data" / "intent_dev"


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


# the sentences issue 26 lists as missed
ISSUE_TODOS = ["好的，我记得明天给张三发周报。", "I'll renew the TLS certificate for the gateway.",
               "我会在周五之前修好这个 bug。", "Next I'll migrate the database.", "我得记得给李四回邮件。",
               "I'll send you the slides."]


@pytest.mark.parametrize("text", ISSUE_TODOS)
def test_a_promise_opens_an_item(repo, text):
    seen = repo.observe(text, now=T0)
    assert [i.text for i in seen.opened] == [text]
    assert [i.text for i in repo.working(now=T0).items] == [text]


# (todos open at once, the done, the one it closes): each done is short and
# names its task otherwise than the todo did (the issue's "done"s, the todos
# ours); the other open item shares a word with it
CLOSING = [
    (["Remember to send the Q4 report tomorrow.", "I have to email the Q4 budget to Sam on Monday."],
     "Q4 report sent.", 0),
    (["Don't forget to buy the oat milk for Anna.", "I need to buy a new phone charger."], "Milk: done.", 0),
    (["别忘了把样品寄给客户。", "别忘了把合同发给法务。"], "合同发了", 1),
    (["我今天得把这个 PR 拆成两个。", "我待会 review 一下小王的 PR。"], "PR 已经拆好了。", 0),
    (["I'll move the DNS for the shop to the new host tomorrow.", "I'll change the shop's logo on Friday."],
     "DNS change is done.", 0),
    (["I'll renew the TLS certificate for the gateway.", "I have to renew the gym membership."],
     "TLS cert renewed.", 0),
    (["我得记得给李四回邮件。", "记得给王五发合同。"], "李四的邮件回了。", 0),
]


@pytest.mark.parametrize(("todos", "done", "which"), CLOSING)
def test_a_done_closes_the_item_it_is_about_and_not_the_other(repo, todos, done, which):
    for i, t in enumerate(todos):
        assert repo.observe(t, now=T0 + dt.timedelta(minutes=i)).opened, t
    seen = repo.observe(done, now=LATER)
    assert [i.text for i in seen.closed] == [todos[which]]
    assert [i.text for i in repo.working(now=LATER).items] == [t for i, t in enumerate(todos) if i != which]


# a done that shares a word or two with the only open item, about another task
NOT_CLOSING = [
    ("Remember to send the Q4 report tomorrow.", "Q4 invoices paid."),
    ("I'll fix the flaky signup test after lunch.", "Fixed the signup page typo."),
    ("Don't forget to pay the gas bill on Friday.", "Paid the internet bill."),
    ("记得给小陈回个微信。", "给老周回过微信了。"),
    ("明天我去邮局把包裹寄了。", "邮局的账单交好了。"),
    ("待会我把会议录音传到网盘里。", "照片传到网盘了"),
    # the same object, another task: the done's lead thing is no thing of the todo
    ("I'll clean the garage on Sunday.", "Garage door fixed."),
    ("我得把签好的租约发给玛雅。", "发票发给玛雅了。"),
    ("今晚回房东消息", "水管工的消息回了"),
]


@pytest.mark.parametrize(("todo", "done"), NOT_CLOSING)
def test_a_done_about_another_task_closes_nothing(repo, todo, done):
    repo.observe(todo, now=T0)
    assert is_done(done)
    assert repo.observe(done, now=LATER).closed == ()
    assert [i.text for i in repo.working(now=LATER).items] == [todo]


# what must open nothing: hedges, someone else's promise, questions,
# conditions, refusals, the past, mentions, a fact about the future
HARD_NEGATIVES = [
    "Maybe I'll renew the certificate next month, no idea yet.", "I might call the landlord later.",
    "Sarah will book the meeting room.", "My dad says he'll clean the gutters, we'll see.",
    "Will you send me the slides tonight?", "did u remember to water the plants",
    "If the build is green tonight I'll merge it.", "I'll only sign if the rent goes down.",
    "I won't be going to the gym this month.", "I used to call grandma every Sunday.",
    "The 'remind me' button is broken.", "The pool will be closed on Monday.", "I'll be late tomorrow.",
    "说不定明年我会换工作。", "有空的话我周末再研究一下。", "老刘说他周末帮我搬家。", "发票你寄了吗？",
    "登录页的 bug 你改好了没", "那个插件我不打算装了。", "我记得她以前住在杭州。", "《明天过后》这部电影不错。",
    "后天是中秋节。", "以前我每天早上都去游泳。",
]


@pytest.mark.parametrize("text", HARD_NEGATIVES)
def test_what_is_no_promise_opens_nothing(repo, text):
    assert repo.observe(text, now=T0).opened == ()
    assert repo.working(now=T0).items == ()


# "done"s that are not: negated, planned, asked, subordinate
NOT_DONE = ["I haven't sent the Q4 report yet.", "Nope, not finished.", "Did you send the Q4 report?",
            "Once the Q4 report is sent I'll tell you.", "合同还没发。", "合同发了没？", "合同快写完了。"]


@pytest.mark.parametrize("text", NOT_DONE)
def test_what_is_not_done_closes_nothing(repo, text):
    repo.observe("Remember to send the Q4 report tomorrow.", now=T0)
    repo.observe("别忘了把合同发给法务。", now=T0)
    assert repo.observe(text, now=LATER).closed == ()
    assert len(repo.working(now=LATER).items) == 2


def test_each_clause_that_reports_a_done_closes_its_own_item(repo):
    todos = ["Remember to pay the rent on Friday.", "I need to cancel the gym membership.", "得交水费了"]
    for i, t in enumerate(todos):
        repo.observe(t, now=T0 + dt.timedelta(minutes=i))
    seen = repo.observe("Paid the rent, and the gym membership is cancelled.", now=LATER)
    assert [i.text for i in seen.closed] == todos[:2]
    assert [i.text for i in repo.working(now=LATER).items] == todos[2:]


def test_a_done_that_names_no_thing_closes_the_item_sharing_its_words(repo):
    repo.observe("我明天把报价单整理好发给老王。", now=T0)
    repo.observe("Remember to book the flights tonight.", now=T0)
    assert repo.observe("Done!", now=LATER).closed == ()  # says nothing of which
    seen = repo.observe("已经发给他了，附了一张截图。", now=LATER)
    assert [i.text for i in seen.closed] == ["我明天把报价单整理好发给老王。"]


def test_a_done_and_a_promise_in_one_message(repo):
    repo.observe("别忘了把合同发给法务。", now=T0)
    seen = repo.observe("合同发了。明天我把发票也寄过去。", now=LATER)
    assert [i.text for i in seen.closed] == ["别忘了把合同发给法务。"]
    assert [i.text for i in seen.opened] == ["明天我把发票也寄过去。"]


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DEV / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_development_set_keeps_its_figures(lang):
    """Recall and precision of todo and done at least 0.9 per language on the
    400 sentences the patterns were tuned on (a guard against regressions:
    the figures that count are the frozen set's)."""
    rows = [r for r in _rows("labelled.jsonl") if r["lang"] == lang]
    assert len(rows) >= 200
    got = Counter()
    for r in rows:
        todo, done = is_todo(r["text"]), is_done(r["text"])
        predicted = "both" if todo and done else "todo" if todo else "done" if done else "neither"
        got[(r["label"], predicted)] += 1
    for what in ("todo", "done"):
        hit = got[(what, what)]
        assert hit / sum(n for (label, _), n in got.items() if label == what) >= 0.9, (what, got)
        assert hit / sum(n for (_, p), n in got.items() if p in (what, "both")) >= 0.9, (what, got)


def test_the_development_pairs_close_what_they_should(tmp_path):
    wrong = []
    for k, p in enumerate(_rows("pairs.jsonl")):
        with Repository(tmp_path / str(k)) as repo:
            opened = repo.observe(p["todo"], now=T0).opened
            closed = bool(opened) and bool(repo.observe(p["done"], now=LATER).closed)
            if closed != p["closes"]:
                wrong.append(p["id"])
    assert len(wrong) <= 2, wrong


# what a person may type: any text, with the characters the patterns look for
_CHARS = list("ab I'll done sent 我会记得发好了吗把明天已经，。？!?.,:'\"“”《》✅ \n")
_TEXT = st.text(st.sampled_from(_CHARS) | st.characters(), max_size=300)


@settings(max_examples=300, deadline=None)
@given(message=_TEXT, todos=st.lists(_TEXT, max_size=3))
def test_any_text_is_read_without_failing(message, todos):
    found = recognise(message)
    assert all(what in ("todo", "done") and sentence in message for what, sentence in found)
    hits = closing.closes(message, todos)
    assert len(set(hits)) == len(hits) and all(0 <= i < len(todos) for i in hits)


def test_a_pasted_text_is_no_promise(repo):
    pasted = "I'll send the report tomorrow and " * 100  # one "sentence" of 3,400 characters
    assert repo.observe(pasted, now=T0).opened == ()
