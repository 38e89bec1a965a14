"""A retried job asks for more memory and time: real Snakemake, the workflow's own
`rule_resources` (rules/common.smk), its attempts counted by Snakemake itself."""

from __future__ import annotations

from .conftest import copy_project, snakemake

#: the whole workflow, then a rule asking through the workflow's helper, whose command fails
#: unless its attempt asks for twice the memory the first one does (as a job killed at its
#: memory limit would fail again with the same request). Each attempt's line: the SLURM job
#: (`local` outside SLURM), the memory and the time it asked for.
PROBE = """include: "Snakefile"

rule probe:
    output: "probe.txt"
    log: "probe.log"
    threads: 1
    resources:
        **rule_resources("ingest", mem_mb=1000, runtime=5),
    shell:
        "echo ${{SLURM_JOB_ID:-local}} {resources.mem_mb} {resources.runtime} >> attempts.txt;"
        " echo probe: {resources.mem_mb} MB is not enough > {log};"
        " test {resources.mem_mb} -ge 2000 && cp attempts.txt {output}"
"""


def test_a_retry_asks_for_more_memory_and_time_unless_told_not_to(tmp_path):
    root = copy_project(tmp_path)
    (root / "probe.smk").write_text(PROBE)
    snakemake(root, "-s", "probe.smk", "--retries", "2", "probe.txt")
    assert (root / "probe.txt").read_text().splitlines() == ["local 1000 5", "local 2000 10"]

    (root / "probe.txt").unlink()
    (root / "attempts.txt").unlink()
    (root / "same.yaml").write_text("resources:\n  ingest: {retry_growth: 1}\n")
    proc = snakemake(root, "-s", "probe.smk", "--retries", "2", "probe.txt",
                     "--configfile", "config.yaml", "same.yaml", check=False)
    assert proc.returncode != 0 and not (root / "probe.txt").exists()
    assert (root / "attempts.txt").read_text().splitlines() == ["local 1000 5"] * 3
    # the failed job's log is on the console (the workflow profile, profiles/default)
    assert "Logfile probe.log:" in proc.stderr and "probe: 1000 MB is not enough" in proc.stderr

    # bounded at the partition's limits: the retries ask for the bound, never past it
    (root / "attempts.txt").unlink()
    (root / "same.yaml").write_text("resources:\n  ingest: {max_mem_mb: 1500, max_runtime: 12}\n")
    proc = snakemake(root, "-s", "probe.smk", "--retries", "2", "probe.txt",
                     "--configfile", "config.yaml", "same.yaml", check=False)
    assert proc.returncode != 0 and not (root / "probe.txt").exists()
    assert (root / "attempts.txt").read_text().splitlines() == [
        "local 1000 5", "local 1500 10", "local 1500 12"]
