"""Every value that reaches a rule's shell line is quoted: a config string such as an
account named ``x$(touch /tmp/p)`` must never run as a command inside the job."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import REPO

#: a rule's ``shell:`` block: the indented string lines after it
_SHELL = re.compile(r"^(?P<indent>[ \t]+)shell:[ \t]*\n(?P<body>(?:(?P=indent)[ \t]+.*\n)+)", re.M)
_FIELD = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")
#: threads is an integer from the schema, rule the rule's name; everything else is quoted
_SAFE = {"threads", "rule"}  # rule: the rule's own name, an identifier


def shell_blocks():
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text()
        for match in _SHELL.finditer(text):
            line = text[: match.start()].count("\n") + 1
            yield path.name, line, match.group("body")


def unquoted(body: str) -> list[str]:
    return [f for f in _FIELD.findall(body) if not f.endswith(":q") and f not in _SAFE]


def test_the_scanner_finds_every_rule_and_flags_an_unquoted_field():
    blocks = list(shell_blocks())
    rules = sum(len(re.findall(r"^\s*(?:rule|checkpoint) \w+:|^\s+rule:$", p.read_text(), re.M))
                for p in (REPO / "rules").glob("*.smk"))
    assert len(blocks) >= rules - 1 >= 25  # rule `all` has no shell
    assert unquoted('        "paramill --accounts {params.accounts} {input:q} {threads}"\n') == [
        "params.accounts"]
    assert unquoted('        "x {wildcards.date} {output.tsv:q}"\n') == ["wildcards.date"]


def test_no_rule_interpolates_an_unquoted_value():
    found = [f"rules/{name}:{line}: {{{field}}}" for name, line, body in shell_blocks()
             for field in unquoted(body)]
    assert found == [], "quote these with :q (or pass them as JSON in params):\n" + "\n".join(found)


def test_no_rule_runs_python_or_a_script_instead_of_the_command_line():
    for path in (REPO / "rules").glob("*.smk"):
        assert not re.search(r"^\s+(run|script|notebook|wrapper):", path.read_text(), re.M), path


def test_every_rule_names_itself_and_passes_its_threads():
    """Provenance records `--rule`; Snakemake fills in `{rule}`, so no rule types its name.
    `--threads {threads}` sizes every library's pools to the rule's allocation (an
    OMP_NUM_THREADS prefix alone leaves polars and CTranslate2 at the machine's size)."""
    commands = [(path.name, line, body) for path in sorted((REPO / "rules").glob("*.smk"))
                for line, body in enumerate(path.read_text().splitlines(), 1)
                if "paramill " in body and body.strip().startswith('"')]
    assert len(commands) >= 25
    wrong = [f"rules/{name}:{line}: {body.strip()}" for name, line, body in commands
             if "paramill --rule {rule} --threads {threads} " not in body]
    assert wrong == []


def _lint_script():
    spec = importlib.util.spec_from_file_location("lint", REPO / "scripts/lint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LINT_REPORT = """Lints for rule ingest (line 4, rules/bitext.smk):
    * Shell command directly uses variable rule from outside of the rule:
      It is recommended to pass all files as input and output.
      Also see:
      https://snakemake.readthedocs.io/

Lints for rule clean (line 26, rules/bitext.smk):
    * Shell command directly uses variable rule from outside of the rule:
      It is recommended to pass all files as input and output.
    * No log directive defined:
      Without a log directive, all output will be printed to the terminal.

Lints for rule embed_train (line 6, rules/embed.smk):
    * Shell command directly uses variable EMBED_TRAIN_LAUNCH from outside of the rule:
      It is recommended to pass all files as input and output.

Lints for rule lexicon (line 6, rules/lexicon.smk):
    * Shell command directly uses variable LEXICON from outside of the rule:
      It is recommended to pass all files as input and output.
"""


def test_lint_drops_only_the_rule_and_launch_findings():
    rest = _lint_script().remaining(LINT_REPORT)
    assert "rule ingest" not in rest and "rule embed_train" not in rest
    assert "Lints for rule clean" in rest and "No log directive defined" in rest
    assert "variable rule" not in rest and "EMBED_TRAIN_LAUNCH" not in rest
    assert "variable LEXICON from outside" in rest  # any other global is still a finding
    assert _lint_script().remaining(LINT_REPORT.split("\n\n")[0]).strip() == ""


def _launch_globals():
    """{X_LAUNCH: the config sections it names}, as rules/common.smk builds them."""
    found = {}
    for path in (REPO / "rules").glob("*.smk"):
        for name, args in re.findall(r"^([A-Z][A-Z_]*_LAUNCH) = launch_settings\((.*)\)$",
                                     path.read_text(), re.M):
            found[name] = re.findall(r'"([\w.]+)"', args)
    return found


def _rule_blocks():
    """(name, text) of every rule, those a loop defines (`rule:` with `name:`) included."""
    for path in sorted((REPO / "rules").glob("*.smk")):
        parts = re.split(r"^(?=(?:rule|checkpoint) \w+:|[ \t]+rule:[ \t]*$)", path.read_text(), flags=re.M)
        for part in parts[1:]:
            head = part.split(":", 1)[0].split()
            yield (head[1] if len(head) > 1 else
                   re.search(r'name:\s*f?"([^"]+)"', part).group(1)), part


def test_every_rule_passes_the_launch_only_keys_of_the_sections_it_reads():
    """A section's launch-only keys (x-launch: how a job runs, not what it computes) stay out
    of a rule's params and reach its command in `--launch` from a global that names the
    sections the rule reads; the lint lets exactly these globals into shell lines."""
    from paramill import config
    from paramill import filters

    globals_ = _launch_globals()
    assert set(globals_) >= {"EMBED_TRAIN_LAUNCH", "LEXICON_LAUNCH", "BITEXT_INGEST_LAUNCH"}
    def sections(node, path=()):
        yield path
        for key, child in node.get("properties", {}).items():
            yield from sections(child, (*path, key))

    launching = {".".join(p) for p in sections(config.schema()) if config.marked("launch", *p)}
    assert launching == {"bitext.ingest", "bitext.clean", "pairs.ingest", "pairs.clean",
                         "embed.train", "lexicon", "twitter.harvest", "filters.classifier",
                         "filters.dual_xent", "filters.parascore"}
    checked = 0
    for rule, block in _rule_blocks():
        reads = {".".join(re.findall(r'"(\w+)"', args))
                 for args in re.findall(r"stage_settings\(([^)]*)\)", block)}
        if 'stage_settings("filters", _filter)' in block:  # score_<filter>: any filter's section
            reads = (reads - {"filters"}) | {f"filters.{name}" for name in filters.names()}
        reads |= {"embed.train"} if "embed_train_params(" in block else set()
        raw = re.findall(r'as_json\(config((?:\["\w+"\])+)\)', block)
        assert not [r for r in raw if ".".join(re.findall(r"\w+", r)) in launching], \
            f"rule {rule}: a section with launch-only keys goes through stage_settings"
        passed = re.findall(r"--launch \{([A-Z_]+):q\}", block)
        needed = reads & launching
        if not needed:
            assert not passed, rule
            continue
        checked += 1
        assert len(passed) == 1 and set(globals_[passed[0]]) == needed, (rule, passed, needed)
    assert checked >= 9  # ingest, clean, pairs_ingest, embed_train, parascore_model, lexicon,
    # harvest, classifier_train, score_<filter>
