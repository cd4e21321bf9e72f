"""Deterministic generator of memory roots for the speed and size benchmarks.

Shared by ``bench_core.py`` and ``bench_scale.py``. Nothing here is public data:
every memory is generated from a seed, so the same seed gives the same bytes on
every machine (given the same jieba dictionary and PyYAML).

* Chinese words are drawn from jieba's own bundled dictionary (``dict.txt``,
  MIT licence, shipped with the ``jieba`` dependency), weighted by its word
  frequencies, so the text has a natural Zipf-like distribution.
* English words come from a small embedded list of common and technical words,
  weighted by rank (Zipf), plus a long tail of synthetic identifiers, names and
  version numbers so that the vocabulary keeps growing with the corpus (Heaps'
  law), as real notes do.
* Each memory is about 300 characters, one third Chinese, one third English,
  one third mixed (Chinese sentences with English terms inside).

Files are written directly (``sediment.model.entry.render`` + a plain write, no fsync):
generating 100,000 memories with one durable ``add`` each would take many minutes
and measure the disk, not the library. The layout (``_system/``, policy file,
journal) is created by opening an empty root with ``Repository`` first.

Also here: small helpers the benchmarks share (medians, percentiles, tables, the
default location of the public data, and running ``_probe.py`` in a child process).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import itertools
import json
import math
import os
import random
from collections import Counter
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))

from sediment.model import entry as E  # noqa: E402
from sediment.model import names as N  # noqa: E402
from sediment.model.fields import build_meta, now_iso


# Retrieval benchmarks add their memories at fixed, increasing times: ties
# between equal scores are broken by recency, so wall-clock add times (and
# where second boundaries fall) would otherwise move the figures run to run.
ADD_T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def add_time(i: int) -> _dt.datetime:
    return ADD_T0 + _dt.timedelta(seconds=i)


def default_data_dir() -> Path:
    """``../shared/bench-data`` seen from the repository root."""
    return (REPO_DIR / ".." / "shared" / "bench-data").resolve()


# ---------------------------------------------------------------------------
# vocabulary

_EN_WORDS = """
the of and to in is for that on with as it this be are by from at or was an not have
we but all can will they more one has which their if about out so when up what there been
time new would some into just use also only other like how then its two our over after
first work well way even make many need see because good each those people want day most
user file data test code build release server client request error config memory search
index query cache deploy branch commit merge review change issue bug fix feature version
update install package module function class method api token login password session
database table column schema migration backup restore network proxy timeout retry queue
worker thread process lock journal folder layer note tag title link graph report metric
latency throughput benchmark profile log trace alert dashboard service endpoint route
handler payload response status header cookie auth oauth pkce secret key certificate
docker container image kubernetes pod cluster node volume storage disk bucket object
python rust golang javascript typescript react vue frontend backend mobile android ios
design decision rule principle reason evidence conclusion hesitation context question
answer meeting plan sprint deadline estimate priority customer team manager engineer
morning evening yesterday tomorrow week month year today monday friday weekend holiday
coffee lunch dinner travel hotel flight train weather rain sunny cold warm music movie
book game sport running hiking swimming family friend child parent birthday gift party
remember forget prefer like dislike always never often usually sometimes maybe probably
quick slow large small simple complex clear short long fast safe risky stable broken
read write open close start stop create delete move copy rename split join sort filter
check verify validate parse render format encode decode compress upload download sync
project repository document readme guide tutorial example template draft final review
""".split()

_FUNCTION_EN = frozenset(_EN_WORDS[:60])  # the head of the list: function words, not queries

_SYLL_ON = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
            "ch", "sh", "th", "tr", "st", "br", "pl", "gr"]
_SYLL_NU = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"]
_SYLL_CO = ["", "", "n", "r", "s", "t", "l", "x", "m", "ck"]

_ZH_PUNCT = "，，，。"

ROOMS = ["", "", "auth", "infra", "frontend", "前端", "数据库", "日常", "research", "家庭/旅行"]
LAYER_WEIGHTS = (("shallow", 50), ("sediment", 35), ("bedrock", 10), ("archive", 5))
KINDS = ["fact", "fact", "event", "rule", "skill", "daily", "inbox", "mood"]
TAG_POOL = ["auth", "oauth2", "移动端", "性能", "数据库", "bug", "部署", "偏好", "家庭", "旅行", "测试",
            "python", "rust", "前端", "design", "meeting", "决定", "风险", "research", "健康"]
BASE_TIME = _dt.datetime(2025, 1, 1, 9, 0, tzinfo=_dt.timezone(_dt.timedelta(hours=8)))


@dataclass
class _Vocab:
    zh: list[str]
    zh_cum: list[float]
    zh_content: list[str]  # words of 2+ characters, for titles and queries
    zh_content_cum: list[float]
    en: list[str]
    en_cum: list[float]
    tail: list[str]
    tail_cum: list[float]


_VOCAB: _Vocab | None = None


def _jieba_dict() -> Path:
    import jieba
    return Path(jieba.__file__).resolve().parent / "dict.txt"


def vocab() -> _Vocab:
    global _VOCAB
    if _VOCAB is not None:
        return _VOCAB
    words: list[tuple[int, str]] = []
    with open(_jieba_dict(), encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 2:
                continue
            w, f = parts[0], int(parts[1])
            if 1 <= len(w) <= 4 and all("\u4e00" <= c <= "\u9fff" for c in w) and _gb2312(w):
                words.append((f, w))
    words.sort(key=lambda x: (-x[0], x[1]))
    words = words[:40_000]
    zh = [w for _, w in words]
    zh_cum = list(itertools.accumulate(float(f) for f, _ in words))
    content = [(f, w) for f, w in words if len(w) >= 2][:30_000]
    # flatten the head a little for content words, or titles are all '我们', '没有'
    zh_content = [w for _, w in content]
    zh_content_cum = list(itertools.accumulate(math.sqrt(f) for f, _ in content))
    en = list(dict.fromkeys(_EN_WORDS))
    en_cum = list(itertools.accumulate(1.0 / (r + 2.7) for r in range(len(en))))
    # a deterministic long tail: 60,000 pseudo-words, names and identifiers, Zipf weighted
    trng = random.Random(7)
    tail = []
    seen = set()
    while len(tail) < 60_000:
        n = trng.choice((2, 2, 3, 3, 4))
        w = "".join(trng.choice(_SYLL_ON) + trng.choice(_SYLL_NU) + trng.choice(_SYLL_CO) for _ in range(n))
        r = trng.random()
        if r < 0.08:
            w = f"{w}-{trng.randint(1, 9999)}"
        elif r < 0.12:
            w = f"v{trng.randint(0, 9)}.{trng.randint(0, 30)}.{trng.randint(0, 99)}"
        elif r < 0.2:
            w = w.capitalize()
        if w not in seen:
            seen.add(w)
            tail.append(w)
    tail_cum = list(itertools.accumulate(1.0 / (r + 10) for r in range(len(tail))))
    _VOCAB = _Vocab(zh, zh_cum, zh_content, zh_content_cum, en, en_cum, tail, tail_cum)
    return _VOCAB


def _gb2312(w: str) -> bool:
    # jieba's dictionary carries some mis-encoded rare characters; keep common ones
    try:
        w.encode("gb2312")
        return True
    except UnicodeEncodeError:
        return False


def _pick(rng: random.Random, items: list[str], cum: list[float], k: int) -> list[str]:
    total = cum[-1]
    return [items[bisect.bisect(cum, rng.random() * total)] for _ in range(k)]


def _en_words(rng: random.Random, v: _Vocab, k: int) -> list[str]:
    out = _pick(rng, v.en, v.en_cum, k)
    for i in range(k):
        if rng.random() < 0.12:
            out[i] = _pick(rng, v.tail, v.tail_cum, 1)[0]
    return out


def _zh_sentence(rng: random.Random, v: _Vocab, mixed: bool) -> str:
    n = rng.randint(6, 14)
    ws = _pick(rng, v.zh, v.zh_cum, n)
    if mixed:
        for _ in range(rng.randint(1, 3)):
            ws.insert(rng.randrange(len(ws) + 1), " " + _en_words(rng, v, 1)[0] + " ")
    return "".join(ws).replace("  ", " ") + rng.choice(_ZH_PUNCT)


def _en_sentence(rng: random.Random, v: _Vocab) -> str:
    ws = _en_words(rng, v, rng.randint(6, 16))
    s = " ".join(ws)
    return s[0].upper() + s[1:] + rng.choice((".", ".", ".", ",", "?"))


# ---------------------------------------------------------------------------
# memories

LANGS = ("zh", "en", "mixed")


@dataclass
class Memory:
    i: int
    lang: str
    title: str
    text: str
    tags: list[str]
    kind: str
    room: str
    layer: str
    created: str
    rel: str = ""
    data: bytes = b""


def _ulid(rng: random.Random, ms: int) -> str:
    n = (ms << 80) | rng.getrandbits(80)
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in range(25, -1, -1))


def memory(i: int, seed: int = 1) -> Memory:
    """Memory number ``i`` of the stream for ``seed`` (independent of the others)."""
    rng = random.Random(seed * 1_000_003 + i)
    v = vocab()
    lang = LANGS[i % 3]
    target = max(150, min(450, int(rng.gauss(300, 40))))
    parts: list[str] = []
    size = 0
    while size < target:
        if lang == "en":
            s = _en_sentence(rng, v)
            sep = " "
        else:
            s = _zh_sentence(rng, v, mixed=(lang == "mixed"))
            sep = ""
        parts.append(s)
        size += len(s) + len(sep)
    text = (" " if lang == "en" else "").join(parts)[:target + 40]
    if lang == "en":
        tw = _en_words(rng, v, rng.randint(3, 6))
        title = " ".join(tw).capitalize()
    else:
        tw = _pick(rng, v.zh_content, v.zh_content_cum, rng.randint(2, 4))
        if lang == "mixed":
            tw.insert(1, " " + _en_words(rng, v, 1)[0] + " ")
        title = "".join(tw).strip()
    # the title's words also appear in the text (as a person writes a summary line)
    text = title + ("。" if lang != "en" else ". ") + text
    tags = rng.sample(TAG_POOL, rng.choice((0, 1, 1, 2, 3)))
    kind = rng.choice(KINDS)
    room = rng.choice(ROOMS)
    layer = _pick(rng, [x for x, _ in LAYER_WEIGHTS],
                  list(itertools.accumulate(float(w) for _, w in LAYER_WEIGHTS)), 1)[0]
    created_dt = BASE_TIME + _dt.timedelta(minutes=7 * i, seconds=rng.randint(0, 59))
    m = Memory(i, lang, title, text, tags, kind, room, layer, now_iso(created_dt))
    eid = _ulid(rng, int(created_dt.timestamp() * 1000))
    meta = build_meta(id=eid, title=title, created=m.created, kind=kind, tags=tags,
                        value=round(rng.uniform(0.2, 0.9), 2), source=f"session-{i // 40:05d}",
                        links=(), extra={})
    name = f"{N.slugify(title, max_bytes=60)}-{i:06d}"
    m.rel = N.join_path(layer, room, name)
    m.data = E.render(E.Entry(meta=meta, body=text + "\n")).encode("utf-8")
    return m


def memories(n: int, seed: int = 1, start: int = 0):
    for i in range(start, start + n):
        yield memory(i, seed)


def init_root(root: Path) -> None:
    """Make an empty root with the library's layout (folders, policy, journal)."""
    from sediment import Repository
    Repository(root).close()


