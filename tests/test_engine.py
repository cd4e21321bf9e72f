"""The engine's shape (model, search, view, store): the value type imports
nothing of the engine above it, and each folder keeps to its share of the
package's import depth, so that no import chain inside ``sediment/`` grows
past 12 modules. Depth: the modules in the longest chain of imports that
starts at a module (every import counts: module level, inside functions,
under TYPE_CHECKING); a module that imports none has depth 1."""

from __future__ import annotations

import functools

from test_structure import _graph

# the longest chain a module may start, by module, else by its folder
BUDGET = {"model.entry": 3, "model": 4, "search.index": 4, "search.query": 5, "view": 6, "store": 7}


def _chains() -> dict[str, list[str]]:
    """Each module's longest chain of imports (itself first)."""
    graph = _graph()

    @functools.cache
    def longest(m: str) -> tuple[str, ...]:
        below = [longest(d) for d in sorted(graph[m])]
        return (m, *max(below, key=len, default=()))

    return {m: list(longest(m)) for m in graph}


def _budget(module: str) -> int | None:
    if module in BUDGET:
        return BUDGET[module]
    folder = module.split(".")[0]
    return BUDGET.get(folder) if "." in module else None


def test_the_model_imports_nothing_but_the_model():
    """``Entry`` and the other values know nothing of the view that keeps
    them, of the index or of the disk."""
    graph = _graph()
    wrong = {m: sorted(d for d in deps if d.split(".")[0] not in ("model", "errors"))
             for m, deps in graph.items() if m.startswith("model.")}
    assert {m: deps for m, deps in wrong.items() if deps} == {}


def test_the_engine_keeps_to_its_import_depth():
    over = {m: " > ".join(chain) for m, chain in _chains().items()
            if (budget := _budget(m)) is not None and len(chain) > budget}
    assert over == {}


def test_moves_and_the_watcher_do_not_sit_on_the_store_or_the_view():
    """They take what they use of the store and the view as a Protocol, so
    that a chain does not run through them into the whole store or view."""
    graph = _graph()
    assert "store.store" not in graph["store.moves"]
    assert "view.view" not in graph["view.watch"]
    assert "view.view" not in graph["store.system"]
