"""The lines a run starts and ends with (paramill.plan): which config it read, a training
of full size on CPUs, where the results are, corpora that lost much of their input."""

from __future__ import annotations

import json

from paramill import config
from paramill.run import plan


def test_the_config_line_says_the_sample_is_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    assert plan.configfile_note([]) is None
    assert plan.configfile_note([str(tmp_path / "config.yaml"), "overlay.yaml"]) is None
    line = plan.configfile_note([str(tmp_path / "configs/trial.yaml"), str(tmp_path / "mine.yaml")])
    assert line.startswith("paramill: config from configs/trial.yaml, mine.yaml (the sample's "
                           "config.yaml is not used")


def test_a_full_size_training_on_cpus_is_said_with_its_hours():
    given = {"bitext": {"corpora": {"x": {"format": "tsv", "path": "x.tsv"}}}}
    full = config.resolve(given)
    # Transformer base with 20k vocabularies: about 75M parameters
    assert 70e6 < plan.transformer_parameters(full["nmt"]["model"], 20000) < 80e6
    hours = plan.cpu_training_hours(full["nmt"])
    assert 500 < hours < 1500
    line = plan.cpu_training_warning(full, ["cs-en", "en-cs"], submitted=False, gpu_here=False)
    assert "2 full-size translation models (6 layers, 512 wide, 100,000 steps) on this machine's CPU" in line
    assert f"about {hours:,.0f} CPU-hours a direction" in line and "configs/trial.yaml" in line
    assert plan.cpu_training_warning(full, ["cs-en"], submitted=False, gpu_here=True) is None
    assert plan.cpu_training_warning(full, [], submitted=False, gpu_here=False) is None
    # on a cluster, a job has a GPU only where its rule asks for one
    submitted = plan.cpu_training_warning(full, ["cs-en"], submitted=True, gpu_here=True)
    assert "resources.nmt_train asks for no GPU" in submitted and "asks for 2,880 minutes" not in submitted
    asked = config.resolve({**given, "resources": {"nmt_train": {"gpu": 1}}})
    assert plan.cpu_training_warning(asked, ["cs-en"], submitted=True, gpu_here=False) is None
    # the sample's and the trial's tiny models train in minutes: nothing to say
    for path in ("config.yaml", "configs/trial.yaml"):
        nmt = {**config.read_yaml(path)["nmt"], "train_corpora": []}
        small = config.resolve({**given, "nmt": nmt})
        assert plan.cpu_training_hours(small["nmt"]) < 0.1
        assert plan.cpu_training_warning(small, ["cs-en"], submitted=False, gpu_here=False) is None


def test_a_gpu_is_visible_only_where_the_environment_does_not_hide_it():
    assert plan.gpu_visible({"CUDA_VISIBLE_DEVICES": ""}) is False
    assert plan.gpu_visible({"CUDA_VISIBLE_DEVICES": "-1"}) is False


def test_a_run_ends_by_naming_where_its_results_are():
    sample = config.load("config.yaml")
    line = plan.results_summary(sample)
    assert line.startswith("paramill: results in results/: corpora in results/corpus/<release>/ "
                           "(default, top-half)")
    assert "results/twitter/<month>/" in line and "work/" in line
    assert "embeddings' STS in results/embed/<model>/sts.tsv" in line
    # a config without STS sets: the models are named, not an STS table with no rows
    pairs = config.resolve({"pairs": {"corpora": {"p": {"format": "paranmt", "path": "p.txt"}}}})
    line = plan.results_summary(pairs)
    assert "STS in" not in line and ("embedding models in work/embed/<model>/ (no STS set "
                                     "scores them: evaluate.sts names none)") in line
    tweets = config.resolve({"twitter": {"enabled": True, "source": "archive", "archive": ["a"],
                                         "dates": ["2026-10-05"],
                                         "identify": {"train": [{"path": "l.tsv", "format": "twitter-url"}]}},
                             "results": "out"})
    assert plan.results_summary(tweets).startswith("paramill: results in out/: tweet paraphrases "
                                                   "in out/twitter/<month>/.")
    # a run given targets of its own names what they built, not the config's every result
    line = plan.results_summary(sample, ["work/nmt/data"])
    assert line == "paramill: built what was asked for: work/nmt/data. Intermediate files in work/, logs in logs/."
    many = [f"work/twitter/harvest/2026-10-0{d}.parquet" for d in range(1, 8)]
    line = plan.results_summary(sample, many)
    assert ", ".join(many[:5]) + " and 2 more." in line and many[5] not in line


