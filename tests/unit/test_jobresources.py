"""What a rule's job asks its executor for, and how a retry grows it."""

from __future__ import annotations

import inspect
import re

import pytest

from paramill import config
from paramill.config.cluster import RETRY_GROWTH, rule_resources
from tests.conftest import REPO


def _on(resources, attempt, threads=1):
    """The resources as Snakemake evaluates them for ``attempt`` of a job of ``threads``
    (a value, or a function of the names Snakemake passes it)."""
    given = {"wildcards": None, "attempt": attempt, "threads": threads}
    return {k: v(**{name: given[name] for name in inspect.signature(v).parameters})
            if callable(v) else v for k, v in resources.items()}


def test_memory_and_time_double_on_each_retry_and_nothing_else_changes():
    res = rule_resources({"gpu": 1}, {"mem_mb": 8000, "runtime": 720})
    assert _on(res, 1) == {"mem_mb": 8000, "runtime": 720, "gpu": 1, "cpus_per_task": 1}
    assert _on(res, 2) == {"mem_mb": 16000, "runtime": 1440, "gpu": 1, "cpus_per_task": 1}
    assert _on(res, 3, threads=8) == {"mem_mb": 32000, "runtime": 2880, "gpu": 1,
                                      "cpus_per_task": 8}
    assert RETRY_GROWTH == 2.0


def test_the_config_entry_wins_over_the_defaults_and_sets_the_growth():
    given = {"mem_mb": 3000, "threads": 4, "local": True, "retry_growth": 1.5,
             "slurm_partition": "big"}
    res = rule_resources(given, {"mem_mb": 1000, "runtime": 10})
    # threads go to the rule's threads: (and so to cpus_per_task), local to localrule:
    assert set(res) == {"mem_mb", "runtime", "slurm_partition", "cpus_per_task"}
    assert _on(res, 1, 4) == {"mem_mb": 3000, "runtime": 10, "slurm_partition": "big",
                              "cpus_per_task": 4}
    # rounded up to a whole MB and minute: 3000 × 1.5², 10 × 1.5²
    assert _on(res, 3, 4) == {"mem_mb": 6750, "runtime": 23, "slurm_partition": "big",
                              "cpus_per_task": 4}


def test_a_growth_of_one_asks_for_the_same_each_time():
    res = rule_resources({"retry_growth": 1}, {"mem_mb": 2000, "runtime": 60})
    assert {k: v for k, v in res.items() if k != "cpus_per_task"} == {
        "mem_mb": 2000, "runtime": 60}  # plain values: no function for Snakemake
    assert rule_resources(None, {"mem_mb": 5}) is not None


def test_the_growth_is_a_config_key_with_bounds():
    assert config.resolve({"resources": {"embed_train": {"retry_growth": 3}}})[
        "resources"]["embed_train"]["retry_growth"] == 3
    for bad in (0.5, 17, "twice"):
        with pytest.raises(config.ConfigError, match="resources.embed_train.retry_growth"):
            config.resolve({"resources": {"embed_train": {"retry_growth": bad}}})
    doc = config.schema()["properties"]["resources"]["additionalProperties"]["properties"][
        "retry_growth"]["description"]
    assert f"(default {RETRY_GROWTH:g}: " in doc


def test_every_rule_asks_through_rule_resources():
    """A rule's resources written out by hand would not grow on a retry."""
    blocks = [(path.name, block) for path in sorted((REPO / "rules").glob("*.smk"))
              for block in re.findall(r"^\s+resources:\s*\n(.*)\n", path.read_text(), re.M)]
    assert len(blocks) >= 30
    assert [b for b in blocks if not b[1].strip().startswith("**rule_resources(")] == []


def test_a_rule_that_resumes_keeps_its_time_and_grows_its_memory():
    res = rule_resources(None, {"mem_mb": 8000, "runtime": 2880}, resumes=True)
    assert _on(res, 1) == {"mem_mb": 8000, "runtime": 2880, "cpus_per_task": 1}
    assert _on(res, 3) == {"mem_mb": 32000, "runtime": 2880, "cpus_per_task": 1}


def test_the_trainings_that_resume_say_so():
    """nmt_train goes on from OpenNMT-py's last checkpoint, embed_train and parascore_model
    from `<model>.pt.resume.pt`: a retry's window is as long as the first's."""
    text = "".join(p.read_text() for p in (REPO / "rules").glob("*.smk"))
    resuming = set(re.findall(r'rule_resources\("(\w+)", resumes=True', text))
    assert resuming == {"nmt_train", "embed_train", "parascore_model"}


