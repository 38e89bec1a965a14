"""The package's shape: no import cycle, no import from the core up into a stage, no module
too big to read. Walks every module's imports, top-level and inside functions alike (a lazy
import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

import paramill

PACKAGE = Path(paramill.__file__).parent
#: the pipeline's stages: each a package, importing the core and (for contracts) each other
STAGES = {"bitext", "pairs", "nmt", "filters", "embed", "twitter", "lexicon", "evaluate", "report"}
#: top-level modules that compose the stages (the command line, the config and its schema);
#: every other top-level module is core, and imports no stage
COMPOSITION = {"cli", "commands", "config", "schema", "peek"}
MAX_LINES = 450


def module_name(path: Path) -> str:
    parts = ["paramill", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _target(name: str) -> str | None:
    """The package module ``name`` refers to (a symbol's module when it names a symbol)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str) -> set[str]:
    """Every paramill module ``name`` imports, anywhere in its body."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {t for t in map(_target, (t for t in targets if t.startswith("paramill"))) if t}
    found.discard(name)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), plus packages
    whose __init__ is imported by a module of their own that it imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _stage(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_the_walk_sees_lazy_and_relative_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert "paramill.io" in GRAPH["paramill.dedup"]  # top level
    assert "paramill.filters.tokens" in GRAPH["paramill.filters.cli"]  # inside a function


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_the_core_imports_no_stage():
    core = [n for n in MODULES if n.count(".") >= 1 and not _stage(n)
            and n.split(".")[1] not in COMPOSITION]
    assert "paramill.dedup" in core and "paramill.io" in core
    assert "paramill.formats.tsv" in core  # the core's own packages, module by module
    upward = {n: sorted(d for d in GRAPH[n] if _stage(d)) for n in core}
    assert {n: d for n, d in upward.items() if d} == {}


def test_no_module_is_too_big_to_read():
    sizes = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_inputs_are_decoded_strictly():
    """Input text is decoded by ``paramill.io``'s line stream (through ``paramill.formats``):
    a line that is not UTF-8 is an error or a rejected row naming file and line, never text
    with replacement characters. Decoding leniently is left to showing a bad line
    (``paramill.io.shown_text``) and to web pages (the URL resolver's card titles)."""
    allowed = {"paramill.io", "paramill.twitter.urls"}
    lenient = {name for name, path in MODULES.items()
               if any(isinstance(node, ast.Constant) and node.value == "replace"
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert lenient - allowed == set()


def test_parquet_a_step_reads_whole_is_read_with_its_checksums():
    """``pl.read_parquet`` verifies no page checksum; a table a step reads whole goes through
    ``paramill.tables.read_frame``. Left: a step's own scratch, written by polars without
    checksums (``select``'s parts, ``lexicon build``'s partitions)."""
    allowed = {("paramill.filters.select", "part"), ("paramill.lexicon.pmi", "files")}
    found = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "read_parquet" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "pl"):
                first = node.args[0] if node.args else None
                found.add((name, first.id if isinstance(first, ast.Name) else ast.dump(first)))
    assert found - allowed == set()


def _top_level_names(body: list[ast.stmt], imported: dict, defined: dict) -> None:
    """The names a module's top level imports and those it binds otherwise (assignments,
    functions, classes), each with its first line; the branches of ``if`` and ``try``
    included."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported.setdefault((alias.asname or alias.name).split(".")[0], node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined.setdefault(name.id, node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.setdefault(node.name, node.lineno)
        elif isinstance(node, ast.If):
            _top_level_names(node.body + node.orelse, imported, defined)
        elif isinstance(node, ast.Try):
            _top_level_names(node.body, imported, defined)


def test_no_module_rebinds_a_name_it_imports():
    """A module-level name bound again after its import replaces it for the whole module: a
    constant named like one imported (``COUNTS``, the stats schema's counts) turned a JSON
    Schema check into one that passed ``null``, and only a hostile-input test saw it."""
    found = {}
    for name, path in MODULES.items():
        imported, defined = {}, {}
        _top_level_names(ast.parse(path.read_text(encoding="utf-8")).body, imported, defined)
        for both in set(imported) & set(defined):
            found[f"{name}.{both}"] = (imported[both], defined[both])
    assert found == {}
