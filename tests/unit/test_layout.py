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
#: the composition root: the top-level modules that import the stages (the command line, the
#: assembly of every stage's settings into the schema, and reading a file through a stage's
#: own reader); every other module outside a stage is shared, and imports no stage
COMPOSITION = {"cli", "schema", "peek"}
#: the shared packages, each one room: reading and writing files, the typed settings and job
#: resources, the job runtime, provenance, text, the input layouts
SHARED = {"io", "config", "run", "provenance", "text", "formats"}
#: at most this many modules at the top level beside the packages
MAX_TOP_LEVEL = 8
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
    assert "paramill.io.tableread" in GRAPH["paramill.text.dedup"]  # top level
    assert "paramill.filters.tokens" in GRAPH["paramill.filters.verbs"]  # inside a function


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_the_core_imports_no_stage():
    core = [n for n in MODULES if n.count(".") >= 1 and not _stage(n)
            and n.split(".")[1] not in COMPOSITION]
    assert "paramill.text.dedup" in core and "paramill.io.tableread" in core
    assert "paramill.formats.tsv" in core  # the core's own packages, module by module
    upward = {n: sorted(d for d in GRAPH[n] if _stage(d)) for n in core}
    assert {n: d for n, d in upward.items() if d} == {}


def test_the_core_is_a_few_rooms_and_only_the_composition_root_imports_every_stage():
    top = sorted(n.split(".")[1] for n, p in MODULES.items()
                 if n.count(".") == 1 and p.name != "__init__.py")
    packages = {n.split(".")[1] for n in MODULES if n.count(".") >= 2}
    assert len(top) <= MAX_TOP_LEVEL, top
    assert SHARED <= packages and STAGES <= packages
    assert packages - SHARED - STAGES <= {"data"}, packages - SHARED - STAGES
    # a module that imports three or more stages composes them: only the composition root
    composers = {n for n in MODULES if len({_stage(d) for d in GRAPH[n]} - {None, _stage(n)}) >= 3}
    assert {n.split(".")[1] for n in composers} <= COMPOSITION, composers


def test_no_two_modules_share_a_name_at_different_levels():
    """A top-level module's name is no deeper module's (``pages.py`` and ``report/pages.py``,
    ``tables.py`` and a stage's ``tables.py`` read as one), and no module's name is a sibling's
    plus a suffix (``job``/``jobresources``, ``month``/``months``)."""
    top = {n.split(".")[1] for n in MODULES if n.count(".") == 1}
    deeper = {n.rsplit(".", 1)[1]: n for n in MODULES if n.count(".") >= 2}
    assert {name: deeper[name] for name in top if name in deeper} == {}
    siblings: dict[str, list[str]] = {}
    for n in MODULES:
        parent, _, leaf = n.rpartition(".")
        siblings.setdefault(parent, []).append(leaf)
    close = [(parent, a, b) for parent, names in siblings.items() for a in names for b in names
             if a != b and b.startswith(a) and a != "__init__"]
    assert close == []


def test_no_module_is_too_big_to_read():
    sizes = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_inputs_are_decoded_strictly():
    """Input text is decoded by ``paramill.io``'s line stream (through ``paramill.formats``):
    a line that is not UTF-8 is an error or a rejected row naming file and line, never text
    with replacement characters. Decoding leniently is left to showing a bad line
    (``paramill.io.shown_text``) and to web pages (the URL resolver's card titles)."""
    allowed = {"paramill.io.lines", "paramill.twitter.urls"}
    lenient = {name for name, path in MODULES.items()
               if any(isinstance(node, ast.Constant) and node.value == "replace"
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert lenient - allowed == set()


#: the calls that read a Parquet file (its rows, its schema, its metadata)
PARQUET_READS = {("pl", "read_parquet"), ("pl", "scan_parquet"), ("pl", "read_parquet_schema"),
                 ("pl", "read_parquet_metadata"), ("pq", "read_table"), ("pq", "read_schema"),
                 ("pq", "read_metadata"), ("pq", "ParquetFile"), ("pq", "read_pandas")}


def test_every_parquet_read_goes_through_one_path():
    """Every Parquet file is read through ``paramill.io.tableread``: its batches, tables and
    frames verify each page's checksum and name the file that is not Parquet, its schemas are
    read once while a file is unchanged (``schema_of``), and a job's own scratch is scanned
    lazily through ``scan_scratch``. No other module calls polars' or pyarrow's readers."""
    found = set()
    for name, path in MODULES.items():
        if name == "paramill.io.tableread":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and (node.func.value.id, node.func.attr) in PARQUET_READS):
                found.add((name, f"{node.func.value.id}.{node.func.attr}"))
    assert found == set()


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

def test_the_rules_glue_is_short():
    """rules/common.smk is glue: every decision the rules need is a tested function of
    paramill.run.workflow."""
    glue = PACKAGE.parents[1] / "rules" / "common.smk"
    assert len(glue.read_text().splitlines()) <= 120
