"""An agent loop that builds its system prompt with ``context()`` every turn
and feeds what was said to ``observe()``. No LLM: the conversation is scripted.

    python examples/agent_context.py              # on a throwaway copy of memory_root/
    python examples/agent_context.py --root DIR   # on DIR (created if missing)
    python examples/agent_context.py --show 3     # print the whole block of turn 3

Each turn:

1. ``repo.context(user_message, budget=…)`` — who I am, unfinished business
   (working memory), what this message reminds me of, the strongest of the
   rest — goes into the system prompt; the reminders count as recalled;
2. the model answers (here: the scripted reply);
3. ``repo.observe()`` reads both messages: a promise or a todo opens an item
   of working memory, a "done" closes the item it is about, and the next
   turn's block shows what is still open.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

try:
    import sediment  # noqa: F401
except ImportError:  # a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sediment import Repository

EXAMPLE_ROOT = Path(__file__).resolve().parent.parent / "memory_root"
MACHINE_LOCAL = {"lock", "journal.log", "cache", "usage", "reports", "working"}
SYSTEM = "You are a coding agent pairing with the user. Use the memories below when they help."
BUDGET = 3000

# (user, agent, mood the agent notes for itself or None)
SCRIPT = [
    ("新同事问：移动端登录为什么不直接用 client secret？",
     "因为 App 的安装包可以被反编译，密钥等于公开；所以用 PKCE。我明天把 PKCE 的说明整理好发给他。", None),
    ("The staging deploy has been stuck for 20 minutes.",
     "ArgoCD may have polled before the image tag existed. I'll check the sync status after lunch.", None),
    ("别忘了周五前续费 login.example.com 的证书。今天好累。",
     "好的，记下了。", "用户今天很累：回答只给结论"),
    ("PKCE 的说明发给新同事了吗？", "已经发给他了，附了 code_verifier 的例子。", None),
    ("Is staging OK now?", "Yes: I fixed the staging sync with a manual refresh in ArgoCD.", None),
]


def open_root(root: str | None, stack: ExitStack) -> Repository:
    if root:
        return stack.enter_context(Repository(root))
    # Never run the demo on the committed example: its files would change under git.
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sediment-demo-")))
    copy = tmp / "memory_root"
    shutil.copytree(EXAMPLE_ROOT, copy, ignore=lambda folder, names: (
        [n for n in names if n in MACHINE_LOCAL] if Path(folder).name == "_system" else []))
    return stack.enter_context(Repository(copy))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="memory root (default: a temporary copy of memory_root/)")
    parser.add_argument("--show", type=int, default=len(SCRIPT), help="print the whole block of this turn")
    args = parser.parse_args(argv)
    # one fixed clock, a minute a turn, so two runs print the same blocks
    now = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)

    with ExitStack() as stack:
        repo = open_root(args.root, stack)
        print(f"memory root: {repo.root}  ({len(repo)} memories)")
        for turn, (user, reply, mood) in enumerate(SCRIPT, 1):
            now += dt.timedelta(minutes=1)
            ctx = repo.context(user, budget=BUDGET, now=now)
            prompt = f"{SYSTEM}\n\n{ctx}"  # what the model would be given
            print(f"\n--- turn {turn}: system prompt {len(prompt)} chars, block {ctx.size}/{BUDGET} "
                  f"(~{ctx.tokens} tokens), left out {dict(ctx.omitted)}")
            print(f"user:  {user}")
            for item in ctx.items:
                if item.section == "reminds":
                    print(f"  reminded of [[{item.name}]]")
            open_now = [i.snippet for i in ctx.items if i.section == "working"]
            if open_now:
                print(f"  unfinished: {open_now}")
            if turn == args.show:
                print(prompt)
            print(f"agent: {reply}")
            if mood:
                repo.mood(mood, now=now)
            for text in (user, reply):
                seen = repo.observe(text, now=now)
                for i in seen.opened:
                    print(f"  opened: {i.text}")
                for i in seen.closed:
                    print(f"  closed: {i.text}")
        left = repo.working(now=now)
        print("\nstill open:", [i.text for i in left.items], "| mood:", left.mood.text if left.mood else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
