"""An agent loop on top of sediment: recall before answering, remember after.

    python examples/agent_loop.py              # works on a throwaway copy of memory_root/
    python examples/agent_loop.py --root DIR   # works on DIR (created if missing)

Each simulated user turn goes through the same four steps an agent would take:
search the memories for the turn, show what was recalled, answer, and write down
what the turn taught. At the end one memory is revised with optimistic
concurrency, the way an agent must when another process (a second agent, a
person in Obsidian) may edit the same note.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

try:
    import sediment
except ImportError:  # a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import sediment

from sediment import Conflict, Repository

EXAMPLE_ROOT = Path(__file__).resolve().parent.parent / "memory_root"
# Machine-local files in _system/: the copy must not inherit another run's lock,
# journal, caches or recall counts.
MACHINE_LOCAL = {"lock", "journal.log", "cache", "usage", "reports"}


@dataclass
class Turn:
    user: str
    learned: str                      # what the agent writes down afterwards
    title: str
    room: str
    kind: str
    tags: list[str] = field(default_factory=list)


TURNS = [
    Turn(user="新同事问：移动端登录为什么不直接用 client secret？帮我准备一段解释。",
         learned="团队来了一位新的 Android 同事，对 OAuth 不熟。给他讲 PKCE 时从"
                 "「App 里保存不了密钥」讲起，再讲 code_verifier。",
         title="新同事负责 Android 端", room="user", kind="fact", tags=["团队", "移动端"]),
    Turn(user="The staging deploy has been stuck for 20 minutes. How do we usually ship to staging?",
         learned="A staging sync hung because the image tag was pushed after ArgoCD had polled; "
                 "a manual refresh in ArgoCD fixed it. Check that the tag exists before waiting.",
         title="ArgoCD sync stuck on a late image tag", room="infra", kind="skill",
         tags=["deploy", "staging", "argocd"]),
    Turn(user="Android 用户又反馈用了一天就被登出，和 refresh token 有关吗？",
         learned="用户拿到了两台被提前登出的设备：系统时间都比服务器快 3 分钟左右。",
         title="被登出的设备时钟快了 3 分钟", room="auth", kind="fact",
         tags=["token", "移动端", "证据"]),
]


def open_root(args: argparse.Namespace, stack: ExitStack) -> Repository:
    if args.root:
        return stack.enter_context(Repository(args.root))
    # Never run the demo on the committed example: its files would change under git.
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sediment-demo-")))
    copy = tmp / "memory_root"
    shutil.copytree(EXAMPLE_ROOT, copy, ignore=lambda folder, names: (
        [n for n in names if n in MACHINE_LOCAL] if Path(folder).name == "_system" else []))
    return stack.enter_context(Repository(copy))


def answer(hits: list[sediment.SearchHit]) -> str:
    # Stands in for the LLM call: a real agent would put the hits into the prompt.
    # Citing [[names]] lets a person follow the answer back to the notes.
    if not hits:
        return "(nothing remembered about this; answering from scratch)"
    cited = ", ".join(f"[[{h.entry.name}]]" for h in hits[:2])
    return f"Based on {cited}: {hits[0].entry.text.splitlines()[0]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="memory root to use (default: a temporary copy of "
                                       "the repository's memory_root/)")
    args = parser.parse_args(argv)
    session = "session-demo-" + dt.datetime.now().astimezone().strftime("%Y%m%d-%H%M%S")

    with ExitStack() as stack:
        repo = open_root(args, stack)
        print(f"memory root: {repo.root}  ({len(repo)} memories)\n")

        # Bedrock is identity and hard rules: it goes into every prompt, not only
        # when a query happens to match it.
        print("always in context:")
        for e in repo.list(layer="bedrock"):
            print(f"  - {e.title}  [{e.kind}]")

        written = []
        for i, turn in enumerate(TURNS, 1):
            print(f"\n--- turn {i} " + "-" * 50)
            print(f"user: {turn.user}")
            hits = repo.search(turn.user, limit=3)
            for h in hits:
                print(f"  recalled {h.score:.4f}  {h.entry.layer}/{h.entry.name}")
            print(f"agent: {answer(hits)}")

            # New notes start in shallow/: metabolize promotes them only if they
            # turn out to be used, so a wrong guess costs nothing permanent.
            note = repo.add(turn.learned, title=turn.title, room=turn.room, kind=turn.kind,
                            tags=turn.tags, source=session,
                            links=[h.entry.name for h in hits[:1]])
            written.append(note)
            print(f"  remembered → {note.path}")

        # A name works wherever an id does, which is what [[links]] rely on.
        back = repo.get(written[0].name)
        print(f"\nread back {back.name!r}: id {back.id}, tags {list(back.tags)}, "
              f"source {back.source}")

        # Revise the hypothesis that turn 3's evidence bears on. The version read
        # here is what a concurrent edit will be detected against.
        found = repo.search("提前登出 时钟偏差", tags=["假设"], limit=1)
        seen = found[0].entry if found else written[2]  # a --root without the example notes
        evidence = f"- 两台被登出的设备时钟都快 3 分钟（[[{written[2].name}]]）"

        # Meanwhile another writer touches the same note (here a second handle on
        # the root; it could as well be another process or a text editor).
        with Repository(repo.root) as other:
            other.update(seen.id, value=0.5)

        for attempt in range(1, 4):
            try:
                evidence_now = (seen.sections.get("evidence", "") + "\n" + evidence).strip()
                revised = repo.update(seen.id, expected=seen.version, value=0.6,
                                      evidence=evidence_now)
                print(f"revised {revised.name!r} on attempt {attempt}: value {revised.value}, "
                      f"version {seen.version} → {revised.version}")
                break
            except Conflict:
                # Someone else's change wins the race; re-read and re-apply ours on
                # top rather than overwrite theirs.
                print(f"attempt {attempt}: {seen.name!r} changed since it was read; re-reading")
                seen = repo.get(seen.id)
        else:
            print("gave up after 3 conflicting attempts")
            return 1

        print("\nstats:")
        for key, val in repo.stats().items():
            print(f"  {key}: {val}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
