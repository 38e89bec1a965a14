# Shared helpers for the rules: config resolution, paths, resources. Declarative glue only;
# the work is done by the `paramill` command line.
import json
import os
import sys
from pathlib import Path

from snakemake.common.configfile import load_configfile
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import update_config

from paramill.config import ConfigError, check_expanded, read_yaml
from paramill.config import digest as config_digest, resolve as resolve_config
from paramill.config import schema as config_schema  # the committed schema: no stage imported
from paramill.config import marked as marked_keys
from paramill.config import rule_params
from paramill.embed.sweep import model_settings, sweep_points  # pure Python, no torch
from paramill.bitext.readers import CorpusSpec  # a corpus's files, as its format names them
from paramill.pairs.readers import PairCorpusSpec
from paramill import formats  # what each input layout reads
from paramill.twitter.months import days_before, month_before  # standard library only
from paramill.runlocks import keep_other_runs_locks
from paramill.jobresources import rule_resources as job_resources  # standard library only
from paramill.jobresources import asks_by_attempt, gpus_asked, requests_over_limits, slurm_partition_limits
from paramill import plan  # the lines a run starts and ends with; standard library only

# A run's end removes its own locks only: Snakemake 9.17+ removed every run's (paramill.runlocks)
keep_other_runs_locks()

# The `paramill` command sits beside the Python that runs Snakemake (.venv/bin).
_bin = str(Path(sys.executable).parent)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ.update(PATH=os.pathsep.join([_bin, os.environ.get("PATH", "")]))


def _resolve(cfg):
    """Validate the config with paramill's schema, fill defaults; errors name the key. The
    config goes through JSON first, as `paramill config resolve -` reads it (YAML dates such
    as 2026-11-22 become strings), and so does the result, so the workflow, its digest and
    the command line agree. (It ran `paramill config resolve` in a process of its own: about
    a second of every snakemake start, and of every SLURM job's.)"""
    try:  # a YAML alias bomb would expand in json.dumps below
        check_expanded(cfg, "the config")
        for path in workflow.configfiles:  # read as paramill reads them: a key given twice
            read_yaml(path)  # is an error naming the lines (Snakemake keeps the second)
        resolved = json.loads(json.dumps(resolve_config(json.loads(json.dumps(cfg, default=str)))))
    except (ConfigError, ValueError) as exc:
        raise WorkflowError(f"paramill config resolve: error: {exc}") from None
    except RecursionError:
        raise WorkflowError("paramill config resolve: error: the config is nested too deeply "
                            "to read") from None
    return {"config": resolved, "digest": config_digest(resolved)}


def _given_config():
    """The config asked for: `--configfile mine.yaml` replaces the sample's config.yaml (which
    Snakemake would merge it into, keeping the sample's corpora); name config.yaml first
    (`--configfile config.yaml overlay.yaml`) to overlay it. `--config` applies on top. Spawned
    jobs get the same files and values, so they resolve the same config."""
    files = [Path(f) for f in workflow.overwrite_configfiles]
    note = plan.configfile_note([str(f) for f in files])
    if note and workflow.is_main_process:
        logger.info(note)
    if not files or files[0].resolve() == Path("config.yaml").resolve():
        return dict(config)
    given = {}
    for path in files:
        update_config(given, load_configfile(str(path)))
    update_config(given, workflow.config_settings.config or {})
    return given


_resolved = _resolve(_given_config())
config.clear()
config.update(_resolved["config"])
# recorded in every provenance file
os.environ.update(PARAMILL_CONFIG_DIGEST=_resolved["digest"])

WORK = config["work_dir"]
RESULTS = config["results"]
LOGS = config["log_dir"]
CONTAINER = config["container"]
CORPORA = list(config["bitext"]["corpora"])  # bitext: back-translated into candidates
PAIR_CORPORA = list(config["pairs"]["corpora"])  # pair corpora: candidates as given


wildcard_constraints:
    corpus="[A-Za-z0-9][A-Za-z0-9_-]*",
    shard="shard-[0-9]+",
    direction="cs-en|en-cs",
    lang="cs|en",
    model="[A-Za-z0-9][A-Za-z0-9_-]*",
    release="[A-Za-z0-9][A-Za-z0-9_-]*",
    date="[0-9]{4}-[0-9]{2}-[0-9]{2}",
    month="[0-9]{4}-[0-9]{2}",


def _section(*path):
    section = config
    for part in path:
        section = section[part]
    return section


def stage_settings(*path):
    """The config section at ``path`` as its rule's params take it (`paramill.config.rule_params`:
    without its workflow keys, x-workflow, which choose a rule's inputs; its launch-only keys,
    x-launch, which `launch_settings` passes; and keys added later while at their default,
    x-quiet-default), so changing one of the first two, or updating to the third, re-runs
    nothing by itself."""
    return rule_params(_section(*path), *path)