def write_root(root: Path, n: int, seed: int = 1) -> list[Memory]:
    """A root of ``n`` generated memories, written directly (not durable: a
    benchmark fixture). Returns the memories (with ``data``)."""
    root = Path(root)
    init_root(root)
    made: set[Path] = set()
    out = []
    for m in memories(n, seed):
        p = root / m.rel
        if p.parent not in made:
            p.parent.mkdir(parents=True, exist_ok=True)
            made.add(p.parent)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, m.data)
        finally:
            os.close(fd)
        out.append(m)
    return out


# ---------------------------------------------------------------------------
# queries

def queries(mems: list[Memory], n: int = 200, seed: int = 99) -> list[dict]:
    """A fixed query set: one third Chinese, English and mixed. Most queries take
    1–3 words of one memory (so they have an answer); one in ten is made of
    vocabulary words that may be in no memory at all. Each query carries its
    ``terms`` (what the substring-scan baseline looks for)."""
    rng = random.Random(seed)
    v = vocab()
    by_lang = {lang: [m for m in mems if m.lang == lang] for lang in LANGS}
    out = []
    for qi in range(n):
        lang = LANGS[qi % 3]
        pool = by_lang[lang] or mems
        m = pool[rng.randrange(len(pool))]
        k = rng.choice((1, 2, 2, 3))
        src = m
        if rng.random() < 0.1:  # maybe no answer
            src = None
            zh = _pick(rng, v.zh_content, v.zh_content_cum, k)
            en = [w.lower() for w in _en_words(rng, v, k)]
        else:
            zh_cands = [w for w in _zh_words_in(m.text, v) if len(w) >= 2]
            en_cands = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[.\-][A-Za-z0-9]+)*", m.text)
                        if len(w) > 3 and w.lower() not in _FUNCTION_EN]
            zh = [rng.choice(zh_cands) for _ in range(k)] if zh_cands else []
            en = [rng.choice(en_cands) for _ in range(k)] if en_cands else []
        if lang == "zh":
            terms = list(dict.fromkeys(zh))
            q = "".join(terms)
        elif lang == "en":
            terms = list(dict.fromkeys(en))
            q = " ".join(terms)
        else:
            terms = list(dict.fromkeys(zh[:max(1, k - 1)] + en[:1]))
            q = " ".join(terms)
        out.append({"q": q, "lang": lang, "terms": terms,
                    "source_rel": src.rel if src is not None and src.layer != "archive" else None})
    return out