def test_a_bound_caps_every_attempt_at_the_partitions_limit():
    given = {"max_mem_mb": 20000, "max_runtime": 1000}
    res = rule_resources(given, {"mem_mb": 8000, "runtime": 720})
    assert not {"max_mem_mb", "max_runtime"} & set(res)  # not resources for the executor
    assert _on(res, 1) == {"mem_mb": 8000, "runtime": 720, "cpus_per_task": 1}
    assert _on(res, 2) == {"mem_mb": 16000, "runtime": 1000, "cpus_per_task": 1}
    assert _on(res, 3) == {"mem_mb": 20000, "runtime": 1000, "cpus_per_task": 1}
    assert _on(res, 10_000)["mem_mb"] == 20000  # no float overflow however many retries
    # a built-in default over the bound asks for the bound, on every attempt
    low = rule_resources({"max_mem_mb": 4000}, {"mem_mb": 8000, "runtime": 60})
    assert [_on(low, n)["mem_mb"] for n in (1, 2)] == [4000, 4000]
    # no growth: the bound still holds; a resuming rule's time is bounded but does not grow
    flat = rule_resources({"retry_growth": 1, "max_runtime": 30}, {"mem_mb": 10, "runtime": 60})
    assert flat["runtime"] == 30 and flat["mem_mb"] == 10
    resumed = rule_resources({"max_runtime": 100, "max_mem_mb": 12000},
                             {"mem_mb": 8000, "runtime": 2880}, resumes=True)
    assert resumed["runtime"] == 100
    assert _on(resumed, 2)["mem_mb"] == 12000


def test_a_request_over_its_own_bound_is_a_config_error():
    assert config.resolve({"resources": {"clean": {"mem_mb": 4000, "max_mem_mb": 4000}}})[
        "resources"]["clean"]["max_mem_mb"] == 4000
    with pytest.raises(config.ConfigError, match=r"resources.clean.mem_mb \(5000\) and "
                       r"resources.clean.max_mem_mb \(4000\)"):
        config.resolve({"resources": {"clean": {"mem_mb": 5000, "max_mem_mb": 4000}}})
    with pytest.raises(config.ConfigError, match=r"resources.nmt_train.runtime \(90\) and "
                       r"resources.nmt_train.max_runtime \(60\)"):
        config.resolve({"resources": {"nmt_train": {"runtime": 90, "max_runtime": 60}}})
    with pytest.raises(config.ConfigError, match="resources.clean.max_runtime"):
        config.resolve({"resources": {"clean": {"max_runtime": 0}}})


def test_slurm_time_limits_read_in_minutes():
    from paramill.config.cluster import slurm_minutes

    assert [slurm_minutes(t) for t in ("00:08:00", "1-00:00:00", "2-12", "3-01:30", "90",
                                       "45:30", "12:00:59")] == [8, 1440, 3600, 4410, 90, 45, 720]
    assert [slurm_minutes(t) for t in ("UNLIMITED", "INFINITE", "", "1-2-3", "a:b")] == [None] * 5


def test_partition_limits_from_scontrol_lines():
    from paramill.config.cluster import partition_limits

    text = ("PartitionName=main AllowGroups=ALL Default=YES MaxNodes=UNLIMITED MaxTime=00:08:00 "
            "MinNodes=0 MaxMemPerNode=UNLIMITED State=UP\n"
            "PartitionName=gpu Default=NO MaxTime=2-00:00:00 MaxMemPerNode=256000 State=UP\n"
            "not a partition line\n")
    assert partition_limits(text) == {
        "main": {"default": True, "max_runtime": 8, "max_mem_mb": None},
        "gpu": {"default": False, "max_runtime": 2880, "max_mem_mb": 256000}}


def test_node_memory_is_each_partitions_largest_node():
    from paramill.config.cluster import node_memory

    text = ("NodeName=a Arch=x86_64 CPUTot=64 RealMemory=256000 AllocMem=0 Partitions=main,gpu State=IDLE\n"
            "NodeName=b RealMemory=512000 Partitions=gpu State=MIXED\n"
            "NodeName=c RealMemory=1 Partitions=debug\n"
            "NodeName=d RealMemory=0 Partitions=main\n"          # not configured: not a size
            "NodeName=e Partitions=main\n"
            "No nodes in the system\n")
    assert node_memory(text) == {"main": 256000, "gpu": 512000, "debug": 1}


