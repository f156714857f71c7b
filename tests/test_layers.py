"""The layer rule, written here once and enforced over every module of the installed package.

searchengine is built in layers. A sub-package may import itself and the layers it lists below, nothing else;
imports inside functions (the lazy ones) count too. The storage layer (indexer) knows nothing of models, the
encoders know nothing of indexes, only the command line imports training, and nothing imports the command line.
The integrations (adapters to other tools' interfaces) sit beside the server, whose served index they reuse; only
the command line imports them.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import searchengine

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "processes": set(),
    "indexer": {"errors"},
    "encoding": {"errors", "processes"},
    "evaluation": {"errors", "encoding"},
    "analysis": {"errors", "indexer"},
    "reading": {"errors", "indexer"},
    "engine": {"errors", "indexer", "encoding", "analysis", "reading"},
    "cluster": {"errors", "indexer", "encoding", "analysis", "engine", "reading", "processes"},
    "server": {"errors", "indexer", "encoding", "analysis", "engine", "reading", "cluster"},
    "training": {"errors", "indexer", "encoding", "evaluation", "engine", "reading", "processes"},
    "integrations": {"errors", "indexer", "encoding", "analysis", "engine", "server", "reading"},
    "cli": {
        "errors", "indexer", "encoding", "evaluation", "analysis", "engine", "server", "training", "integrations",
        "reading", "cluster", "processes",
    },  # fmt: skip
}
"""Each layer and the layers it may import. `searchengine/__init__.py` (lazy public names) and `__main__.py`
stand above them all."""

ROOT_MODULES = {"searchengine", "searchengine.__main__"}


def _package_files() -> dict[str, Path]:
    """Every module of the installed package by dotted name, wherever its folder lives (indexer/ and training/
    install as searchengine.indexer and searchengine.training)."""
    files: dict[str, Path] = {}
    # An editable install maps indexer/ and training/ in by name, so they are not in searchengine/'s folder.
    pending = ["searchengine"] + [
        f"searchengine.{layer}" for layer in ALLOWED if importlib.util.find_spec(f"searchengine.{layer}") is not None
    ]
    while pending:
        name = pending.pop()
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin, name
        files[name] = Path(spec.origin)
        for folder in spec.submodule_search_locations or []:
            for entry in sorted(Path(folder).iterdir()):
                if entry.is_dir() and (entry / "__init__.py").exists() and f"{name}.{entry.name}" not in files:
                    pending.append(f"{name}.{entry.name}")
                elif entry.suffix == ".py" and entry.name != "__init__.py":
                    files[f"{name}.{entry.stem}"] = entry
    return files


def _imported_modules(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return {name for name in found if name == "searchengine" or name.startswith("searchengine.")}


def _layer(module: str) -> str:
    return module.split(".")[1]


def test_every_module_belongs_to_a_layer() -> None:
    layers = {_layer(name) for name in _package_files() if name not in ROOT_MODULES}
    assert layers <= set(ALLOWED), f"add these to ALLOWED with the layers they may import: {layers - set(ALLOWED)}"


def test_imports_point_down_the_layers() -> None:
    files = _package_files()
    assert {"searchengine.indexer.tables.store", "searchengine.training.loop", "searchengine.cli"} <= set(files)
    violations = []
    for module, path in files.items():
        if module in ROOT_MODULES:
            continue
        own = _layer(module)
        for imported in _imported_modules(module, path):
            target = _layer(imported) if imported != "searchengine" else "searchengine"
            if target != own and target not in ALLOWED[own]:
                violations.append(f"{module} imports {imported} ({own} may import {sorted(ALLOWED[own])})")
    assert not violations, "\n".join(violations)


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: an indexer module importing the engine is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from searchengine.engine.search import Hit\n")
    assert _imported_modules("searchengine.indexer.bad", bad) == {"searchengine.engine.search"}
    assert "engine" not in ALLOWED["indexer"]


def test_the_package_root_is_the_only_public_import_name() -> None:
    assert Path(searchengine.__file__).parent.name == "searchengine"


def _import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module in `graph` (module -> the modules it imports): each
    is an import circle (Tarjan's algorithm, iterative)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in order:
            continue
        work = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, pending = work[-1]
            following = next(pending, None)
            if following is not None:
                if following not in order:
                    order[following] = low[following] = len(order)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph[following]))))
                elif following in on_stack:
                    low[module] = min(low[module], order[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == order[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    circles.append(sorted(group))
    return circles


def test_no_import_circle() -> None:
    """No module is in an import circle (lazy and type-only imports count): a reader or writer of the engine, a
    table of the store or a step of the upgrade chain can be imported, and understood, without the modules that
    use it."""
    files = _package_files()
    graph = {
        module: {imported for imported in _imported_modules(module, path) if imported in files and imported != module}
        for module, path in files.items()
    }
    circles = _import_circles(graph)
    assert not circles, "\n".join(" <-> ".join(group) for group in circles)


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _import_circles(graph) == [["a", "b", "c"]]


def test_the_architecture_page_states_the_same_rule() -> None:
    """docs/architecture.md's table of layers says what each may import; it must be ALLOWED, word for word, so the
    page a newcomer reads cannot drift from the rule this file enforces."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in page.splitlines() if line.startswith("| ") and line.count("|") == 5]
    stated = {cells[0].strip(): cells[3].strip() for cells in rows if cells[0].strip() in ALLOWED}
    expected = {
        layer: "nothing" if not allowed else "every layer above" if layer == "cli" else None
        for layer, allowed in ALLOWED.items()
    }
    assert set(stated) == set(ALLOWED)
    for layer, text in stated.items():
        if expected[layer] is not None:
            assert text == expected[layer], layer
        else:
            assert {name.strip() for name in text.split(",")} == ALLOWED[layer], layer
    assert ALLOWED["cli"] == set(ALLOWED) - {"cli"}, "the page says cli may import every other layer"
