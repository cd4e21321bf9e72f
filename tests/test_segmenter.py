"""rjieba (jieba-rs) is the default segmenter and pure-Python jieba the
fallback: they must cut text into the same index terms, or a switch between
them would change what is found."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import jieba
import pytest

from sediment import Repository
from sediment.search.tokenize import Tokenizer, default_segmenter

MEMORY_ROOT = Path(__file__).resolve().parent.parent / "memory_root"


def _corpus(n: int = 400, seed: int = 7) -> list[str]:
    """Mixed Chinese/English/number text: words drawn from jieba's own dictionary
    by frequency, plus the example root's notes."""
    rng = random.Random(seed)
    lines = (Path(jieba.__file__).parent / "dict.txt").read_text(encoding="utf-8").splitlines()
    words = [ln.split()[0] for ln in lines[::7] if ln.split() and int(ln.split()[1]) > 50]
    latin = ["deploy", "ArgoCD", "PKCE", "v2.3", "2012.03.29", "M-Touch", "redis", "iOS"]
    docs = []
    for _ in range(n):
        parts = [rng.choice(words) for _ in range(rng.randint(8, 40))]
        for _ in range(rng.randint(0, 4)):
            parts.insert(rng.randrange(len(parts) + 1), f" {rng.choice(latin)} ")
        docs.append("".join(parts) + rng.choice(["。", "，", "！", ""]))
    docs += [p.read_text(encoding="utf-8") for p in sorted(MEMORY_ROOT.rglob("*.md"))]
    return docs


def test_rjieba_and_jieba_give_the_same_index_terms():
    fast, slow = Tokenizer(segmenter="rjieba"), Tokenizer(segmenter="jieba")
    same = total = 0
    for doc in _corpus():
        a, b = fast.terms(doc), slow.terms(doc)
        ca, cb = Counter(a[0]) + Counter(a[1]), Counter(b[0]) + Counter(b[1])
        same += sum((ca & cb).values())
        total += max(sum(ca.values()), sum(cb.values()))
    assert total > 20_000 and same / total >= 0.999, (same, total)


def test_the_fingerprint_names_the_segmenter():
    assert Tokenizer(segmenter="rjieba").fingerprint() != Tokenizer(segmenter="jieba").fingerprint()
    t = Tokenizer(segmenter="rjieba")
    before = t.fingerprint()
    t.add_word("量子纠缠态")
    assert t.fingerprint() != before  # a taught word changes what is indexed


@pytest.mark.parametrize("segmenter", ["rjieba", "jieba"])
def test_add_word_works_with_both(segmenter):
    t = Tokenizer(segmenter=segmenter)
    assert "区块链钱包" not in t.terms("我的区块链钱包丢了")[0]
    t.add_word("区块链钱包", 2000)
    assert "区块链钱包" in t.terms("我的区块链钱包丢了")[0]


def test_rjieba_is_the_default_and_jieba_can_be_chosen(monkeypatch, tmp_path):
    monkeypatch.delenv("SEDIMENT_SEGMENTER", raising=False)
    assert default_segmenter() == "rjieba"
    monkeypatch.setenv("SEDIMENT_SEGMENTER", "jieba")
    assert default_segmenter() == "jieba"


def test_a_root_indexed_with_one_segmenter_is_rebuilt_under_the_other(tmp_path):
    """The snapshot's fingerprint names the segmenter: a process with the other
    one re-tokenizes instead of mixing the two."""
    import subprocess
    import sys
    script = ("import sys; from sediment import Repository; r = Repository(sys.argv[1]);"
              "print(len(r), [h.entry.title for h in r.search('回答', record=False)]); r.close()")
    with Repository(tmp_path) as repo:
        repo.add("用户喜欢简短的回答", title="偏好")
    snap = tmp_path / "_system" / "cache" / "index.bin"
    outs = []
    for seg in ("rjieba", "jieba", "rjieba"):
        before = snap.read_bytes()
        env = {**os.environ, "SEDIMENT_SEGMENTER": seg}
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                             text=True, check=True).stdout
        outs.append(out)
        if seg == "jieba":
            assert snap.read_bytes() != before  # rebuilt under the other segmenter
    assert outs[0] == outs[1] == outs[2] == "1 ['偏好']\n"


# progress of long work (issue "Speed", item 6) ------------------------------------

def test_a_cold_open_and_a_metabolize_report_their_progress(tmp_path):
    with Repository(tmp_path) as repo:
        for i in range(250):
            repo.add(f"note {i} about 部署 and deploys {i}", title=f"n{i}", kind="fact", value=0.9)
    import shutil
    shutil.rmtree(tmp_path / "_system" / "cache")
    calls: list[tuple[str, int, int]] = []
    repo = Repository(tmp_path, progress=lambda stage, done, total: calls.append((stage, done, total)))
    opens = [c for c in calls if c[0] == "open"]
    assert opens and opens[-1] == ("open", 250, 250) and len(opens) <= 101
    assert [d for _, d, _ in opens] == sorted(d for _, d, _ in opens)  # only forward
    calls.clear()
    repo.metabolize(dry_run=False, now="2099-01-01T00:00:00+00:00", confirm=True)
    assert calls and calls[-1][0] == "metabolize" and calls[-1][1] == calls[-1][2] > 0


def test_a_check_reports_its_progress_and_the_cli_check_is_silent_when_piped(tmp_path):
    import subprocess
    import sys
    with Repository(tmp_path) as repo:
        for i in range(120):
            repo.add(f"checked note {i}", title=f"c{i}")
    (tmp_path / "shallow" / "broken.md").write_text("no frontmatter\n", encoding="utf-8")
    calls: list[tuple[str, int, int]] = []
    repo = Repository(tmp_path, progress=lambda stage, done, total: calls.append((stage, done, total)))
    calls.clear()
    assert [p.path for p in repo.check()] == ["shallow/broken.md"]
    checks = [c for c in calls if c[0] == "check"]
    assert checks and checks[-1] == ("check", 121, 121) and len(checks) <= 101
    assert [d for _, d, _ in checks] == sorted(d for _, d, _ in checks)
    out = subprocess.run([sys.executable, "-m", "sediment", "--root", str(tmp_path), "check"],
                         capture_output=True, text=True)
    assert "broken.md" in out.stdout and out.stderr == ""


def test_the_cli_draws_no_progress_bar_when_piped(tmp_path):
    import subprocess
    import sys
    with Repository(tmp_path) as repo:
        for i in range(50):
            repo.add(f"piped note {i}", title=f"p{i}")
    import shutil
    shutil.rmtree(tmp_path / "_system" / "cache")
    out = subprocess.run([sys.executable, "-m", "sediment", "--root", str(tmp_path), "search", "piped"],
                         capture_output=True, text=True, check=True)
    assert out.stderr == "" and "piped" in out.stdout


def test_on_a_terminal_a_long_job_draws_a_bar():
    """A real pseudo-terminal (with a size, as a terminal has) on stderr."""
    import fcntl
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios
    m, s = pty.openpty()
    fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    code = ("import time; from sediment.progress import terminal_bar; show = terminal_bar()\n"
            "for i in range(1, 41):\n    show('open', i * 25, 1000); time.sleep(0.025)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stderr=s)
    os.close(s)
    out = b""
    while True:
        ready, _, _ = select.select([m], [], [], 0.3)
        if ready:
            try:
                chunk = os.read(m, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    assert p.wait() == 0
    assert b"open:" in out and b"note/s" in out
