"""Every value that reaches a rule's shell line is quoted: a config string such as an
account named ``x$(touch /tmp/p)`` must never run as a command inside the job."""

from __future__ import annotations

import re

from tests.conftest import REPO

#: a rule's ``shell:`` block: the indented string lines after it
_SHELL = re.compile(r"^(?P<indent>[ \t]+)shell:[ \t]*\n(?P<body>(?:(?P=indent)[ \t]+.*\n)+)", re.M)
_FIELD = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")
#: threads is an integer from the schema; everything else is quoted
_SAFE = {"threads"}


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


def test_every_rule_names_itself_for_provenance():
    """`--rule NAME` is what provenance records: it must be the rule's own name (Snakemake's
    `{rule}` would do it, but its linter flags `{rule}` as a variable from outside the rule)."""
    wrong = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        name = None
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = re.match(r"^\s*(?:rule|checkpoint) (\w+):", line)
            name = found.group(1) if found else name
            given = re.search(r"paramill --rule (\S+) ", line)
            if given and given.group(1) not in (name, "score_{params.filter:q}"):
                wrong.append(f"rules/{path.name}:{number}: --rule {given.group(1)} in rule {name}")
    assert wrong == []
    assert "score_" in (REPO / "rules/filters.smk").read_text()  # the loop's rules: score_<filter>