def common_queries(mems: list[Memory], qs: list[dict], top: int = 20, seed: int = 98) -> list[dict]:
    """``qs`` with one of the corpus's ``top`` commonest words of the query's
    language added to each (a mixed query gets a Chinese one): the queries
    whose tail the speed issue measures, where a common word's long postings
    list decides a lane's top. Counted over the memories' texts: Chinese
    dictionary words of two characters or more, English words of four
    letters or more (as the query set takes them)."""
    v = vocab()
    zh: Counter[str] = Counter()
    en: Counter[str] = Counter()
    for m in mems:
        zh.update(set(w for w in _zh_words_in(m.text, v) if len(w) >= 2))
        en.update(set(w.lower() for w in re.findall(r"[A-Za-z]+", m.text)
                      if len(w) > 3 and w.lower() not in _FUNCTION_EN))
    common = {"zh": [w for w, _ in zh.most_common(top)], "en": [w for w, _ in en.most_common(top)]}
    rng = random.Random(seed)
    out = []
    for q in qs:
        lang = "en" if q["lang"] == "en" else "zh"
        w = rng.choice(common[lang])
        text = q["q"] + w if q["lang"] == "zh" else f"{q['q']} {w}".strip()
        out.append({**q, "q": text, "terms": list(dict.fromkeys([*q["terms"], w]))})
    return out


