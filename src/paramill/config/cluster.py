"""What a rule's job asks its executor for: config ``resources.<rule>`` over the rule's
defaults, with memory and time that grow on each retry.

A job a cluster kills at its memory or time limit (SLURM's ``OUT_OF_MEMORY``, ``TIMEOUT``; a
paramill job out of host memory, exit status 3) would fail again the same way if it were
resubmitted with the same request. The SLURM profile retries a failed job (``retries: 2``), so
``mem_mb`` and ``runtime`` are handed to Snakemake as functions of the attempt: attempt ``n``
asks for ``value × growth^(n-1)`` (the default growth 2: 8,000 MB, then 16,000, then 32,000).
A first attempt asks for the value as given. ``max_mem_mb`` and ``max_runtime`` bound what any
attempt asks for (a partition's ``MaxMemPerNode`` and ``MaxTime``, its largest node's memory): a
request over the partition's limits pends for ever under SLURM's default
``EnforcePartLimits=NO`` (reason ``PartitionTimeLimit``; the run waits on it), one over every
node's memory is refused by ``sbatch``, so a retry past the bound asks for the bound itself.

A job's CPUs are its rule's ``threads``: the SLURM plugin asks ``--cpus-per-task`` of a
``cpus_per_task`` resource over the job's threads, so one in ``--default-resources`` (the
profile had ``cpus_per_task: 1``) made every job one CPU, and the job's own Snakemake then
scaled its threads down to it: every rule ran on one thread under SLURM whatever its
``threads``. ``cpus_per_task`` is therefore each rule's own resource, its threads.
Standard library only: the rules import it.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterator

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
    grown.paramill_grows = True  # type: ignore[attr-defined]  # what asks_by_attempt calls
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
    partitions' time limits (and pend for ever, or be refused by ``sbatch``). ``max_mem_mb``
    and ``max_runtime`` bound every attempt's request (a built-in default over them asks for
    the bound; the config check refuses a given ``mem_mb`` or ``runtime`` over its own
    bound)."""
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


#: (``scontrol show partition -o`` key, the resource it limits, what the warning calls it)
PARTITION_LIMITS = (("MaxTime", "runtime", "minutes"), ("MaxMemPerNode", "mem_mb", "MB"))


def slurm_minutes(text: str) -> int | None:
    """A SLURM time limit (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS``) in whole minutes, rounded down; None for ``UNLIMITED``/``INFINITE`` or
    what does not parse."""
    days, _, clock = text.rpartition("-") if "-" in text else ("0", "", text)
    try:
        parts = [int(p) for p in clock.split(":")]
        whole_days = int(days)
    except ValueError:
        return None
    if not parts or len(parts) > 3 or any(p < 0 for p in parts) or whole_days < 0:
        return None
    if "-" in text:  # D-HH[:MM[:SS]]
        hours, minutes = parts[0], (parts[1] if len(parts) > 1 else 0)
        return whole_days * 1440 + hours * 60 + minutes
    if len(parts) == 3:
        return parts[0] * 60 + parts[1]
    return parts[0]  # MM or MM:SS


def _records(scontrol: str) -> Iterator[dict[str, str]]:
    """The ``KEY=VALUE`` fields of each of ``scontrol show ... -o``'s lines."""
    for line in scontrol.splitlines():
        yield dict(f.split("=", 1) for f in line.split() if "=" in f)


def _partitions(fields: dict[str, str]) -> list[str]:
    """The partitions a node of ``scontrol show node -o`` belongs to."""
    return [name for name in fields.get("Partitions", "").split(",") if name]


def partition_limits(scontrol: str) -> dict[str, dict[str, Any]]:
    """The limits of each partition in ``scontrol show partition -o``'s lines: ``max_runtime``
    (minutes) and ``max_mem_mb``, each None where unlimited, and ``default`` (``Default=YES``)."""
    out: dict[str, dict[str, Any]] = {}
    for fields in _records(scontrol):
        name = fields.get("PartitionName")
        if not name:
            continue
        limits: dict[str, Any] = {"default": fields.get("Default") == "YES"}
        for slurm_key, key, _ in PARTITION_LIMITS:
            value = fields.get(slurm_key, "UNLIMITED")
            limits[BOUND[key]] = slurm_minutes(value) if slurm_key == "MaxTime" else (
                int(value) if value.isdigit() and int(value) > 0 else None)
        out[name] = limits
    return out


