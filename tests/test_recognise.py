"""The entity recogniser (issue 29): people, organisations and places in a
text, without a model. Sentences of its own (the frozen set in
benchmarks/people/ is measured by benchmarks/bench_people.py, never tested
here); each case is a trap the issue names or a kind the rules list."""

from __future__ import annotations

import pytest

from sediment.agent.recognise import recognise
from sediment.model.people import known_people

KNOWN = known_people({"张三": ["老张", "Zhang San"], "张三丰": [], "李明": [], "王磊": ["小王"], "王建国": ["王总"],
                      "陈静": ["静静"], "David Park": ["David"], "Mark Davies": ["Mark"], "Alice Chen": ["Alice"]})


def found(text: str) -> list[tuple[str, str, str | None]]:
    return [(m.text, m.type, m.entity) for m in recognise(text, KNOWN)]


@pytest.mark.parametrize("text, names", [
    # the longest known name wins, and each resolves to its own person
    ("张三的代码张三丰看过了", [("张三", "person", "张三"), ("张三丰", "person", "张三丰")]),
    ("老张说小王和王总都同意", [("老张", "person", "张三"), ("小王", "person", "王磊"), ("王总", "person", "王建国")]),
    # a known name inside another reading of the sentence is not that name
    ("老李明天来修空调", [("老李", "person", None)]),
    ("她静静地听完了", []),
    # someone not known is found, and resolves to nobody
    ("周五和刘小军去杭州出差", [("刘小军", "person", None), ("杭州", "place", None)]),
    ("小赵在招商银行办了张卡", [("小赵", "person", None), ("招商银行", "org", None)]),
    ("明天把钉钉上的审批走完", []),
    # English: sentence starts, products and months are no names
    ("Mark the flaky test as skipped.", []),
    ("Mark fixed the flaky test.", [("Mark", "person", "Mark Davies")]),
    ("Yesterday Alice moved the Kafka cluster to Frankfurt.", [("Alice", "person", "Alice Chen"),
                                                                ("Frankfurt", "place", None)]),
    ("David Lee from Acme Corp called about the invoice.", [("David Lee", "person", None),
                                                            ("Acme Corp", "org", None)]),
    ("Deploy the Redis patch on Monday before the March freeze.", []),
    ("talked to zhang san about the Tokyo team", [("zhang san", "person", "张三"), ("Tokyo", "place", None)]),
    ("Dr. Okafor and Prof. Jane Liu visited Stanford.", [("Dr. Okafor", "person", None), ("Jane Liu", "person", None),
                                                        ("Stanford", "org", None)]),
])
def test_names_found_in_a_text(text, names):
    assert found(text) == names


def test_any_text_is_read_without_failing():
    for text in ["", "   ", "。。。", "A", "x" * 5000, "\x00\n\t", "🙂 Émile à Paris", "ABC DEF GHI", "'s"]:
        for m in recognise(text, KNOWN):
            assert text[m.start:m.end] == m.text and m.type in ("person", "org", "place")