def _zh_words_in(text: str, v: _Vocab) -> list[str]:
    """Content words of the dictionary that occur in ``text`` (greedy, longest first)."""
    content = _content_set(v)
    out = []
    i = 0
    while i < len(text):
        for L in (4, 3, 2):
            w = text[i:i + L]
            if len(w) == L and w in content:
                out.append(w)
                i += L
                break
        else:
            i += 1
    return out


_CONTENT: set[str] | None = None


def _content_set(v: _Vocab) -> set[str]:
    global _CONTENT
    if _CONTENT is None:
        _CONTENT = set(v.zh_content)
    return _CONTENT


# ---------------------------------------------------------------------------
# statistics, tables, child processes

def median(xs) -> float:
    return statistics.median(xs)


def percentile(xs, p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def ratio(a: float, b: float) -> str:
    if not b or not math.isfinite(a) or not math.isfinite(b):
        return "n/a"
    return f"{a / b:.2f}x"


def table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(_width(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(c + " " * (widths[i] - _width(c)) for i, c in enumerate(r)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _width(s: str) -> int:
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def probe(mode: str, root: Path, *, queries_file: Path | None = None, repeat: int = 3,
          profile: bool = False, timeout: float | None = None, cache_home: Path | None = None) -> dict:
    """Run ``_probe.py`` in a fresh interpreter (so every open pays what a real
    process pays: imports, jieba start-up when needed) and return its JSON.
    ``cache_home`` sets the child's ``XDG_CACHE_HOME`` (where the library keeps
    jieba's dictionary cache); by default the child inherits ours."""
    cmd = [sys.executable, str(BENCH_DIR / "_probe.py"), mode, str(root)]
    if queries_file is not None:
        cmd += ["--queries", str(queries_file), "--repeat", str(repeat)]
    if profile:
        cmd.append("--profile")
    env = None
    if cache_home is not None:
        env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"probe {mode} failed ({res.returncode}):\n{res.stderr[-4000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if profile:
        out["profile_text"] = res.stderr
    return out


def fresh_process(code: str | None = None, args: list[str] | None = None, *, runs: int = 5,
                  timeout: float | None = 600) -> tuple[list[float], list[float]]:
    """Wall times of a fresh interpreter running ``code`` (``python -c``) or
    ``args`` (``python ARGS``), each run next to one of the baseline
    ``python -c "import yaml"`` (alternately, so both see the same load):
    (times, baseline times). Output is discarded; a failure raises."""
    cmd = [sys.executable, "-c", code] if code is not None else [sys.executable, *(args or [])]
    times, floor = [], []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import yaml"], check=True, timeout=timeout)
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, timeout=timeout)
        times.append(time.perf_counter() - t)
        if res.returncode != 0:
            raise RuntimeError(f"{cmd} failed ({res.returncode}):\n{res.stderr.decode()[-2000:]}")
    return times, floor


def first_search_code(root: Path, query: str) -> str:
    """A fresh process's whole way to its first result: import, warm open, one search."""
    return (f"from sediment import Repository\nr = Repository({str(root)!r})\n"
            f"assert r.search({query!r}, record=False) is not None\n")


def private_cache_home(tmp: Path) -> Path:
    """Point ``XDG_CACHE_HOME`` (for this process and its children) at a folder
    inside the benchmark's temp dir, so that the library's per-user cache
    (jieba's dictionary cache) is neither read from nor written to the real
    user's cache, and prime it once through the public API (an empty root and
    one Chinese search), so that only the 'coldest' measurements pay for it."""
    home = Path(tmp) / "xdg-cache"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(home)
    from sediment import Repository
    with Repository(Path(tmp) / "prime-root") as repo:
        repo.search("测试一下")
    import shutil
    shutil.rmtree(Path(tmp) / "prime-root", ignore_errors=True)
    return home


def drop_cache(root: Path) -> None:
    """Make the next open cold: remove the root's derived caches (the whole
    ``_system/cache/`` folder: the index snapshot, and any tokenization cache)."""
    import shutil
    shutil.rmtree(Path(root) / "_system" / "cache", ignore_errors=True)


def wc(wall: float, cpu: float | None) -> str:
    """'2.41 s (cpu 2.30 s)': wall-clock time with this process's CPU time."""
    return fmt_s(wall) if cpu is None else f"{fmt_s(wall)} (cpu {fmt_s(cpu)})"


def fmt_s(x: float) -> str:
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.1f} ms"
    return f"{x:.2f} s"


def source_fingerprint() -> str:
    """Which library code was measured: a hash of ``sediment/**/*.py`` (and the git
    commit when available), printed in every benchmark's header."""
    import hashlib
    h = hashlib.sha256()
    pkg = REPO_DIR / "sediment"
    for p in sorted(pkg.rglob("*.py")):
        h.update(p.relative_to(pkg).as_posix().encode() + b"\0" + p.read_bytes())
    s = f"sediment source {h.hexdigest()[:12]}"
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_DIR, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "sediment"], cwd=REPO_DIR,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            s += f", git {head}{' + uncommitted changes' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        load = "load average %.1f/%.1f/%.1f" % os.getloadavg()
    except OSError:
        load = ""
    return f"{s}; python {sys.version.split()[0]}, {os.cpu_count()} cpus, {load}"
