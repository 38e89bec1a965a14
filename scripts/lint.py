#!/usr/bin/env python3
"""`snakemake --lint`, less its two deliberate findings: `{rule}` and `{X_LAUNCH}` in `shell:`.

Every rule passes `--rule {rule}` to the paramill command line so that provenance records the
rule's name without it being typed per rule. Snakemake formats `rule` into shell commands
(it is an argument of every rule's function), but its linter checks shell fields against a
list that omits it and reports "Shell command directly uses variable rule from outside of the
rule". The training rules pass a section's launch-only keys (how a job runs, not what it
computes) from a global named `<SECTION>_LAUNCH`, built by `launch_settings` in
rules/common.smk, outside their params on purpose: Snakemake's rerun triggers compare params,
so flipping one re-runs nothing (the job's provenance record still holds the value). This
script runs the linter, drops exactly those findings, prints everything else and fails when
anything else is left.

Usage: scripts/lint.py [snakemake options...]   (run from the repository root; `make lint`)
"""

from __future__ import annotations

import re
import subprocess
import sys

#: the findings dropped: `{rule}`, and a launch-only global (`EMBED_TRAIN_LAUNCH`)
DELIBERATE = re.compile(r"\* Shell command directly uses variable (rule|[A-Z][A-Z_]*_LAUNCH) "
                        r"from outside of the rule:$")
#: a finding: "    * title:" followed by its more-indented body lines
_ITEM = re.compile(r"^    \* ")


def remaining(report: str) -> str:
    """The lint report without the `{rule}` findings, and without headers left empty."""
    blocks, current = [], []
    for line in report.splitlines():
        if line and not line.startswith(" "):
            blocks.append(current)
            current = [line]
        else:
            current.append(line)
    blocks.append(current)
    kept = []
    for block in blocks:
        head, items, item = [], [], None
        for line in block:
            if _ITEM.match(line):
                item = [line]
                items.append(item)
            elif item is not None:
                item.append(line)
            else:
                head.append(line)
        items = [i for i in items if not DELIBERATE.fullmatch(i[0].strip())]
        if items or (head and not block_is_lint_header(head)):
            kept.append("\n".join(head + [line for i in items for line in i]))
    return "\n".join(b for b in kept if b.strip())


def block_is_lint_header(head: list[str]) -> bool:
    return bool(head) and head[0].startswith("Lints for ")


def main(argv: list[str]) -> int:
    proc = subprocess.run(["snakemake", "--lint", *argv], capture_output=True, text=True)
    rest = remaining(proc.stdout + proc.stderr)
    if rest.strip():
        print(rest)
        return 1
    print("snakemake --lint: no findings (besides `{rule}` and launch-only globals in shell:, "
          "see scripts/lint.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
