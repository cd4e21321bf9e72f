"""The package's shape: imports point one way (no cycles, not even under
TYPE_CHECKING or inside functions), the layers stay in order, the front door
documents every verb, and the public surface stays what it is."""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import re
import textwrap
import typing
from pathlib import Path

import pytest

import sediment
from sediment import Repository
from sediment.cli.main import COMMANDS

PKG = Path(sediment.__file__).parent
README = (PKG.parent / "README.md").read_text(encoding="utf-8")

# The folders (and the top-level modules) from the bottom up. A module imports
# from its own folder or from one below it, never above: the model knows nothing
# of files, the engine nothing of the verbs, the verbs nothing of their callers.
# Inside a folder the order is what the no-cycle test below leaves free.
PACKAGES = [
    "_version", "errors", "progress",                  # what everything may name
    "model", "disk", "search", "view", "store",        # the engine: values, files, the index, the view, the writer
    "semantic",                                        # the optional lane, over the store
    "verbs", "agent", "sync",                          # what a memory does, what an agent asks, what git carries
    "repository",                                      # the front door: wires the above
    "mcp", "integrations", "web", "cli",               # the interfaces
    "__init__", "__main__",
]
ORDER = {p: i for i, p in enumerate(PACKAGES)}
# No import chain inside the package longer than this many modules: how far a
# reader follows one call down (it was 20 when the package was flat).
DEEPEST = 12


