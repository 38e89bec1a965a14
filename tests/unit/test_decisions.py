"""The decisions the Snakemake rules take from paramill (paramill.run.workflow): the config a
run reads, a rule's params and launch-only keys, its threads, resources and place, and the
warnings a run starts with."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from paramill import config as configs
from paramill.io.yamlfiles import ConfigError
from paramill.run import workflow as decide


def test_a_configfile_replaces_the_sample_and_config_values_apply_on_top(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("bitext: {corpora: {sample: {format: tsv, path: s.tsv}}}\n")
    (tmp_path / "mine.yaml").write_text("pairs: {corpora: {mine: {format: paranmt, path: m.txt}}}\n"
                                        "lexicon: {min_count: 3}\n")
    (tmp_path / "over.yaml").write_text("lexicon: {top_k: 5}\n")
    snakemake = {"bitext": {"corpora": {"sample": {}}}, "lexicon": {"min_count": 9}}
    assert decide.given_config(snakemake, [], {}) == snakemake
    assert decide.given_config(snakemake, [str(tmp_path / "config.yaml"), "over.yaml"], {}) == snakemake
    given = decide.given_config(snakemake, ["mine.yaml", "over.yaml"], {"lexicon": {"top_k": 7}})
    assert given == {"pairs": {"corpora": {"mine": {"format": "paranmt", "path": "m.txt"}}},
                     "lexicon": {"min_count": 3, "top_k": 7}}


def test_a_target_given_after_configfile_is_refused_naming_the_order(tmp_path, monkeypatch):
    """Snakemake's --configfile takes every word after it: a target written there (a JSON
    output of an earlier run reads as YAML) would be merged into the config."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("pairs: {corpora: {mine: {format: paranmt, path: m.txt}}}\n")
    (tmp_path / "results/bitext").mkdir(parents=True)
    (tmp_path / "results/bitext/stats.json").write_text('{"rows_in": 3}')
    # a JSON file no run wrote (no provenance record beside it) is a config like any other
    assert decide.targets_read_as_config(["mine.yaml", "results/bitext/stats.json"]) == []
    (tmp_path / "results/bitext/stats.json.prov.json").write_text("{}")
    files = [str(tmp_path / "mine.yaml"), str(tmp_path / "results/bitext/stats.json")]
    assert decide.targets_read_as_config(files) == files[1:]
    with pytest.raises(ConfigError) as err:
        decide.given_config({}, files, {})
    assert str(err.value) == (
        "paramill: results/bitext/stats.json was read as a config file: --configfile takes every "
        "word after it, so targets go before it: snakemake ... results/bitext/stats.json "
        "--configfile mine.yaml")
    assert decide.targets_read_as_config(["results/bitext/stats.json.prov.json"]) != []


def test_the_workflow_config_is_resolved_as_the_command_line_resolves_it(tmp_path):
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text("lexicon: {min_count: 3}\nlexicon: {top_k: 2}\n")
    resolved, digest = decide.workflow_config({"lexicon": {"min_count": "3"}}, [])
    assert resolved == configs.resolve({"lexicon": {"min_count": 3}}) and len(digest) == 64
    assert digest == configs.digest(resolved)
    with pytest.raises(ValueError, match="(?s)paramill config resolve: error: .*lexicon.min_count"):
        decide.workflow_config({"lexicon": {"min_count": "many"}}, [])
    with pytest.raises(ValueError, match="given twice"):
        decide.workflow_config({}, [str(doubled)])


def test_a_rules_params_and_launch_settings_come_from_its_section():
    config = configs.resolve({"lexicon": {"min_count": 4, "advanced": {"chunk_pairs": 7}}})
    params = decide.stage_settings(config, "lexicon")
    assert params["min_count"] == 4 and "chunk_pairs" not in params and "simlex" not in params
    launch = json.loads(decide.launch_settings(config, "lexicon", "bitext.ingest"))
    assert launch == {"lexicon": {"chunk_pairs": 7, "partitions": 16, "spill_rows": 2_000_000},
                      "bitext.ingest": {"batch_rows": 50_000}}
    assert decide.as_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_a_rules_threads_resources_and_place_come_from_its_resources_entry():
    config = configs.resolve({"resources": {"clean": {"threads": 3, "mem_mb": 1000},
                                            "harvest": {"local": False}}})
    assert decide.rule_threads(config, "clean") == 3 and decide.rule_threads(config, "ingest", 2) == 2
    assert decide.rule_local(config, "sts_download", True) is True
    assert decide.rule_local(config, "harvest", True) is False
    asked = decide.rule_resources(config, "clean", mem_mb=4000, runtime=240)
    assert asked["cpus_per_task"](SimpleNamespace(), 3) == 3
    grown = asked["mem_mb"](SimpleNamespace(), 2)  # a retry asks for twice the memory
    assert grown == 2000


def _job(rule, direction=None, **resources):
    return SimpleNamespace(rule=SimpleNamespace(name=rule, restart_times=2, resources=resources),
                           resources=resources, wildcards={"direction": direction})


def test_a_run_warns_at_its_start_of_a_full_size_training_without_a_gpu():
    given = {"bitext": {"corpora": {"x": {"format": "tsv", "path": "x.tsv"}}}}
    full = configs.resolve(given)
    jobs = [_job("nmt_train", "cs-en"), _job("nmt_train", "en-cs"), _job("clean")]
    (line,) = decide.start_warnings(full, jobs, "local")
    assert "2 full-size translation models" in line
    assert decide.start_warnings(full, [_job("clean")], "local") == []
    with_gpu = configs.resolve({**given, "resources": {"nmt_train": {"gpu": 1}}})
    assert decide.start_warnings(with_gpu, jobs, "slurm", limits={}) == []


def test_the_releases_a_run_selects_are_read_from_its_planned_jobs():
    jobs = [SimpleNamespace(rule=SimpleNamespace(name="select"), wildcards={"release": name})
            for name in ("default", "top-half")] + [_job("nmt_train", "cs-en")]
    assert decide.wildcard_values(jobs, "select", "release") == {"default", "top-half"}
    assert decide.wildcard_values(jobs, "nmt_train", "direction") == {"cs-en"}
    assert decide.wildcard_values(jobs, "lexicon", "release") == set()


def test_the_files_a_run_was_asked_for_are_its_target_jobs_outputs():
    def job(rule, output=(), input=()):
        return SimpleNamespace(rule=SimpleNamespace(name=rule), output=list(output), input=list(input))

    assert decide.asked_for([]) == []  # the default target
    assert decide.asked_for([job("all", input=["results/a"])]) == []
    assert decide.asked_for([job("all"), job("sweep", ["results/embed/sweep.tsv"])]) == []
    asked = [job("harvest", ["work/twitter/harvest/2026-10-05.parquet"]),
             job("twitter_month", ["results/twitter/2026-10/paraphrases.tsv", "results/twitter/2026-10/x.json"]),
             job("target", input=["results/b", "results/a"])]  # a rule with inputs only
    assert decide.asked_for(asked) == ["results/a", "results/b",
                                       "results/twitter/2026-10/paraphrases.tsv",
                                       "results/twitter/2026-10/x.json",
                                       "work/twitter/harvest/2026-10-05.parquet"]
