"""What a rule's job asks its executor for: config ``resources.<rule>`` over the rule's
defaults, with memory and time that grow on each retry.

A job a cluster kills at its memory or time limit (SLURM's ``OUT_OF_MEMORY``, ``TIMEOUT``; a
paramill job out of host memory, exit status 3) would fail again the same way if it were
resubmitted with the same request. The SLURM profile retries a failed job (``retries: 2``), so
``mem_mb`` and ``runtime`` are handed to Snakemake as functions of the attempt: attempt ``n``
asks for ``value × growth^(n-1)`` (the default growth 2: 8,000 MB, then 16,000, then 32,000).
A first attempt asks for the value as given. ``max_mem_mb`` and ``max_runtime`` bound what any
attempt asks for (a partition's ``MaxMemPerNode`` and ``MaxTime``): a request over them pends
for ever under SLURM's default ``EnforcePartLimits=NO`` (reason ``PartitionTimeLimit``; the run
waits on it) or is refused by ``sbatch``, so a retry past the bound asks for the bound itself.

A job's CPUs are its rule's ``threads``: the SLURM plugin asks ``--cpus-per-task`` of a
``cpus_per_task`` resource over the job's threads, so one in ``--default-resources`` (the
profile had ``cpus_per_task: 1``) made every job one CPU, and the job's own Snakemake then
scaled its threads down to it: every rule ran on one thread under SLURM whatever its
``threads``. ``cpus_per_task`` is therefore each rule's own resource, its threads.
Standard library only: the rules import it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

#: the resources that grow on a retry: what a job is killed for exceeding
GROWING = ("mem_mb", "runtime")
#: those of a rule that resumes from its checkpoints: its time window stays as it is
GROWING_RESUMED = ("mem_mb",)
#: how much a retry multiplies them by, unless ``resources.<rule>.retry_growth`` says otherwise
RETRY_GROWTH = 2.0
#: config keys of ``resources.<rule>`` that are not resources handed to the executor
NOT_RESOURCES = ("threads", "local", "retry_growth", "max_mem_mb", "max_runtime")
#: the config key that bounds each growing resource
BOUND = {"mem_mb": "max_mem_mb", "runtime": "max_runtime"}


def on_attempt(value: int, growth: float, bound: int | None = None) -> Callable[..., int]:
    """``value`` as a Snakemake resource function: ``value`` on the first attempt, times
    ``growth`` for each retry before this one, rounded up to a whole MB or minute, and never
    over ``bound`` (when given)."""
    def grown(wildcards: Any, attempt: int) -> int:
        # the exponent is bounded: a thousandth attempt must not overflow a float
        wanted = int(math.ceil(value * growth ** min(max(int(attempt), 1) - 1, 64)))
        return wanted if bound is None else min(wanted, bound)
    return grown


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def threads_of_job(wildcards: Any, threads: int) -> int:
    """``cpus_per_task`` as a Snakemake resource function: the job's threads."""
    return int(threads)


def rule_resources(given: dict[str, Any] | None, defaults: dict[str, Any],
                   resumes: bool = False) -> dict[str, Any]:
    """The resources of a rule: its config entry ``given`` (``resources.<rule>``) over the
    rule's ``defaults``, less the keys that are not executor resources (``threads`` goes to
    the rule's ``threads:``, ``local`` to ``localrule:``). ``mem_mb`` and ``runtime`` grow on
    each retry by ``retry_growth`` (:data:`RETRY_GROWTH` unless the entry says; 1 keeps them
    as they are); ``cpus_per_task`` is the job's threads (:func:`threads_of_job`). A rule
    that ``resumes`` (training that goes on from its last checkpoint) keeps its ``runtime``:
    a retry gets another window as long, where a doubled 48 hours would pass many
    partitions' time limits (and pend for ever, or be refused by ``sbatch``). ``max_mem_mb`` and ``max_runtime``
    bound every attempt's request (a built-in default over them asks for the bound; the config
    check refuses a given ``mem_mb`` or ``runtime`` over its own bound)."""
    given = given or {}
    growth = float(given.get("retry_growth", RETRY_GROWTH))
    merged = {**defaults, **{k: v for k, v in given.items() if k not in NOT_RESOURCES},
              "cpus_per_task": threads_of_job}
    for key in GROWING:
        bound = given.get(BOUND[key])
        if not _is_count(merged.get(key)):
            continue
        if growth != 1 and key in (GROWING_RESUMED if resumes else GROWING):
            merged[key] = on_attempt(merged[key], growth, bound if _is_count(bound) else None)
        elif _is_count(bound):
            merged[key] = min(merged[key], bound)
    return merged