def test_a_retry_over_the_largest_nodes_memory_is_named_as_sbatch_refuses_it():
    """Seen through the local SLURM: embed_train's third attempt asked for 32,000 MB on a
    partition without MaxMemPerNode whose one node has 21,694; sbatch answered "Requested node
    configuration is not available" and the run ended where a resumed retry was to finish."""
    from paramill.config.cluster import asks_by_attempt, requests_over_limits

    res = rule_resources(None, {"mem_mb": 8000, "runtime": 60}, resumes=True)
    asks = asks_by_attempt(res, {"mem_mb": 8000, "runtime": 60}, None, 3)
    assert [a["mem_mb"] for a in asks] == [8000, 16000, 32000]
    main = {"default": True, "max_runtime": None, "max_mem_mb": None, "node_mem_mb": 21694}
    assert requests_over_limits([("embed_train", None, asks)], {"main": main}) == [
        "rule embed_train: its retry (attempt 3) asks for 32,000 MB, more than partition main's "
        "largest node has (21,694 MB): sbatch refuses it and the job fails; set "
        "resources.embed_train.max_mem_mb: 21694"]
    # the lower of the two memory limits is the one named
    both = {**main, "max_mem_mb": 12000}
    assert requests_over_limits([("embed_train", None, asks)], {"main": both}) == [
        "rule embed_train: its retry (attempt 2) asks for 16,000 MB, over partition main's "
        "MaxMemPerNode of 12,000: SLURM may leave it pending for ever; set "
        "resources.embed_train.max_mem_mb: 12000"]
    # within the node: nothing to say; and bounded by max_mem_mb as the line says: nothing
    assert requests_over_limits([("embed_train", None, asks)], {"main": {**main, "node_mem_mb": 64000}}) == []
    bounded = rule_resources({"max_mem_mb": 21694}, {"mem_mb": 8000, "runtime": 60}, resumes=True)
    assert requests_over_limits([("embed_train", None, asks_by_attempt(
        bounded, {"mem_mb": 8000, "runtime": 60}, None, 3))], {"main": main}) == []


def test_the_gpus_of_each_partitions_largest_node_and_what_a_job_asks_for():
    from paramill.config.cluster import gpus_asked, node_gpus

    text = ("NodeName=a Gres=gpu:a100:4(S:0-1) RealMemory=256000 Partitions=gpu,all\n"
            "NodeName=b Gres=gpu:v100:2,gpu:a100:2,shard:8 Partitions=gpu\n"
            "NodeName=c Gres=gpu:8 Partitions=big\n"
            "NodeName=d Gres=(null) Partitions=main,all\n"
            "NodeName=e Gres=mps_gpu:100 Partitions=main\n")   # not a GPU entry
    assert node_gpus(text) == {"gpu": {None: 4, "a100": 4, "v100": 2}, "all": {None: 4, "a100": 4},
                               "big": {None: 8}, "main": {None: 0}}
    assert [gpus_asked(r) for r in ({}, {"gpu": 2}, {"gpu": "3", "gpu_model": "a100"},
                                    {"gpu_model": "a100"}, {"gres": "gpu:v100:2"}, {"gres": "gpu:2"},
                                    {"gres": "gpu"}, {"gres": "shard:1"}, {"gpu": 0})] == [
        (0, None), (2, None), (3, "a100"), (1, "a100"), (2, "v100"), (2, None), (1, None), (0, None),
        (0, None)]


def test_a_job_asking_for_more_gpus_than_a_node_has_is_named():
    """README's own example, `resources: {nmt_train: {gpu: 4}}`, on a cluster of 2-GPU nodes:
    sbatch refuses it, or SLURM spreads it over two nodes and the job's one process sees two
    (the local SLURM's one node of two fake GPUs refused three)."""
    from paramill.config.cluster import requests_over_limits

    limits = {"gpu": {"default": False, "max_runtime": None, "max_mem_mb": None, "node_gpus": {None: 2, "a100": 2}},
              "main": {"default": True, "max_runtime": None, "max_mem_mb": None, "node_gpus": {None: 0}},
              "unknown": {"default": False, "max_runtime": None, "max_mem_mb": None, "node_gpus": None}}
    requests = [("nmt_train", "gpu", [{"mem_mb": 8000}], {"gpu": (4, None)}),
                ("nmt_train", "gpu", [{"mem_mb": 8000}], {"gpu": (4, None)}),   # named once
                ("score", "gpu", [{"mem_mb": 8000}], {"gpu": (2, "a100")}),     # fits
                ("translate", "gpu", [{}], {"gpu": (1, "h100")}),
                ("embed_train", None, [{}], {"gpu": (1, None)}),                # the default partition: none
                ("elsewhere", "unknown", [{}], {"gpu": (8, None)}),             # scontrol show node unread
                ("clean", None, [{"mem_mb": 1}], {"gpu": (0, None)}),           # no GPUs asked
                ("ingest", None, [{"mem_mb": 1}])]
    assert requests_over_limits(requests, limits) == [
        "rule nmt_train: it asks for 4 GPUs, more than one node of partition gpu has (2): sbatch "
        "refuses it, or SLURM spreads it over nodes and the job's one process sees one node's; "
        "set resources.nmt_train.gpu: 2",
        "rule translate: it asks for 1 GPU (h100), and no node of partition gpu has one of that "
        "model: sbatch refuses it; set resources.translate.slurm_partition to a partition with GPUs",
        "rule embed_train: it asks for 1 GPU, and no node of partition main has one: sbatch "
        "refuses it; set resources.embed_train.slurm_partition to a partition with GPUs"]


