"""The manual and the text users read: README.md one page that answers a newcomer's questions
in order, docs/results.md one row a measure, the manual building with --strict, setting
descriptions short and about the software, every verb's help ending with an example and its
page, and no history (lent machines, issue numbers, commits, dated prose) outside
CHANGELOG.md and docs/results.md."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from paramill import __version__
from paramill import config
from paramill.cli import build_parser, groups

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: pages generated when the site is built (scripts/docs_pages.py), never committed
GENERATED = {"configuration.md", "cli.md", "formats.md"}

#: how the project came to be, which user-facing text leaves to CHANGELOG.md and results.md:
#: a machine lent, an issue number, a commit hash, a date in prose ("on 2026-11-27",
#: "(2026-11-27"), a pointer to a README section
HISTORY = re.compile(
    r"\blent\b|\bissues? \d+\b"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
    r"|(?:\b(?:on|since|until|before|after|measured|from|of|in|at)\s+|\(|, )20\d\d-\d\d-\d\d\b"
    r"|\bREADME\b(?!\.md)", re.I)
#: measurements in a setting's description: a rate, a card, a figure of merit
MEASURED = re.compile(r"pairs/s|sentences/s|\bH1\d\d\b|\bH200\b|\bF1 0\.|Pearson \d|"
                      r"\bmeasured\b|\bbenchmark\b(?! files)", re.I)


def prose(text: str) -> str:
    """Markdown or YAML text without code: fenced blocks, inline code and quoted strings (a
    command's `--date 2026-10-05` or a config's "2026-10-05" is data, not history)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\"[^\"\n]*\"", "", text)


def history(text: str, readme: bool = True) -> list[str]:
    """Each place ``text`` tells history; ``readme``: a pointer to a README counts too."""
    return [f"{line.strip()[:120]!r} ({m.group(0)!r})" for line in prose(text).splitlines()
            for m in HISTORY.finditer(line) if readme or not m.group(0).lower() == "readme"]


def descriptions(node, path=""):
    if isinstance(node, dict):
        if "description" in node and path:
            yield path, node["description"]
        for name, sub in node.get("properties", {}).items():
            yield from descriptions(sub, f"{path}.{name}" if path else name)
        for key in ("additionalProperties", "items"):
            if isinstance(node.get(key), dict):
                yield from descriptions(node[key], f"{path}.{'NAME' if key[0] == 'a' else '[]'}")
        for sub in node.get("anyOf", []) + node.get("oneOf", []):
            yield from descriptions(sub, path)


def test_setting_descriptions_say_what_a_setting_does_in_300_characters():
    found = list(descriptions(config.schema()))
    assert len(found) > 300
    long = [(p, len(d)) for p, d in found if len(d) > 300]
    assert long == [], long
    measured = [(p, m.group(0)) for p, d in found for m in [MEASURED.search(d)] if m]
    assert measured == [], measured
    dated = [(p, h) for p, d in found for h in history(d)]
    assert dated == [], dated


def user_facing_files() -> list[Path]:
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "config.yaml",
             *sorted((REPO / "profiles").glob("*/config.yaml")), REPO / "scripts/harvest.sh",
             REPO / "Snakefile"]
    files += sorted(DOCS.rglob("*.md")) + sorted((REPO / "configs").glob("*.yaml"))
    return [f for f in files if f.name not in ("results.md", "changelog.md", "config.schema.yaml")]