def test_a_corpus_that_lost_more_than_five_percent_is_said_on_the_console(tmp_path):
    assert plan.rejection_line("x", 1000, {"duplicate": 50}, "r.parquet") is None
    line = plan.rejection_line("pairs corpus wmt21", 1000, {"not_latin1": 155, "duplicate": 3},
                               "work/pairs/wmt21/rejected.parquet")
    assert line == ("paramill: pairs corpus wmt21 rejected 158 of its 1,000 rows (15.8%): "
                    "not_latin1 155, duplicate 3; the rows and why: work/pairs/wmt21/rejected.parquet")
    pairs = {name: {"format": "paranmt", "path": f"{name}.txt"} for name in "abc"}
    cfg = config.resolve({"results": str(tmp_path / "r"), "work_dir": "w",
                          "pairs": {"corpora": pairs}})
    (tmp_path / "r/pairs").mkdir(parents=True)
    (tmp_path / "r/pairs/stats.json").write_text(json.dumps({"corpora": {
        "a": {"rows_in": 100, "kept": 60, "rejected": {"too_long": 40}},
        "b": {"rows_in": 100, "kept": 99, "rejected": {"too_long": 1}}, "c": "not a corpus",
        # a corpus of an earlier run's config, which this one does not name
        "old": {"rows_in": 100, "kept": 10, "rejected": {"too_long": 90}}}}))
    (tmp_path / "r/bitext").mkdir()
    (tmp_path / "r/bitext/stats.json").write_text("{not json")
    assert plan.large_rejections(cfg) == [
        "paramill: pairs corpus a rejected 40 of its 100 rows (40.0%): too_long 40; the rows "
        "and why: w/pairs/a/rejected.parquet"]
    # an earlier run's bitext statistics, under a config that names no bitext corpus
    (tmp_path / "r/bitext/stats.json").write_text(json.dumps({"corpora": {
        "news": {"rows_in": 1000, "kept": 842, "rejected": {"not_latin1_en": 158}}}}))
    assert len(plan.large_rejections(cfg)) == 1
    bitext = {"news": {"format": "moses", "cs": "n.cs", "en": "n.en"}}
    both = config.resolve({"results": str(tmp_path / "r"), "work_dir": "w", "pairs": {"corpora": pairs},
                           "bitext": {"corpora": bitext}})
    assert plan.large_rejections(both)[0].startswith(
        "paramill: bitext corpus news rejected 158 of its 1,000 rows (15.8%): not_latin1_en 158; ")


def test_a_run_ends_saying_what_each_release_it_selected_kept(tmp_path):
    cfg = config.resolve({"results": str(tmp_path / "r")})
    steps = [("candidates", 7030), ("heldout", 5274), ("identical", 5262), ("max_tokens 30", 3782),
             ("duplicates", 3782), ("near_duplicates", 1843)]
    for release, rows in (("default", steps), ("top-half", [("candidates", 100), ("duplicates", 98)])):
        (tmp_path / "r/corpus" / release).mkdir(parents=True)
        (tmp_path / "r/corpus" / release / "selection.json").write_text(json.dumps(
            {"rows": rows[-1][1], "steps": [{"step": s, "pairs": n} for s, n in rows]}))
    where = tmp_path / "r/corpus/default/selection.json"
    assert plan.release_lines(cfg, {"default"}) == [
        "paramill: release default kept 1,843 of 7,030 candidate pairs (26.2%); dropped most by "
        f"near_duplicates 1,939, heldout 1,756, max_tokens 30 1,480; every step: {where}"]
    # a release this run did not select is not said (its file may be an earlier run's)
    (line,) = plan.release_lines(cfg, {"top-half"})
    assert line.startswith("paramill: release top-half kept 98 of 100 candidate pairs (98.0%); every step")
    assert plan.release_lines(cfg, {"other"}) == [] and len(plan.release_lines(cfg, {"default", "top-half"})) == 2