def _module(path: Path) -> str:
    """The module's name inside the package: ``view``, ``integrations``
    (a subpackage's ``__init__``), ``integrations.anthropic``."""
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, mods: set[str], *, typing_only: bool = True) -> set[str]:
    """Every sediment module this file imports, wherever the import stands
    (but under ``if TYPE_CHECKING:`` when ``typing_only`` is False)."""
    here = _module(path)
    package = here.split(".") if path.name == "__init__.py" and here != "__init__" else here.split(".")[:-1]

    def known(dotted: list[str], names: list[str]) -> set[str]:
        found = {".".join(dotted + [n]) for n in names if ".".join(dotted + [n]) in mods}
        while dotted and ".".join(dotted) not in mods:
            dotted = dotted[:-1]
        return found or {".".join(dotted) if dotted else "__init__"}

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for_types: set[int] = set()
    if not typing_only:
        for block in ast.walk(tree):
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
                for_types |= {id(n) for stmt in block.body for n in ast.walk(stmt)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in for_types:
            continue
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = package[:len(package) - (node.level - 1)]
            out |= known(base + (node.module.split(".") if node.module else []), [a.name for a in node.names])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sediment":
            out |= known(node.module.split(".")[1:], [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("sediment."):
                    out |= known(a.name.split(".")[1:], [])
    return out


def _files() -> dict[str, Path]:
    """Every module of the package, subpackages' too."""
    return {_module(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def _graph(*, typing_only: bool = True) -> dict[str, set[str]]:
    mods = _files()
    return {m: _imports(p, set(mods), typing_only=typing_only) - {m} for m, p in mods.items()}


def _folder(module: str) -> str:
    return module.split(".")[0]


def test_every_module_has_a_place_in_the_order():
    assert {_folder(m) for m in _graph()} == set(ORDER), "add the new folder to PACKAGES in this test"


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                pytest.fail("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_imports_point_down_the_folders():
    wrong = [f"{m} -> {d}" for m, deps in _graph().items() for d in deps
             if _folder(d) != _folder(m) and ORDER[_folder(d)] >= ORDER[_folder(m)]]
    assert wrong == []


def _chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest import chain (the graph has no cycle: tested above)."""
    longest: dict[str, list[str]] = {}

    def down(m: str) -> list[str]:
        if m not in longest:
            longest[m] = [m] + max((down(d) for d in sorted(graph[m])), key=len, default=[])
        return longest[m]

    return max((down(m) for m in sorted(graph)), key=len)


def test_no_import_chain_is_deeper_than_a_reader_follows():
    # The imports that run. A class named for the type checker only (the page's
    # modules name ``Repository``, the verbs they call) is an interface, not a
    # chain of modules loaded and followed; it still counts for cycles and order.
    chain = _chain(_graph(typing_only=False))
    assert len(chain) <= DEEPEST, " -> ".join(chain)


def test_the_chain_measure_sees_a_deep_chain():
    # the measure itself: a chain of DEEPEST + 1 modules is found whole
    graph = {f"m{i}": {f"m{i + 1}"} for i in range(DEEPEST)} | {f"m{DEEPEST}": set()}
    assert len(_chain(graph)) == DEEPEST + 1


def test_cjk_ranges_are_spelled_in_the_lexicon_only():
    """What a CJK character is, is said once (``model/lexicon.py``): a module
    that needs the ranges imports them, so that no copy drifts from the rest
    (there were four, and two of them disagreed)."""
    spelled = re.compile(r'\\u(?:3[0-4]|4[de]|9f|f[9a]|ac|d7|ff)[0-9a-fA-F]{2}(?:-|"\s*<=)')
    assert [m for m, p in _files().items()
            if m != "model.lexicon" and spelled.search(p.read_text(encoding="utf-8"))] == []


def test_modules_stay_small():
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in _files().items()}
    assert {n: s for n, s in sizes.items() if s > 500} == {}


def test_the_front_door_only_wires():
    """Each verb of ``Repository`` (its groups in ``sediment/repository/``) is
    its docstring and one statement handing the call to the module that does
    the work: logic that creeps into the front door fails here."""
    thick = {}
    for verb in _verbs() + ["__contains__", "__len__", "__iter__"]:
        fn = inspect.unwrap(getattr(Repository, verb))
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            thick[verb] = len(body)
    assert thick == {}


def test_public_surface_is_pinned():
    assert sorted(sediment.__all__) == sorted([
        "Repository", "Entry", "SearchHit", "Problem", "parse", "render", "LAYERS",
        "Strength", "Plan", "Context", "Observed", "Working", "Mood", "About", "Profile", "Proposed", "ConflictPair",
        "Report", "Palace", "Source", "Turn", "Consolidation", "SyncResult", "Forecast", "History", "Attention",
        "SedimentError", "NotFound", "Ambiguous", "Conflict", "InvalidInput", "UnsafePath", "TooLarge",
        "PolicyError", "PolicyFileError", "ParseError", "LockTimeout", "StorageError", "__version__",
    ])
    assert all(hasattr(sediment, name) for name in sediment.__all__)


def _named(annotation: object) -> set[type]:
    """The classes an annotation names (``list[Entry] | None``: Entry), but builtins."""
    args = typing.get_args(annotation)
    if args:
        return set().union(*(_named(a) for a in args))
    named = isinstance(annotation, type) and annotation.__module__ not in ("builtins", "typing")
    return {annotation} if named else set()


def test_every_type_a_verb_returns_is_importable_from_sediment():
    """A caller can name what it gets back: ``from sediment import Context``."""
    missing = {}
    for verb in _verbs():
        fn = getattr(Repository, verb)
        fn = getattr(fn, "__wrapped__", fn)
        # a verb group imports what its verbs return for the type checker only
        # (``part.Later``: imported when called); such a name must then be a
        # public one of sediment, or it does not resolve (NameError) here
        names = {**{n: getattr(sediment, n) for n in sediment.__all__}, **vars(inspect.getmodule(fn))}
        ret = fn.__annotations__.get("return")
        for cls in _named(eval(ret, names) if isinstance(ret, str) else ret):  # (as get_type_hints resolves it)
            if getattr(sediment, cls.__name__, None) is not cls or cls.__name__ not in sediment.__all__:
                missing[verb] = f"{cls.__module__}.{cls.__name__}"
    assert missing == {}


# --------------------------------------------------------------------------- verbs

def _verbs() -> list[str]:
    """The verbs: every public method of Repository and of its groups."""
    return sorted({n for cls in Repository.__mro__[:-1] for n, f in vars(cls).items()
                   if not n.startswith("_") and callable(f) and n not in ("close",)})


# Verbs without a CLI command, and why. Later issues empty this list.
NO_CLI = {
    "refresh": "each CLI call opens the root afresh, which rescans it",
    "consolidate_with": "takes a Python callable (the LLM); library only",
    "edit": "takes a Python callable (the new body from the old); `sediment update --text` edits from a shell",
    "strengths": "every memory at once, for programs and the page (sediment view); strength ID for one",
    "forecast": "a plot on a memory's card in the page (sediment view)",
    "history": "a memory's card in the page (sediment view) lists its uses with dates",
    "attention": "a heat map in the page (sediment view)",
}
# Verb parameters a CLI command spells otherwise (verb, parameter) → option dest.
CLI_NAMES = {("search", "include_archive"): "archive", ("search", "include_superseded"): "superseded",
             ("consolidate", "fragment_ids"): "fragments",
             ("touch", "outcome"): "outcome", ("supersede", "old_id"): "old", ("supersede", "new_id"): "new",
             ("metabolize", "dry_run"): "apply", ("import_", "dry_run"): "apply"}
# Verb parameters with no CLI option, and why.
NO_OPTION = {("watch", "on_change"): "a callback: `sediment watch --verbose` prints each change instead",
             ("list", "tag"): "an alias of tags"}
# CLI options with no verb parameter, and why.
CLI_ONLY_OPTIONS = {("watch", "verbose"): "prints each change (the library's on_change)",
                    ("watch", "seconds"): "the library's watch() lasts as long as its block"}
# CLI commands that are not a Repository verb of the same name.
CLI_ONLY = {"init": "creates a root (Repository(create=True))",
            "clone": "creates a root from a git remote",
            "merge-driver": "run by git during a merge, not a verb of a memory",
            "serve": "the MCP server (sediment[mcp]): the verbs as tools, TOOL_VERBS below",
            "view": "the page (sediment[view]): a person looks at the memory in a browser"}


def test_every_verb_has_a_docstring_with_an_example_that_runs():
    # the examples themselves run as doctests (pytest --doctest-modules)
    missing = [v for v in _verbs() if ">>>" not in (getattr(Repository, v).__doc__ or "")]
    assert missing == []


def _command(verb: str) -> str:
    return verb.rstrip("_").replace("_", "-")  # links_to → sediment links-to; import_ → sediment import


def test_every_verb_has_a_cli_command_and_every_command_a_verb():
    verbs = _verbs()
    assert sorted(v for v in verbs if _command(v) not in COMMANDS and v not in NO_CLI) == []
    assert sorted(c for c in COMMANDS if c not in {_command(v) for v in verbs} and c not in CLI_ONLY) == []
    assert all(v in verbs and _command(v) not in COMMANDS for v in NO_CLI), "a listed exception is out of date"


def test_every_verb_is_in_the_readme():
    # a row of the verb table in "The library" (`verb(…)`), or a `repo.verb(` example
    assert [v for v in _verbs() if not re.search(rf"`(repo\.)?{v}\(", README)] == []


def _dests(command: str) -> set[str]:
    from sediment.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest for a in sub.choices[command]._actions}


def test_every_verb_parameter_is_a_cli_option_and_every_option_a_parameter():
    """The CLI is the API: the same options as the verb, both ways."""
    missing, extra = [], []
    for verb in _verbs():
        if verb in NO_CLI:
            continue
        params = inspect.signature(getattr(Repository, verb)).parameters
        dests = _dests(_command(verb)) - {"help", "json", "root", "shared"}
        named = set()
        for name, p in params.items():
            if name == "self" or (verb, name) in NO_OPTION:
                continue
            if p.kind is p.VAR_KEYWORD:  # **fields: sections and --field KEY=VALUE
                if verb != "update" and not {"fields", "evidence"} <= dests:
                    missing.append(f"{verb}(**{name})")
                named |= {"fields", "evidence", "hesitation", "conclusion", "context", "gesture", "direction",
                          "unset", "text", "title", "tags", "add_tags", "remove_tags", "kind", "value", "source",
                          "links", "event", "room"}
                continue
            dest = CLI_NAMES.get((verb, name), name)
            named.add(dest)
            if dest not in dests:
                missing.append(f"{verb}({name})")
        extra += [f"{verb}: --{d}" for d in sorted(dests - named) if (verb, d) not in CLI_ONLY_OPTIONS]
    assert missing == [] and extra == []


# --------------------------------------------------------------------------- MCP tools

# Verbs with no MCP tool, and why: the tool set is a curated few (every tool's
# description costs each agent's context, and fewer tools are chosen better).
NO_TOOL = {
    "move": "a layer change is metabolize's decision or a person's",
    "purge": "forget(purge=true, confirm=true)",
    "check": "a person's health report (sediment check)",
    "stats": "about, and the sediment://map resource",
    "consolidate": "inbox fragments are a person's or a batch job's (sediment consolidate)",
    "links_to": "read shows a note's links; backlinks are for a person's review",
    "strength": "recall and about say how strong; the parts of the number are for people",
    "strengths": "every memory's strength: for programs and the page (sediment view), not a model's call",
    "forecast": "a strength curve is for people (the page's card)",
    "history": "about gives a memory's counts; the dates are for people (the page's card)",
    "attention": "where attention went is for people (the page's heat map)",
    "refresh": "the server's root is current: every read syncs with other processes",
    "watch": "each read syncs; a watcher is for long-lived library users",
    "recover": "runs at every open",
    "adopt": "a person's note becomes a memory by a person's decision (sediment adopt)",
    "mood": "the host sets the mood from the conversation; context shows it",
    "map": "the sediment://map resource",
    "conflicts": "patrol lists the conflict candidates, with ids and what to do",
    "graph": "a diagram for people (sediment graph)",
    "add_source": "storing the raw conversation is the host's job (the agent loop), not a model's tool call",
    "unlinked_sources": "the input of a batch job (consolidate_with)",
    "consolidate_with": "a batch job with its own model, run by the host",
    "embed": "vectors are computed in the background; embed is for scripts and tests (sediment embed)",
    "sync": "moving a memory between machines is the host's schedule (sediment sync), not a model's call",
    "recalled": "recall counts the hits it shows; a tool to count them again would let a model promote by hand",
    "locate": "read takes an id, a name or a path",
    "markdown": "the sediment://memory/{id} resource",
    "report": "the sediment://patrol/latest and sediment://map resources",
    "edit": "update, with the version read (expected)",
    "export": "taking every memory out is a person's or a host's job (sediment export), not a model's call",
    "import_": "bringing memories in is a person's decision (sediment import), not a model's call",
    "propose_entities": "names in a note's text, for a person to choose from (sediment propose-entities)",
    "apply_entities": "writing proposed names into a note is a person's choice (sediment apply-entities); "
                      "remember(entities=…) names them as a memory is made",
}
# Tool parameters that are no verb parameter, and why.
TOOL_ONLY_PARAMS = {
    "budget": "every answer is packed into it",
    "request_id": "write tools: a retry with the same id returns the first answer",
    ("read", "start"): "a long note is read in character ranges",
    ("forget", "purge"): "forget(purge=true) is the purge verb",
    ("forget", "confirm"): "purge's confirm",
    ("forget", "erase"): "purge's erase (forget(erase=true) is purge(erase=True))",
}


def _tools() -> dict[str, set[str]]:
    pytest.importorskip("mcp")
    from sediment.mcp.server import Tools
    from sediment.mcp.tools import tools
    return {t.name: set(t.parameters["properties"]) for t in tools(Tools(PKG, open=Repository))}


def test_every_mcp_tool_is_a_verb_and_every_verb_a_tool_or_left_out_on_purpose():
    from sediment.mcp.server import DESCRIPTIONS, TOOL_VERBS
    tools, verbs = _tools(), _verbs()
    assert set(tools) == set(TOOL_VERBS) == set(DESCRIPTIONS)
    assert [v for v in TOOL_VERBS.values() if v not in verbs] == []
    assert sorted(v for v in verbs if v not in TOOL_VERBS.values() and v not in NO_TOOL) == []
    assert [v for v in NO_TOOL if v not in verbs] == [], "a listed exception is out of date"


def test_every_mcp_tool_parameter_is_a_verb_parameter():
    from sediment.mcp.server import TOOL_VERBS
    extra = []
    for tool, params in _tools().items():
        verb = getattr(Repository, TOOL_VERBS[tool])
        sig = inspect.signature(verb).parameters
        takes_fields = any(p.kind is p.VAR_KEYWORD for p in sig.values())
        extra += [f"{tool}({p})" for p in sorted(params) if p not in sig and not takes_fields
                  and p not in TOOL_ONLY_PARAMS and (tool, p) not in TOOL_ONLY_PARAMS]
    assert extra == []


# --------------------------------------------------------------------------- what a call imports

# What `sediment search` must not load (issue: import what the call needs): the
# agent's verbs, git, the MCP server, the page, the semantic lane, and the
# optional libraries behind them.
NOT_FOR_A_SEARCH = ("sediment.agent", "sediment.sync", "sediment.mcp", "sediment.web", "sediment.semantic",
                    "sediment.integrations", "mcp", "numpy", "starlette", "anthropic", "git")
_SEARCH_IN_A_FRESH_PROCESS = """
import json, sys
from sediment.cli.main import main
code = main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def _modules_of_a_search(root: Path, query: str) -> tuple[str, set[str]]:
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": str(PKG.parent)}
    run = subprocess.run([sys.executable, "-c", _SEARCH_IN_A_FRESH_PROCESS, "--root", str(root), "search", query],
                         capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    import json
    return run.stdout, set(json.loads(run.stderr.strip().splitlines()[-1]))


def test_a_search_in_a_fresh_process_imports_what_it_needs_only(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as repo:
        repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        repo.add("移动端登录用 PKCE", tags=["auth"], kind="fact")
    out, mods = _modules_of_a_search(root, "how do we deploy")
    assert "Deploy tool" in out  # (it searched, and found)
    assert sorted(m for m in mods if m.split(".")[0] in NOT_FOR_A_SEARCH[-6:]
                  or m.startswith(NOT_FOR_A_SEARCH[:6])) == []
    # an English question needs no CJK segmenter: its dictionary never loads
    assert {"rjieba", "jieba"} & mods == set()
    if os.name == "posix":  # the recalls it records take the lock with flock itself (disk/files._try_lock)
        assert "portalocker" not in mods
    out, mods = _modules_of_a_search(root, "移动端登录")
    assert "PKCE" in out
    # a Chinese question loads rjieba's compiled module, but not its package,
    # whose import builds the whole dictionary: a Jieba taught only the
    # question's words cuts it the same (search/segdict.py)
    assert {"rjieba", "jieba"} & mods == set()
    assert [m for m in mods if m.startswith(NOT_FOR_A_SEARCH[:6])] == []