def test_user_facing_text_speaks_of_the_software_alone():
    """No "lent", no issue numbers, no commit hashes and no dated prose in the README, the
    manual, the contributor guide, the configs, the --help of every command, or the messages
    the package prints (its string literals but docstrings)."""
    found = []
    for path in user_facing_files():
        text = path.read_text(encoding="utf-8")
        # the contributor guide speaks of README.md, the file, by design
        found += [f"{path.relative_to(REPO)}: {h}"
                  for h in history(text, readme=path.name != "CONTRIBUTING.md")]
    from paramill.cli import reference_page

    found += [f"--help: {h}" for h in history(reference_page())]
    for path in sorted((REPO / "src/paramill").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                found += [f"{path.relative_to(REPO)}:{node.lineno}: {h}"
                          for h in history(node.value)]
    assert found == [], "\n".join(found)


def test_the_history_check_finds_what_it_is_for():
    assert history("measured on a lent H200") and history("fixed in issue 18")
    assert history("since 63255c5 the step") and history("it ran on 2026-11-27 at 2 cores")
    assert history("(2026-12-01, this machine)") and history('see README "Benchmarks"')
    assert not history("`--date 2026-10-05`") and not history('dates: ["2026-10-05"]')
    assert not history("a dataset card, README.md, beside it") and not history("deadbeef" * 0)


def test_the_readme_is_one_page_that_answers_in_order():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings == ["Two commands", "Your own data", "On a cluster", "Headline figures",
                        "Documentation"]
    intro = text.split("## Two commands")[0]
    assert "paramill is a Snakemake pipeline" in intro and "```" in intro  # the data flow
    own = text.split("## Your own data")[1].split("## On a cluster")[0]
    assert all(f"(`my{kind}.yaml`)" in own for kind in ("bitext", "pairs", "tweets"))
    assert "--profile slurm" in text.split("## On a cluster")[1].split("##")[0]
    figures = text.split("## Headline figures")[1].split("## Documentation")[0]
    rows = [r for r in figures.splitlines() if r.startswith("| [")]
    assert 1 <= len(rows) <= 10
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', (DOCS / "results.md").read_text()))
    for row in rows:
        (anchor,) = re.findall(r"\(docs/results\.md#([\w-]+)\)", row)
        assert anchor in anchors, row
    for link in re.findall(r"\]\(((?:docs/)?[\w/.-]+\.md)(?:#[\w-]+)?\)", text):
        assert (REPO / link).exists(), f"README links to {link}, which is not there"


def test_results_hold_each_measure_once_with_its_command_commit_hardware_and_record():
    text = (DOCS / "results.md").read_text()
    rows = [r for r in text.splitlines() if r.startswith("| <a id=")]
    assert len(rows) >= 20
    ids = [re.match(r'\| <a id="([^"]+)">', r).group(1) for r in rows]
    assert len(ids) == len(set(ids))
    measures = [re.sub(r"<a[^>]*></a>", "", r.split("|")[1]).strip() for r in rows]
    assert len(measures) == len(set(measures)), "a measure is on the page twice"
    records = REPO / "benchmarks" / "records"
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 6, row
        measure, figure, command, commit, hardware, record = cells
        assert figure and hardware and command.startswith("`"), row
        if record != "not kept":
            for name in re.findall(r"`([^`]+)`", record):
                pattern = name.replace("{auto,keep}", "*").replace("{word,sp,lstm}", "*")
                assert list(records.glob(pattern)), f"no record {name}"
        if commit != "—":
            assert re.fullmatch(r"[0-9a-f]{7}", commit), row


def test_every_benchmark_script_measures_a_figure_the_results_page_reports():
    """benchmarks/<stage>/NAME.py: one script per measure docs/results.md reports, each
    named by a row's command (or the GPU check a row's command runs), none left over."""
    text = (DOCS / "results.md").read_text() + (REPO / "scripts" / "gpu-check.sh").read_text()
    named = set(re.findall(r"benchmarks/(\w+/\w+\.py)", text))
    scripts = {p.relative_to(REPO / "benchmarks").as_posix() for p in (REPO / "benchmarks").glob("*/*.py")}
    stages = {"bitext", "pairs", "nmt", "filters", "embed", "twitter", "lexicon", "workflow"}
    assert {s.split("/")[0] for s in scripts} <= stages
    assert named - scripts == set(), "a command names a script that is not there"
    assert scripts - named == set(), "a script no reported figure comes from"
    assert [p.name for p in (REPO / "benchmarks").glob("*.py")] == ["_report.py"]


def test_the_version_is_one_and_the_changelog_and_citation_carry_it():
    out = subprocess.run([sys.executable, "-m", "paramill.cli", "--version"], capture_output=True,
                         text=True)
    assert out.stdout.strip() == f"paramill {__version__}"
    changelog = (REPO / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", changelog, re.M)
    assert releases[0][0] == __version__ and len(releases) >= 2
    for section in re.findall(r"^### (.+)$", changelog, re.M):
        assert section in ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
    cff = (REPO / "CITATION.cff").read_text()
    assert f"\nversion: {__version__}\n" in cff and "cff-version: 1.2.0" in cff
    assert f"version = {{{__version__}}}" in (DOCS / "citing.md").read_text()


def test_every_verb_ends_its_help_with_an_example_and_its_page_of_the_manual(capsys):
    parser = build_parser()
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} | GENERATED
    count = 0
    for group in groups():
        for verb in group.verbs:
            count += 1
            words = shlex.split(verb.example)
            assert words[:3] == ["paramill", group.name, verb.name], verb.example
            parser.parse_args(words[1:])  # the example is a valid command line
            assert verb.docs in pages, (group.name, verb.name, verb.docs)
            with pytest.raises(SystemExit):
                parser.parse_args([group.name, verb.name, "--help"])
            help_text = capsys.readouterr().out
            assert help_text.rstrip().endswith(f"example:\n  {verb.example}\n\nmanual: "
                                               f"docs/{verb.docs}")
    assert count >= 40


def test_the_top_help_lists_every_verb_under_its_stage(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    listing = out.split("commands, by stage")[1].split("positional arguments")[0]
    lines = listing.splitlines()
    for group in groups():
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {group.name} "))
        below = [line.split()[0] for line in lines[at + 1:at + 1 + len(group.verbs)]]
        assert below == [verb.name for verb in group.verbs], group.name


def test_the_generated_pages_are_generated_not_committed():
    assert not any((DOCS / name).exists() for name in GENERATED)
    from paramill import peek
    from paramill import schema
    from paramill.cli import reference_page

    assert "### paramill filters select" in reference_page()
    assert "## `filters.heldout`" in schema.reference_page()
    formats = peek.formats_page()
    assert "### `moses` (bitext)" in formats and "| `cs` |" in formats


@pytest.mark.slow
def test_the_manual_builds_with_no_broken_link(tmp_path):
    """`make docs`: mkdocs --strict fails on a missing page, a broken link or anchor, and a
    page left out of the navigation."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    proc = subprocess.run([str(Path(sys.executable).with_name("mkdocs")), "build", "--strict",
                           "--site-dir", str(tmp_path / "site")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for page in ("configuration", "cli", "formats", "results", "methods/filters"):
        assert (tmp_path / "site" / page / "index.html").stat().st_size > 5000


#: where a config key is named in user text: a stage's section and at least one key under it
_KEY = re.compile(r"(?<![\w./])((?:bitext|pairs|nmt|embed|filters|twitter|lexicon|evaluate|resources)"
                  r"(?:\.(?:[\w-]+|NAME|RULE))+)(?![\w(])")


def _in_schema(path: str, schema: dict) -> bool:
    node = schema
    for part in path.split("."):
        if part in node.get("properties", {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return False
    return True


def test_every_config_key_the_manual_names_is_where_a_config_file_holds_it():
    """A key named in the README, the manual, the presets or a setting's description is
    written where a user sets it (an advanced key under its stage's ``advanced``)."""
    schema = config.user_schema()
    texts = {p.relative_to(REPO): p.read_text() for p in user_facing_files()
             if p.name not in ("architecture.md", "CONTRIBUTING.md")}
    texts["the schema's descriptions"] = "\n".join(d for _, d in descriptions(schema))
    wrong = {f"{where}: {key}" for where, text in texts.items() for key in _KEY.findall(text)
             if not key.endswith((".py", ".smk", ".json", ".yaml", ".md", ".tsv", ".parquet"))
             and not _in_schema(key, schema)}
    assert wrong == set()
