"""What a rule's job asks its executor for, and how a retry grows it."""

from __future__ import annotations

import inspect
import re

import pytest

from paramill import config
from paramill.jobresources import RETRY_GROWTH, rule_resources
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
    assert f"Default {RETRY_GROWTH:g} " in doc


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
