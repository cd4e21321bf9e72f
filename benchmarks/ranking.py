"""Run a retrieval benchmark with a ranking choice changed: how the table
"Ranking choices" in benchmarks/README.md was measured.

    python benchmarks/ranking.py --delta 0 bench_locomo.py --data PATH
    python benchmarks/ranking.py --feedback off bench_cmrc.py --data PATH
    python benchmarks/ranking.py --feedback 3,10,0.5 --fuse-weight 0.5 bench_zhmem.py

The benchmark script (a name in this folder) runs unchanged in this process,
after the library's constants are set: BM25+'s ``--delta``; the feedback lane
``--feedback DOCS,TERMS,WEIGHT`` (what the policy's ``feedback_*`` settings
give) or ``off``, and the variants measured and not taken: ``--no-query-words``
(the expanded query without the question's own words), ``--fuse-weight W``
(the lane's share in the fusion), ``--idf-power P`` (a term's gain ∝ idf^P),
``--norm``, ``--covered S --covered-weight W``; and ``--terms-latin N``,
``--max-share X`` (the chosen settings' neighbours).
"""

from __future__ import annotations

import argparse
import dataclasses
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen  # noqa: E402,F401  (puts the repository on sys.path)

from sediment.search import postings as P  # noqa: E402
from sediment.search import query as S  # noqa: E402
from sediment.search.feedback import Feedback  # noqa: E402


@dataclasses.dataclass(frozen=True, slots=True)
class Covered(Feedback):
    """``--covered S --covered-weight W``: when the best direct hit of the
    rare-term lane has S of the query's idf, the lane is fused at W."""
    covered: float = 2.0
    covered_weight: float = 1.0

    def damp(self, rankings, words):  # type: ignore[no-untyped-def]
        rare = dict(rankings).get("rare")
        total = sum(w for w, _ in words.terms) or 1.0  # (query weights: 1 or more)
        return self.covered_weight if self.covered <= 1 and rare and rare[0][0] >= self.covered * total else 1.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--delta", type=float, default=None, help=f"BM25+ delta (default {P.DELTA})")
    p.add_argument("--feedback", default=None, help="DOCS,TERMS,WEIGHT or off (default: the policy's)")
    p.add_argument("--no-query-words", action="store_true")
    p.add_argument("--fuse-weight", type=float, default=1.0)
    p.add_argument("--idf-power", type=float, default=1.0)
    p.add_argument("--terms-latin", type=int, default=None,
                   help="expansion terms for a query without CJK text (default: TERMS if given, else the policy's)")
    p.add_argument("--max-share", type=float, default=None, help="expansion terms in at most this share of documents")
    p.add_argument("--norm", default="length", choices=["length", "sqrt", "doc"],
                   help="a feedback document's term gains: tf/length, tf/sqrt(length), or over its best")
    p.add_argument("--covered", type=float, default=2.0,
                   help="when the best direct hit covers this share of the query's idf ...")
    p.add_argument("--covered-weight", type=float, default=1.0, help="... the feedback lane is fused at this weight")
    p.add_argument("script", help="a benchmark in this folder, e.g. bench_locomo.py")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if a.delta is not None:
        P.DELTA = a.delta
    if a.feedback == "off":
        S.feedback = lambda policy: None
    else:
        base = S.feedback
        docs = terms = weight = None
        if a.feedback:
            docs, terms, weight = (f(x) for f, x in zip((int, int, float), a.feedback.split(",")))

        def feedback(policy):  # type: ignore[no-untyped-def]
            d = base(policy) or Feedback()
            return Covered(docs or d.docs, terms or d.terms, d.weight if weight is None else weight,
                           terms_latin=a.terms_latin or terms or d.terms_latin,
                           with_query=not a.no_query_words, fuse_weight=a.fuse_weight, idf_power=a.idf_power,
                           norm=a.norm, max_share=d.max_share if a.max_share is None else a.max_share,
                           max_share_latin=d.max_share_latin if a.max_share is None else a.max_share,
                           covered=a.covered, covered_weight=a.covered_weight)
        S.feedback = feedback
    script = HERE / a.script
    print(f"ranking: delta {P.DELTA}; feedback {a.feedback or 'policy'}"
          + (f", latin terms {a.terms_latin}" if a.terms_latin else "")
          + (f", max share {a.max_share}" if a.max_share is not None else "")
          + (f", norm {a.norm}" if a.norm != "length" else "")
          + (f", covered {a.covered} -> {a.covered_weight}" if a.covered <= 1 else "")
          + (", no query words" if a.no_query_words else "")
          + (f", fuse weight {a.fuse_weight}" if a.fuse_weight != 1 else "")
          + (f", idf power {a.idf_power}" if a.idf_power != 1 else ""), flush=True)
    sys.argv = [str(script), *a.args]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
