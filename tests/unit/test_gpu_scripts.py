"""scripts/gpu-check.sh runs on a lent GPU machine whose time is counted in minutes: a flag a
benchmark no longer takes, or a test file that moved, would spend a whole call on an argparse
error. These checks read the script and the benchmarks' sources (nothing runs), so they hold
on a machine without a GPU."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "gpu-check.sh"


def invocations(text: str) -> list[tuple[str, list[str]]]:
    """Each ``benchmarks/NAME.py`` the script runs, with the ``--flags`` its command passes
    (comments left out, continuation lines joined; a command ends at ``;;`` or the line's
    end)."""
    found = []
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for line in code.replace("\\\n", " ").splitlines():
        for match in re.finditer(r"benchmarks/(\w+)\.py([^;]*)", line):
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
    text = ('# benchmarks/c.py --in-a-comment\n'
            'step x x.log "$PY" benchmarks/a.py --one 1 \\\n    --two-words "$X" --out y ;;\n'
            '      b) "$PY" ../benchmarks/b.py --c "--not-a-flag-inside-a-word"x\n')
    assert invocations(text) == [("a", ["--one", "--two-words", "--out"]), ("b", ["--c"])]


def test_every_benchmark_gpu_check_runs_takes_every_flag_it_is_given():
    calls = invocations(CHECK.read_text())
    assert {name for name, _ in calls} >= {"paraid_default", "cross_speed", "paraid", "cross_order",
                                           "embeddings", "embed_reference", "embed_scale", "embed_step",
                                           "nmt_gpu"}
    for name, flags in calls:
        unknown = set(flags) - accepted(name)
        assert not unknown, f"scripts/gpu-check.sh passes benchmarks/{name}.py {sorted(unknown)}"


def test_every_variant_and_test_file_gpu_check_names_exists():
    text = CHECK.read_text()
    default = re.search(r"--variants \$\{VARIANTS:-([^}]*)\}", text)
    assert default
    steps = re.search(r"--variants \$\{STEP_VARIANTS:-([^}]*)\}", text)
    assert steps
    # embed_step.py takes embeddings.py's variants
    assert "from embeddings import VARIANTS" in (ROOT / "benchmarks" / "embed_step.py").read_text()
    embeddings = (ROOT / "benchmarks" / "embeddings.py").read_text()
    for variant in default.group(1).split() + steps.group(1).split():
        assert re.search(rf'^\s+"{re.escape(variant)}": \{{', embeddings, re.M), variant
    for test_file in re.findall(r"tests/unit/test_\w+\.py", text):
        assert (ROOT / test_file).is_file(), test_file
