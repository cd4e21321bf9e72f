"""The command of the semantic lane: ``sediment embed``."""

from __future__ import annotations

import argparse
from typing import Any

from .kit import command, open_repo


@command("embed", "compute the semantic lane's missing vectors now (extra sediment[semantic]; "
                  "turns the lane on for this command even when policy.yaml has it off)")
def cmd_embed(ns: argparse.Namespace) -> tuple[Any, str]:
    with open_repo(ns, semantic=True) as repo:
        out = repo.embed()
        status = repo.semantic.status() if repo.semantic is not None else {}
    return {**out, **status}, (f"embedded {out['embedded']} memories in {out['seconds']:.1f} s; "
                               f"{status.get('vectors', 0)} of {status.get('memories', 0)} have a vector "
                               f"({out['model']})")