def launch_settings(*sections):
    """The launch-only keys of the config sections named (``"bitext.ingest"``), as JSON for a
    rule's shell: `--launch {X_LAUNCH:q}` of a global, so neither its params nor its code
    (Snakemake's rerun triggers compare the unformatted shell text) hold them; the job that
    runs takes them. `scripts/lint.py` lets exactly these globals into shell lines."""
    return as_json({name: {k: _section(*path)[k] for k in marked_keys("launch", *path)}
                    for name in sections for path in [name.split(".")]})


def as_json(value):
    """A config slice as compact JSON, for `params:` (a change re-runs the rule)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def rule_threads(rule_name, default=1):
    """A rule's threads: config `resources.<rule>.threads` over the default."""
    return config["resources"].get(rule_name, {}).get("threads", default)


def rule_resources(rule_name, resumes=False, **defaults):
    """A rule's resources: config `resources.<rule>` over the defaults given here, `mem_mb`
    and `runtime` growing on each retry (`runtime` not for a rule that `resumes` from its
    checkpoints), `cpus_per_task` its threads (`paramill.jobresources`).

    gpu/gpu_model/gres/slurm_partition/slurm_extra pass straight to the SLURM plugin.
    """
    return job_resources(config["resources"].get(rule_name), defaults, resumes=resumes)


def warn_requests_over_partitions():
    """Under the SLURM executor, as the run starts: a warning for each rule whose jobs would
    ask, on some attempt, for more than their partition's MaxTime or MaxMemPerNode, or more
    memory, GPUs or CPUs than one of its nodes has (asked of `scontrol`). SLURM's default
    `EnforcePartLimits=NO` accepts a job over the partition's limits and leaves it pending
    for ever (`PartitionTimeLimit`), and the run waits on it; one over every node's memory
    `sbatch` refuses. The warning names the `max_runtime`/`max_mem_mb` that bounds it.
    Nothing where scontrol cannot be asked."""
    if getattr(getattr(workflow, "executor_plugin", None), "name", None) != "slurm":
        return
    limits = slurm_partition_limits()
    if not limits:
        return
    requests, seen = [], set()
    for job in workflow.dag.needrun_jobs():
        job_rule = job.rule
        try:
            first = dict(job.resources.items())
            key = (job_rule.name, first.get("slurm_partition"), first.get("mem_mb"), first.get("runtime"))
            if key in seen:  # a rule's shards ask alike
                continue
            seen.add(key)
            requests.append((job_rule.name, first.get("slurm_partition"),
                             asks_by_attempt(job_rule.resources, first, job.wildcards,
                                             (job_rule.restart_times or 0) + 1),
                             {"gpu": gpus_asked(first), "cpus_per_task": first.get("cpus_per_task")}))
        except Exception:  # a job whose resources cannot be read here is not checked
            continue
    for line in requests_over_limits(requests, limits):
        logger.warning(f"paramill: {line}")


def _executor():
    return getattr(getattr(workflow, "executor_plugin", None), "name", "local")


def warn_cpu_training():
    """As a run starts: a warning when it will train full-size translation models on CPUs."""
    directions = [job.wildcards.get("direction") for job in workflow.dag.needrun_jobs()
                  if job.rule.name == "nmt_train"]
    line = plan.cpu_training_warning(config, directions, submitted=_executor() != "local",
                                     gpu_here=plan.gpu_visible())
    if line:
        logger.warning(line)


onstart:
    warn_requests_over_partitions()
    warn_cpu_training()


onsuccess:
    for line in plan.large_rejections(config):
        logger.warning(line)
    logger.info(plan.results_summary(config))


def rule_local(rule_name, default=False):
    """Whether a rule's jobs run where snakemake runs (`localrule:`): config
    `resources.<rule>.local` over the default given here (true for the rules that need the web)."""
    return config["resources"].get(rule_name, {}).get("local", default) is True


# The launch-only keys each rule's command takes (one global a rule; see launch_settings).
BITEXT_INGEST_LAUNCH = launch_settings("bitext.ingest")
BITEXT_CLEAN_LAUNCH = launch_settings("bitext.clean", "bitext.ingest")
PAIRS_INGEST_LAUNCH = launch_settings("pairs.clean", "pairs.ingest")
EMBED_TRAIN_LAUNCH = launch_settings("embed.train")
LEXICON_LAUNCH = launch_settings("lexicon")
TWITTER_HARVEST_LAUNCH = launch_settings("twitter.harvest")
# every score_<filter> rule: the filters' scoring batch sizes, each job reading its filter's
FILTERS_LAUNCH = launch_settings("filters.classifier", "filters.dual_xent", "filters.parascore")
CLASSIFIER_TRAIN_LAUNCH = launch_settings("filters.classifier")
