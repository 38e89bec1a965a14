"""The decisions the Snakemake rules need, as functions of the config (``rules/common.smk``
calls them; nothing here imports Snakemake, whose objects are read by their attributes):
the config a run reads and its digest, a rule's params, launch-only settings, threads and
resources, and the warnings a run starts with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paramill import config as configs
from paramill.config import cluster
from paramill.io.yamlfiles import ConfigError, check_expanded, read_yaml
from paramill.provenance import PROV_SUFFIX, prov_path
from paramill.run import plan


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``, mappings merged key by key (as Snakemake merges config
    files and ``--config`` values)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = (merged(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out


def targets_read_as_config(files: list[str]) -> list[str]:
    """The ``--configfile`` files that a run wrote (a provenance record beside them, or a
    record itself): targets written after ``--configfile``, which takes every word after it
    as a config file."""
    return [f for f in files if f.endswith(PROV_SUFFIX) or prov_path(f).exists()]


def given_config(snakemake_config: dict[str, Any], files: list[str],
                 overrides: dict[str, Any], sample: str = "config.yaml") -> dict[str, Any]:
    """The config a run asked for: ``--configfile`` files (``files``) replace the sample's
    ``config.yaml``, which Snakemake would merge them into (keeping the sample's corpora);
    named first (``--configfile config.yaml overlay.yaml``) it is overlaid. ``--config``
    values (``overrides``) apply on top. Without files, Snakemake's own config. A file a run
    wrote (a target given after ``--configfile``: :func:`targets_read_as_config`) is
    refused, naming the order Snakemake needs."""
    if targets := targets_read_as_config(files):
        named = [plan.shown(f) for f in targets]
        configs_given = " ".join(plan.shown(f) for f in files if f not in targets)
        raise ConfigError(
            f"paramill: {', '.join(named)} {'was' if len(named) == 1 else 'were'} read as a "
            "config file: --configfile takes every word after it, so targets go before it: "
            f"snakemake ... {' '.join(named)} --configfile {configs_given}")
    if not files or Path(files[0]).resolve() == Path(sample).resolve():
        return dict(snakemake_config)
    given: dict[str, Any] = {}
    for path in files:
        given = merged(given, read_yaml(path) or {})
    return merged(given, overrides)


def workflow_config(given: dict[str, Any], files_read: list[str]) -> tuple[dict[str, Any], str]:
    """The resolved config and its digest: every file Snakemake read is read again as
    paramill reads config files (a key given twice is an error naming the lines), and the
    config goes through JSON first, as ``paramill config resolve -`` reads it (YAML dates
    become strings), so the workflow, its digest and the command line agree. A bad config is
    a ValueError whose message names the key."""
    try:
        check_expanded(given, "the config")  # an alias bomb would expand in json.dumps
        for path in files_read:
            read_yaml(path)
        resolved = json.loads(json.dumps(configs.resolve(json.loads(json.dumps(given, default=str)))))
    except ConfigError as exc:
        raise ValueError(f"paramill config resolve: error: {exc}") from None
    except RecursionError:
        raise ValueError("paramill config resolve: error: the config is nested too deeply to "
                         "read") from None
    return resolved, configs.digest(resolved)


def section(config: dict[str, Any], *path: str) -> Any:
    for part in path:
        config = config[part]
    return config


def as_json(value: Any) -> str:
    """A config slice as compact JSON, for a rule's ``params:`` (a change re-runs the rule)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def stage_settings(config: dict[str, Any], *path: str) -> dict[str, Any]:
    """The config section at ``path`` as its rule's params take it
    (:func:`paramill.config.rule_params`: without the keys that choose a rule's inputs, the
    launch-only keys, and keys added later while at their default)."""
    return configs.rule_params(section(config, *path), *path)


def launch_settings(config: dict[str, Any], *sections: str) -> str:
    """The launch-only keys of the sections named (``"bitext.ingest"``), as JSON for a rule's
    ``--launch``: passed from a global, outside the rule's params and shell text, so changing
    one re-runs nothing; the next job that runs takes it."""
    return as_json({name: {k: section(config, *name.split("."))[k]
                           for k in configs.marked("launch", *name.split("."))}
                    for name in sections})


def rule_threads(config: dict[str, Any], rule: str, default: int = 1) -> int:
    """A rule's threads: ``resources.<rule>.threads`` over the rule's default."""
    return config["resources"].get(rule, {}).get("threads", default)


def rule_local(config: dict[str, Any], rule: str, default: bool = False) -> bool:
    """Whether a rule's jobs run where snakemake runs (``localrule``): ``resources.<rule>.local``
    over the rule's default (true for the rules that need the web)."""
    return config["resources"].get(rule, {}).get("local", default) is True


def rule_resources(config: dict[str, Any], rule: str, resumes: bool = False,
                   **defaults: Any) -> dict[str, Any]:
    """A rule's resources: ``resources.<rule>`` over the rule's defaults, ``mem_mb`` and
    ``runtime`` growing on each retry (``runtime`` not for a rule that ``resumes`` from its
    checkpoints), ``cpus_per_task`` its threads (:func:`paramill.config.cluster.rule_resources`)."""
    return cluster.rule_resources(config["resources"].get(rule), defaults, resumes=resumes)


def _requests(jobs) -> list[tuple]:
    """Each rule's requests, attempt by attempt, of the jobs a run will submit (Snakemake's
    jobs, read by their attributes); a rule's shards that ask alike are asked once."""
    requests, seen = [], set()
    for job in jobs:
        try:
            first = dict(job.resources.items())
            key = (job.rule.name, first.get("slurm_partition"), first.get("mem_mb"),
                   first.get("runtime"))
            if key in seen:
                continue
            seen.add(key)
            requests.append((job.rule.name, first.get("slurm_partition"),
                             cluster.asks_by_attempt(job.rule.resources, first, job.wildcards,
                                                     (job.rule.restart_times or 0) + 1),
                             {"gpu": cluster.gpus_asked(first),
                              "cpus_per_task": first.get("cpus_per_task")}))
        except Exception:  # a job whose resources cannot be read here is not checked
            continue
    return requests


def wildcard_values(jobs: list, rule: str, wildcard: str) -> set[str]:
    """The values of ``wildcard`` in the jobs of ``rule`` among ``jobs`` (Snakemake's)."""
    return {str(job.wildcards.get(wildcard)) for job in jobs if job.rule.name == rule}


def asked_for(target_jobs) -> list[str]:
    """The files a run was asked to build, when its targets are not the default (rule
    ``all``): each target job's outputs, or its inputs where it has none (Snakemake's jobs).
    Empty for a run of the default target."""
    if not target_jobs or any(job.rule.name == "all" for job in target_jobs):
        return []
    return sorted({str(f) for job in target_jobs for f in (job.output or job.input)})


def start_warnings(config: dict[str, Any], jobs: list, executor: str,
                   limits: dict | None = None) -> list[str]:
    """What a run warns of as it starts, one line each: under the SLURM executor, requests
    over a partition's limits or more than one of its nodes has (asked of ``scontrol``, or
    ``limits``: SLURM's default accepts a job over the partition's limits and leaves it
    pending for ever); and full-size translation models trained on CPUs."""
    lines = []
    if executor == "slurm":
        limits = cluster.slurm_partition_limits() if limits is None else limits
        if limits:
            lines += [f"paramill: {line}" for line in
                      cluster.requests_over_limits(_requests(jobs), limits)]
    directions = sorted(wildcard_values(jobs, "nmt_train", "direction"))
    cpu = plan.cpu_training_warning(config, directions, submitted=executor != "local",
                                    gpu_here=plan.gpu_visible())
    return lines + ([cpu] if cpu else [])
