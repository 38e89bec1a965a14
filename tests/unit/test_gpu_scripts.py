"""scripts/gpu-check.sh runs on a lent GPU machine whose time is counted in minutes: a flag a
benchmark no longer takes, or a test file that moved, would spend a whole call on an argparse
error. These checks read the script and the benchmarks' sources (nothing runs), so they hold
on a machine without a GPU."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "gpu-check.sh"


def invocations(text: str) -> list[tuple[str, list[str]]]:
    """Each ``benchmarks/STAGE/NAME.py`` the script runs (``STAGE/NAME``), with the ``--flags`` its command passes
    (comments left out, continuation lines joined; a command ends at ``;;`` or the line's
    end)."""
    found = []
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for line in code.replace("\\\n", " ").splitlines():
        for match in re.finditer(r"benchmarks/(\w+/\w+)\.py([^;]*)", line):
            found.append((match.group(1), re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", match.group(2))))
    return found


def accepted(script: str) -> set[str]:
    """The options a benchmark's argparse parser declares (every name of each option)."""
    source = (ROOT / "benchmarks" / f"{script}.py").read_text()
    flags: set[str] = set()
    for call in re.finditer(r"add_argument\(((?:\s*\"--?[\w-]+\"\s*[,)])+)", source):
        flags.update(re.findall(r"\"(--[\w-]+)\"", call.group(1)))
    return flags


def test_the_parser_of_invocations_finds_flags_across_continuation_lines():
    text = ('# benchmarks/s/c.py --in-a-comment\n'
            'step x x.log "$PY" benchmarks/s/a.py --one 1 \\\n    --two-words "$X" --out y ;;\n'
            '      b) "$PY" ../benchmarks/t/b.py --c "--not-a-flag-inside-a-word"x\n')
    assert invocations(text) == [("s/a", ["--one", "--two-words", "--out"]), ("t/b", ["--c"])]


def test_every_benchmark_gpu_check_runs_takes_every_flag_it_is_given():
    calls = invocations(CHECK.read_text())
    assert {name for name, _ in calls} >= {"twitter/paraid_default", "twitter/cross_speed", "twitter/paraid",
                                           "embed/embeddings", "embed/embed_reference", "embed/embed_scale",
                                           "embed/embed_prefetch", "nmt/nmt_gpu"}
    for name, flags in calls:
        unknown = set(flags) - accepted(name)
        assert not unknown, f"scripts/gpu-check.sh passes benchmarks/{name}.py {sorted(unknown)}"


def test_every_variant_and_test_file_gpu_check_names_exists():
    text = CHECK.read_text()
    default = re.search(r"--variants \$\{VARIANTS:-([^}]*)\}", text)
    assert default
    tf32 = re.search(r"--variants \$\{TF32_VARIANTS:-([^}]*)\}", text)
    assert tf32
    embeddings = (ROOT / "benchmarks" / "embed" / "embeddings.py").read_text()
    for variant in default.group(1).split() + tf32.group(1).split():
        assert re.search(rf'^\s+"{re.escape(variant)}": \{{', embeddings, re.M), variant
    for test_file in re.findall(r"tests/unit/test_\w+\.py", text):
        assert (ROOT / test_file).is_file(), test_file


def test_the_prefetch_benchmarks_inline_reader_passes_every_epochs_end_on():
    """benchmarks/embed/embed_prefetch.py's inline mode gives training what the read-ahead gives it,
    the ``None`` after each epoch's buffers included (it stopped at the first: its runs trained
    one epoch), and times each wait."""
    import importlib.util
    import time

    spec = importlib.util.spec_from_file_location("embed_prefetch", ROOT / "benchmarks" / "embed" / "embed_prefetch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from paramill.embed.data import Waited, prefetched

    def items():
        for item in ("a", "b", None, "c", None):
            time.sleep(0.01)
            yield item

    waited = Waited()
    assert list(module.inline(items(), waited)) == list(prefetched(items())) == ["a", "b", None, "c", None]
    assert waited.seconds >= 0.04


def _gpu_tests(path: Path):
    """The test functions of ``path`` marked ``gpu`` (decorated ``@pytest.mark.gpu``), as AST nodes."""
    import ast

    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d).startswith("pytest.mark.gpu") for d in node.decorator_list):
            yield node


def test_every_name_a_gpu_test_imports_or_patches_exists():
    """The GPU tests run only on a lent card, so a name they import inside their bodies
    (``from paramill.embed.graphstep import ...``), an attribute they patch or read on a module
    or class they imported (``monkeypatch.setattr(train_mod, "_stepper", ...)``,
    ``train_mod._epoch``, ``ReplayedStep._record``), or a keyword they pass to paramill's own
    classes and functions (``EmbedTrainSettings(tf32=...)``), that was renamed would fail
    there only, spending the card's minutes. Checked here without running them."""
    import ast
    import importlib
    import inspect

    checked, missing = 0, []
    for path in sorted((ROOT / "tests" / "unit").glob("test_*.py")):
        test_module = importlib.import_module(f"tests.unit.{path.stem}")
        for fn in _gpu_tests(path):
            bound = {}  # local name -> the module or attribute object it stands for
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("paramill"):
                    module = importlib.import_module(node.module)
                    for alias in node.names:
                        checked += 1
                        if not hasattr(module, alias.name):
                            try:  # a submodule: from paramill.embed import train as train_mod
                                importlib.import_module(f"{node.module}.{alias.name}")
                            except ImportError:
                                missing.append(f"{path.name}::{fn.name}: {node.module}.{alias.name}")
                                continue
                        bound[alias.asname or alias.name] = (getattr(module, alias.name, None)
                                                             or importlib.import_module(f"{node.module}.{alias.name}"))
            for node in ast.walk(fn):
                target, name = None, None
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    target, name = node.value.id, node.attr
                elif (isinstance(node, ast.Call) and ast.unparse(node.func) == "monkeypatch.setattr"
                      and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
                      and isinstance(node.args[1], ast.Constant)):
                    target, name = node.args[0].id, node.args[1].value
                if target in bound and not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)):
                    checked += 1
                    if not hasattr(bound[target], name):
                        missing.append(f"{path.name}::{fn.name}: {target}.{name}")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.keywords:
                    called = bound.get(node.func.id, getattr(test_module, node.func.id, None))
                    if not callable(called) or not getattr(called, "__module__", "").startswith("paramill"):
                        continue
                    params = inspect.signature(called).parameters
                    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
                        continue
                    for keyword in node.keywords:
                        checked += 1
                        if keyword.arg is not None and keyword.arg not in params:
                            missing.append(f"{path.name}::{fn.name}: {node.func.id}({keyword.arg}=)")
    assert checked > 80 and not missing, missing