def test_a_job_whose_threads_no_node_has_is_named():
    """A rule's threads are its job's CPUs (``cpus_per_task``): more than one node of the
    partition has, and the job pends for ever (the local SLURM: reason PartitionConfig, 3 CPUs
    of its node's 2) or is refused."""
    from paramill.config.cluster import node_memory, requests_over_limits

    text = ("NodeName=a CPUTot=64 RealMemory=256000 Partitions=main\n"
            "NodeName=b CPUTot=16 RealMemory=64000 Partitions=main,small\n")
    assert node_memory(text, "CPUTot") == {"main": 64, "small": 16}
    limits = {"small": {"default": True, "max_runtime": None, "max_mem_mb": None, "node_cpus": 16},
              "main": {"default": False, "max_runtime": None, "max_mem_mb": None, "node_cpus": 64}}
    requests = [("nmt_translate", None, [{}], {"cpus_per_task": 32}),
                ("nmt_translate", None, [{}], {"cpus_per_task": 32}),
                ("clean", "main", [{}], {"cpus_per_task": 32}),
                ("ingest", None, [{}], {"cpus_per_task": 16})]
    assert requests_over_limits(requests, limits) == [
        "rule nmt_translate: it asks for 32 CPUs (its threads), more than one node of partition "
        "small has (16): SLURM may leave it pending for ever (PartitionConfig) or refuse it; set "
        "resources.nmt_translate.threads: 16"]


def test_a_request_over_its_partition_is_named_with_the_key_that_bounds_it():
    from paramill.config.cluster import asks_by_attempt, requests_over_limits

    limits = {"main": {"default": True, "max_runtime": 12, "max_mem_mb": None},
              "gpu": {"default": False, "max_runtime": 2880, "max_mem_mb": 100000}}
    res = rule_resources(None, {"mem_mb": 1000, "runtime": 5})
    first = {"mem_mb": 1000, "runtime": 5}
    asks = asks_by_attempt(res, first, None, 3)
    assert asks == [{"mem_mb": 1000, "runtime": 5}, {"mem_mb": 2000, "runtime": 10},
                    {"mem_mb": 4000, "runtime": 20}]
    # a value the rule does not grow (a profile's default resource) stays as first evaluated
    assert asks_by_attempt({"runtime": 60}, {"runtime": 60, "mem_mb": 8}, None, 2) == [
        {"runtime": 60, "mem_mb": 8}] * 2
    lines = requests_over_limits([("clean", None, asks), ("clean", None, asks),
                                  ("nmt_train", "gpu", [{"mem_mb": 64000, "runtime": 4320}]),
                                  ("embed_train", "gpu", [{"mem_mb": 64000}, {"mem_mb": 128000}]),
                                  ("elsewhere", "other", [{"runtime": 99999}])], limits)
    assert lines == [
        "rule clean: its retry (attempt 3) asks for 20 minutes, over partition main's MaxTime "
        "of 12: SLURM may leave it pending for ever; set resources.clean.max_runtime: 12",
        "rule nmt_train: its first attempt asks for 4,320 minutes, over partition gpu's MaxTime "
        "of 2,880: SLURM may leave it pending for ever; set resources.nmt_train.max_runtime: 2880",
        "rule embed_train: its retry (attempt 2) asks for 128,000 MB, over partition gpu's "
        "MaxMemPerNode of 100,000: SLURM may leave it pending for ever; set "
        "resources.embed_train.max_mem_mb: 100000"]
    # bounded: nothing to say
    bounded = rule_resources({"max_runtime": 12}, {"mem_mb": 1000, "runtime": 5})
    assert requests_over_limits([("clean", "main", asks_by_attempt(bounded, first, None, 3))],
                                limits) == []
