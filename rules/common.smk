# Shared helpers for the rules: config resolution, paths, resources. Declarative glue only;
# the work is done by the `paramill` command line.
import json
import os
import subprocess
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

# The `paramill` command sits beside the Python that runs Snakemake (.venv/bin).
_bin = str(Path(sys.executable).parent)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ.update(PATH=_bin + os.pathsep + os.environ.get("PATH", ""))


def _resolve(cfg):
    """Validate the config with paramill's schema, fill defaults; errors name the key."""
    proc = subprocess.run(
        ["paramill", "config", "resolve", "--with-digest", "-"],
        input=json.dumps(cfg),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise WorkflowError(proc.stderr.strip())
    return json.loads(proc.stdout)


_resolved = _resolve(dict(config))
config.clear()
config.update(_resolved["config"])
# recorded in every provenance file
os.environ.update(PARAMILL_CONFIG_DIGEST=_resolved["digest"])

WORK = config["workdir"]
RESULTS = config["results"]
LOGS = config["logdir"]
CORPORA = list(config["bitext"]["corpora"])


wildcard_constraints:
    corpus="[A-Za-z0-9][A-Za-z0-9_-]*",


def as_json(value):
    """A config slice as compact JSON, for `params:` (a change re-runs the rule)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def rule_threads(rule_name, default=1):
    """A rule's threads: config `resources.<rule>.threads` over the default."""
    return config["resources"].get(rule_name, {}).get("threads", default)


def rule_resources(rule_name, **defaults):
    """A rule's resources: config `resources.<rule>` over the defaults given here.

    gpu/gpu_model/gres/slurm_partition/slurm_extra pass straight to the SLURM plugin.
    """
    given = {k: v for k, v in config["resources"].get(rule_name, {}).items() if k != "threads"}
    return {**defaults, **given}


def corpus_files(wildcards):
    spec = config["bitext"]["corpora"][wildcards.corpus]
    return [spec["cs"], spec["en"]] if spec["format"] == "moses" else [spec["path"]]


def earlier_keys(wildcards):
    """Key files of the corpora listed before this one: their pairs win duplicates."""
    before = CORPORA[: CORPORA.index(wildcards.corpus)]
    return [f"{WORK}/clean/{c}.keys.parquet" for c in before]


def provenance_outputs():
    """Every output with a provenance record, for the report's provenance table."""
    outs = []
    for c in CORPORA:
        outs += [f"{WORK}/ingest/{c}", f"{WORK}/shards/{c}", f"{WORK}/clean/{c}.stats.json"]
    return outs + [f"{RESULTS}/bitext/stats.json"]
