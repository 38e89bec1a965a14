# Shared glue for the rules: the config a run reads, and the helpers its rules call. The
# decisions are paramill.run.workflow's (tested there); the work is done by the `paramill`
# command line.
import os
import sys
from functools import partial
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from paramill.config import rule_params
from paramill.config import schema as config_schema  # the committed schema: no stage imported
from paramill.config.checks import missing_input_files
from paramill.embed.sweep import model_settings, sweep_points  # pure Python, no torch
from paramill.formats.registry import corpus_settings, files as layout_files
from paramill.twitter.days import days_before, month_before  # standard library only
from paramill.run import plan, workflow as decide
from paramill.run.runlocks import keep_other_runs_locks

# A run's end removes its own locks only: Snakemake 9.17+ removed every run's (paramill.runlocks)
keep_other_runs_locks()

# The `paramill` command sits beside the Python that runs Snakemake (.venv/bin).
_bin = str(Path(sys.executable).parent)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ.update(PATH=os.pathsep.join([_bin, os.environ.get("PATH", "")]))

_files = [str(f) for f in workflow.overwrite_configfiles]
if workflow.is_main_process and (_note := plan.configfile_note(_files)):
    logger.info(_note)
try:
    _given = decide.given_config(dict(config), _files, workflow.config_settings.config or {})
    _resolved, _digest = decide.workflow_config(_given, [str(f) for f in workflow.configfiles])
except ValueError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(_resolved)
if workflow.is_main_process and (_missing := missing_input_files(config)):
    raise WorkflowError("paramill: the config names input files that are not there:\n  "
                        + "\n  ".join(_missing))
os.environ.update(PARAMILL_CONFIG_DIGEST=_digest)  # recorded in every provenance file

WORK = config["work_dir"]
RESULTS = config["results"]
LOGS = config["log_dir"]
CONTAINER = config["container"]
CORPORA = list(config["bitext"]["corpora"])  # bitext: back-translated into candidates
PAIR_CORPORA = list(config["pairs"]["corpora"])  # pair corpora: candidates as given
CorpusSpec, PairCorpusSpec = corpus_settings("bitext"), corpus_settings("pairs")


wildcard_constraints:
    corpus="[A-Za-z0-9][A-Za-z0-9_-]*",
    shard="shard-[0-9]+",
    direction="cs-en|en-cs",
    lang="cs|en",
    model="[A-Za-z0-9][A-Za-z0-9_-]*",
    release="[A-Za-z0-9][A-Za-z0-9_-]*",
    date="[0-9]{4}-[0-9]{2}-[0-9]{2}",
    month="[0-9]{4}-[0-9]{2}",


# the helpers the rules call, on this run's config
as_json = decide.as_json
stage_settings = partial(decide.stage_settings, config)
launch_settings = partial(decide.launch_settings, config)
rule_threads = partial(decide.rule_threads, config)
rule_resources = partial(decide.rule_resources, config)
rule_local = partial(decide.rule_local, config)


def _executor():
    return getattr(getattr(workflow, "executor_plugin", None), "name", "local")


_PLANNED = []  # the jobs the run means to run (onstart), for the lines it ends with


onstart:
    _PLANNED.extend(workflow.dag.needrun_jobs())
    for _line in decide.start_warnings(config, _PLANNED, _executor()):
        logger.warning(_line)


onsuccess:
    for _line in plan.large_rejections(config):
        logger.warning(_line)
    for _line in plan.release_lines(config, decide.wildcard_values(_PLANNED, "select", "release")):
        logger.info(_line)
    logger.info(plan.results_summary(config, decide.asked_for(workflow.dag.targetjobs)))


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
