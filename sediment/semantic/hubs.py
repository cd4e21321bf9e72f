"""Hubs: a memory near every question is evidence for none.

The dense lane's floor (``dense.select``) asks whether a memory stands out
among the corpus's similarities *to the query*. In a sentence encoder's
space some memories stand out for almost any query: "I've got lots of kids'
books - classics, stories from different cultures, educational" was the
nearest turn of its LoCoMo conversation to "Who wrote Romeo and Juliet?",
"地球上有几个大洋？" and "Who developed the theory of general relativity?"
alike. Such *hubs* are a known trait of nearest neighbours in high
dimensions (Radovanović et al., JMLR 2010), and the usual cure is to ask the
other side too: whether the query also stands out among the memory's own
similarities — the Gaussian form of mutual proximity (Schnitzer et al.,
JMLR 2012). A hub is similar to much of the corpus, so its similarity to one
more text says little; a memory that is really about the query is nearer to
it than to the rest of what is kept.

``standing`` is that second test: for each candidate, how many standard
deviations its (centred) similarity to the query stands above its centred
similarities to the other memories (to a fixed sample of them, ``SAMPLE``:
the mean and spread of a few thousand are as good as all, and a query then
costs a candidates × sample product, not a pass over the corpus).

Measured on the candidates ``select`` let through (benchmarks/README.md,
"Issue 31, pattern 3 with the semantic lane"): the off-topic questions'
candidates in LoCoMo conversations stand 2.2 deviations out at the median
(90th percentile 2.9-3.0), the paraphrase set's and the category pattern's
answers 2.8 at the least (5.1 and 3.7 at the median). ``row_z`` = 2.75
keeps every one of those answers and 284 of 1,737 off-topic candidates:
with the lane, the off-topic questions' average hits 3.91 → 2.33.
"""

from __future__ import annotations

from typing import Any, Sequence

from .embedding import require_numpy
from .vectors import VectorFile

SAMPLE = 2048  # the memories a candidate's own spread is measured against
# a sample of a corpus larger than SAMPLE is kept (with the mean it was centred
# on) until the corpus has grown by this share: a root that adds a memory
# between two searches would otherwise rebuild it (2,048 rows dequantized and
# centred, a few ms) at every search; a spread is not moved by a few rows more
REUSE = 0.05


class Spread:
    """Candidates' standing among their own similarities to the corpus, over
    one vector file; the sample is kept until rows are added or the mean moves
    (beyond ``SAMPLE`` rows: until the corpus grew by ``REUSE``, or the file
    was rewritten)."""

    def __init__(self, vectors: VectorFile) -> None:
        self.vectors = vectors
        # (rows then, the mean then, the sample's rows, their centred vectors, the last one's key)
        self._sample: tuple[int, Any, Any, Any, bytes] | None = None

    def _centred(self, rows: Any, mu: Any) -> Any:
        """These rows less the corpus mean, as unit vectors (what ``scan``'s
        centred cosine compares)."""
        np = require_numpy()
        x = self.vectors.dequantized(rows) - mu
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    def _of(self, mu: Any) -> tuple[Any, Any, Any]:
        """The sample's rows, their centred vectors, and the mean they were centred on."""
        np = require_numpy()
        n = len(self.vectors)
        got = self._sample
        if got is not None and (got[0] == n and got[1] is mu or SAMPLE < got[0] <= n <= got[0] * (1 + REUSE)
                                and self.vectors.key(int(got[2][-1])) == got[4]):  # (not compacted meanwhile)
            return got[2], got[3], got[1]
        rows = np.arange(n) if n <= SAMPLE else np.unique(np.linspace(0, n - 1, SAMPLE).astype(np.int64))
        y = self._centred(rows, mu)
        ok = np.isfinite(y).all(axis=1)  # (a NaN row, a model's fault on one text, says nothing)
        rows, y = rows[ok], y[ok]
        if len(rows):
            self._sample = (n, mu, rows, y, self.vectors.key(int(rows[-1])))
        return rows, y, mu

    def standing(self, rows: Sequence[int], sims: Any) -> list[float]:
        """For each of ``rows``: its similarity to the query (``sims``, the
        centred cosines of a scan) less the mean of its centred cosines to the
        sampled memories (itself left out), in their standard deviations. No
        corpus mean (no rows in use): infinitely high, no test."""
        np = require_numpy()
        mu = self.vectors.mean()
        if mu is None or not len(rows):
            return [float("inf")] * len(rows)
        at = np.asarray(rows, dtype=np.int64)
        sample, y, mu = self._of(mu)
        if not len(sample):
            return [float("inf")] * len(rows)
        s = self._centred(at, mu) @ y.T
        pos = np.minimum(np.searchsorted(sample, at), len(sample) - 1)
        own = (sample[pos] == at).astype(np.float32)  # in the sample: its cosine with itself, 1, left out
        k = np.maximum(len(sample) - own, 1.0)
        mean = (s.sum(axis=1) - own) / k
        # (a variance of ~0 can come out a hair below it: a memory as near to every other, a spread of none)
        std = np.sqrt(np.maximum(((s * s).sum(axis=1) - own) / k - mean * mean, 0.0)).clip(1e-6)
        return [float(v) for v in (np.asarray(sims, dtype=np.float32)[at] - mean) / std]