def node_memory(scontrol: str, field: str = "RealMemory") -> dict[str, int]:
    """The most of ``field`` (``RealMemory``, MB; ``CPUTot``, CPUs) a node of each partition
    has, in ``scontrol show node -o``'s lines: a job asking for more on a node is refused by
    ``sbatch`` ("Requested node configuration is not available"), whatever the partition's
    ``MaxMemPerNode``."""
    out: dict[str, int] = {}
    for fields in _records(scontrol):
        value = fields.get(field, "")
        if not value.isdigit() or int(value) <= 0:
            continue
        for name in _partitions(fields):
            out[name] = max(out.get(name, 0), int(value))
    return out


#: a GPU entry of a node's ``Gres`` (``gpu:4``, ``gpu:a100:4(S:0-1)``): its model, its count
_GPU_GRES = re.compile(r"(?<![A-Za-z0-9_])gpu(?::([A-Za-z0-9_.\-]+))?:(\d+)")


def node_gpus(scontrol: str) -> dict[str, dict[str | None, int]]:
    """For each partition in ``scontrol show node -o``'s lines, the most GPUs one of its nodes
    has: in all (key None) and of each model. A partition whose nodes have none maps to
    ``{None: 0}``."""
    out: dict[str, dict[str | None, int]] = {}
    for fields in _records(scontrol):
        if "NodeName" not in fields:
            continue
        per_model: dict[str | None, int] = {}
        for model, count in _GPU_GRES.findall(fields.get("Gres", "")):
            per_model[model or None] = per_model.get(model or None, 0) + int(count)
        for name in _partitions(fields):
            most = out.setdefault(name, {None: 0})
            most[None] = max(most[None], sum(per_model.values()))
            for model, count in per_model.items():
                if model is not None:
                    most[model] = max(most.get(model, 0), count)
    return out


def gpus_asked(resources: dict[str, Any]) -> tuple[int, str | None]:
    """The GPUs a job's ``resources`` ask SLURM for, and their model: the plugin's ``gpu``
    (with ``gpu_model``, one where no count is given) or a ``gres`` of ``gpu[:model][:N]``;
    (0, None) where none."""
    model = resources.get("gpu_model") or None
    count = resources.get("gpu")
    count = int(count) if isinstance(count, str) and count.isdigit() else count
    if _is_count(count) and count > 0:
        return count, model
    if model:
        return 1, model
    gres = resources.get("gres")
    parts = gres.split(":") if isinstance(gres, str) else []
    if parts and parts[0] == "gpu":
        count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
        return count, (parts[1] if len(parts) == 3 else None)
    return 0, None


def slurm_partition_limits(timeout: float = 10.0) -> dict[str, dict[str, Any]]:
    """:func:`partition_limits` of this cluster (``scontrol``), with each partition's largest
    node's memory as ``node_mem_mb`` and CPUs as ``node_cpus`` (:func:`node_memory`) and the
    most GPUs a node has as ``node_gpus`` (:func:`node_gpus`), each None where not known;
    empty where ``scontrol`` cannot be asked."""
    import subprocess

    def scontrol(what: str) -> str:
        return subprocess.run(["scontrol", "show", what, "-o"], capture_output=True, text=True,
                              timeout=timeout, check=True).stdout

    try:
        limits = partition_limits(scontrol("partition"))
    except (OSError, subprocess.SubprocessError):
        return {}
    try:
        text = scontrol("node")
    except (OSError, subprocess.SubprocessError):
        text = None
    nodes, cpus, gpus = ((node_memory(text), node_memory(text, "CPUTot"), node_gpus(text))
                         if text is not None else ({}, {}, {}))
    for name, lim in limits.items():
        lim["node_mem_mb"], lim["node_cpus"] = nodes.get(name), cpus.get(name)
        lim["node_gpus"] = gpus.get(name) if text is not None else None
    return limits


def asks_by_attempt(resources: dict[str, Any], first: dict[str, Any], wildcards: Any,
                    attempts: int) -> list[dict[str, int]]:
    """What a job asks for on each of its ``attempts``: ``first``, the job's resources as
    Snakemake evaluated them for its first attempt, and, for a retry, the rule's own
    growing ``resources`` (:func:`on_attempt`) evaluated for it."""
    out = []
    for attempt in range(1, attempts + 1):
        ask = {}
        for key in GROWING:
            rule_value = _grows(resources.get(key))
            if rule_value is not None:
                ask[key] = int(rule_value(wildcards, attempt))
            elif _is_count(first.get(key)):
                ask[key] = int(first[key])
        out.append(ask)
    return out


def _grows(value: Any) -> Callable[..., int] | None:
    """``value`` if it is an :func:`on_attempt` function, or the one a Snakemake ``Resource``
    holds (Snakemake 9 wraps a rule's resources so; it has no public way to them, and a
    version that moves them leaves the rule unchecked, not wrong)."""
    for candidate in (value, getattr(value, "_evaluator", None), getattr(value, "_value", None)):
        if getattr(candidate, "paramill_grows", False):
            return candidate
    return None


