"""Request keys: a write sent again with the same key (a retry that cannot
know whether the first call landed) applies once. The key is recorded with
the change itself: in the usage event of a ``touch``, in the working-memory
state an ``observe`` changed."""

from __future__ import annotations

import pytest

from sediment import InvalidInput, Repository
from sediment.disk import usage as U


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


def test_a_touch_sent_again_with_its_key_counts_once_in_every_process_and_after_a_compaction(repo, monkeypatch):
    e = repo.add("Deploys go through ArgoCD.", kind="fact")
    repo.touch(e.id, "confirm", request="k1")
    repo.touch(e.id, "confirm", request="k1")
    repo.touch(e.id, "confirm", request="k2")
    repo.touch(e.id, "confirm")
    repo.touch(e.id, "confirm")  # no key: every call counts
    assert repo.strength(e.id).confirms == 4
    with Repository(repo.root) as other:  # another process folds the same log alike
        assert other.strength(e.id).confirms == 4
        other.touch(e.id, "confirm", request="k2")
        assert other.strength(e.id).confirms == 4
    monkeypatch.setattr(U, "COMPACT_BYTES", 0)  # the next append compacts the log into the summary
    repo.touch(e.id, "refute", request="k3")
    repo.touch(e.id, "confirm", request="k1")  # a key counted before the compaction is still known
    with Repository(repo.root) as other:
        assert (other.usage.load()[e.id].confirms, other.usage.load()[e.id].refutes) == (4, 1)
    assert (repo.usage.load()[e.id].confirms, repo.usage.load()[e.id].refutes) == (4, 1)


def test_an_observe_sent_again_with_its_key_changes_nothing_again(repo):
    repo.observe("Remember to rotate the API keys on Friday.")
    repo.observe("Remember to send the invoice to Ada.")
    done = "Done: rotated the API keys."
    first = repo.observe(done, request="r1")
    assert [i.text for i in first.closed] == ["Remember to rotate the API keys on Friday."]
    again = repo.observe(done, request="r1")  # a retry: nothing else is closed
    assert again.closed == () and [i.text for i in again.working.items] == ["Remember to send the invoice to Ada."]
    repo.mood("focused")  # another write of the state keeps the keys
    assert repo.observe(done, request="r1").closed == ()


@pytest.mark.parametrize("key", ["", "   ", "a\nb", "x" * 201, 5])
def test_a_request_key_is_one_printable_line(repo, key):
    e = repo.add("x", kind="fact")
    with pytest.raises(InvalidInput, match="request"):
        repo.touch(e.id, "confirm", request=key)
    with pytest.raises(InvalidInput, match="request"):
        repo.observe("TODO: y", request=key)
    assert repo.strength(e.id).confirms == 0 and repo.working().items == ()