def requests_over_limits(requests: list[tuple[str, str | None, list[dict[str, int]]]],
                         limits: dict[str, dict[str, Any]]) -> list[str]:
    """A line for each rule (once a resource) of ``requests`` — (config entry, partition or
    None for the cluster's default, what each attempt asks for) — whose attempt asks for more
    than its partition's ``MaxTime`` or ``MaxMemPerNode`` (SLURM accepts such a job under its
    default ``EnforcePartLimits=NO`` and leaves it pending for ever, ``PartitionTimeLimit``,
    and the run waits on it), or more memory than its partition's largest node has
    (``node_mem_mb``: ``sbatch`` refuses it, and the job fails where its retry was to succeed),
    or, with a fourth element of what every attempt asks alike, more GPUs or CPUs than one
    node has (:func:`_over_node`). The line names the attempt, the request and the config key
    that bounds it; of two memory limits, the lower."""
    default = next((name for name, lim in limits.items() if lim["default"]), None)
    seen, lines = set(), []
    for entry, partition, asks, *gpus in requests:
        name = partition or default
        if name not in limits:
            continue
        for key, line in _over_node(entry, name, limits[name], gpus[0] if gpus else {}):
            if (entry, key) not in seen:
                seen.add((entry, key))
                lines.append(line)
        for key, unit, most, what, then in _limits_of(name, limits[name]):
            bound = BOUND[key]
            over = [(n, ask[key]) for n, ask in enumerate(asks, 1) if ask.get(key, 0) > most]
            if not over or (entry, bound) in seen:
                continue
            seen.add((entry, bound))
            attempt, value = over[0]
            which = "its first attempt" if attempt == 1 else f"its retry (attempt {attempt})"
            lines.append(f"rule {entry}: {which} asks for {value:,} {unit}, {what}: {then}; set "
                         f"resources.{entry}.{bound}: {most}")
    return lines


def _over_node(entry: str, name: str, limits: dict[str, Any], fixed: dict[str, Any]
               ) -> list[tuple[str, str]]:
    """(key, line) for what a job asks of every attempt alike (``fixed``: ``gpu``, the
    (count, model) of :func:`gpus_asked`; ``cpus_per_task``, its threads) and no one node
    of its partition has."""
    out = []
    if fixed.get("gpu") and (line := _over_gpus(entry, name, limits, *fixed["gpu"])):
        out.append(("gpu", line))
    cpus, most = fixed.get("cpus_per_task"), limits.get("node_cpus")
    if _is_count(cpus) and most is not None and cpus > most:
        out.append(("threads", f"rule {entry}: it asks for {cpus} CPUs (its threads), more than "
                               f"one node of partition {name} has ({most}): SLURM may leave it "
                               f"pending for ever (PartitionConfig) or refuse it; set "
                               f"resources.{entry}.threads: {most}"))
    return out


def _over_gpus(entry: str, name: str, limits: dict[str, Any], count: int, model: str | None
               ) -> str | None:
    """The line for a job asking for more GPUs (of ``model``) than one node of its partition
    has: on one node ``sbatch`` refuses it; where the partition has more, SLURM spreads the
    GPUs over nodes, and the job's one process sees one node's."""
    nodes = limits.get("node_gpus")
    most = None if nodes is None else nodes.get(model, 0)
    if not count or most is None or count <= most:
        return None
    what = f"{count} GPU{'s' if count > 1 else ''}" + (f" ({model})" if model else "")
    if not most:
        return (f"rule {entry}: it asks for {what}, and no node of partition {name} has "
                f"{'one of that model' if model else 'one'}: sbatch refuses it; set "
                f"resources.{entry}.slurm_partition to a partition with GPUs")
    return (f"rule {entry}: it asks for {what}, more than one node of partition {name} has "
            f"({most}): sbatch refuses it, or SLURM spreads it over nodes and the job's one "
            f"process sees one node's; set resources.{entry}.gpu: {most}")


def _limits_of(name: str, limits: dict[str, Any]) -> list[tuple[str, str, int, str, str]]:
    """A partition's limits as (resource, unit, limit, how a line names it, what follows),
    the lower of its two memory limits only."""
    pending = "SLURM may leave it pending for ever"
    out = []
    for slurm_key, key, unit in PARTITION_LIMITS:
        most = limits.get(BOUND[key])
        node = limits.get("node_mem_mb") if key == "mem_mb" else None
        if node is not None and (most is None or node < most):
            out.append((key, unit, node, f"more than partition {name}'s largest node has "
                                         f"({node:,} MB)", "sbatch refuses it and the job fails"))
        elif most is not None:
            out.append((key, unit, most, f"over partition {name}'s {slurm_key} of {most:,}", pending))
    return out
