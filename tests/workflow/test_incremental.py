"""What re-runs when you change what: asserted on the jobs Snakemake actually executes."""

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from .conftest import (
    LEXICON,
    SELECT,
    TINY_EMBED,
    TINY_FILTERS,
    TINY_NMT,
    after_candidates,
    copy_tiny_project,
    executed,
    scoring,
)
from .conftest import snakemake as run_snakemake

pytestmark = pytest.mark.slow

DOWNSTREAM = {"bitext_stats": 1, "plot_bitext_outcomes": 1, "provenance_summary": 1}
RETRAIN = {"spm_train": 2, "nmt_data": 1, "nmt_train": 2, "nmt_convert": 2}


#: The changes, in the order they are made: each step starts from the state the one before
#: left (so a step's expected jobs are those of its change alone).
STEPS = []


def step(fn):
    STEPS.append(fn)
    return fn


def snakemake(root, *args, overlays=()):
    # targets and options first: --configfile takes every word after it
    return run_snakemake(root, *args, *TINY_NMT, *map(str, overlays))


def shards(root):
    return len(list((root / "work/shards").glob("*/shard-*.parquet")))


@pytest.fixture(scope="module")
def project(tiny_run):
    return tiny_run.root  # the tiny default DAG, built once a session (conftest.py)


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@step
def no_op_rerun_runs_nothing(project, tmp_path):
    assert executed(snakemake(project)) == {}


@step
def changed_cleaning_threshold_reruns_clean_and_what_follows_only(project, tmp_path):
    before = json.loads((project / "results/bitext/stats.json").read_text())
    edit(project / "config.yaml", "max_tokens: 100", "max_tokens: 12\n    min_czech: 0.5")
    proc = snakemake(project)
    assert executed(proc) == {"clean": 2, **DOWNSTREAM, **RETRAIN, "nmt_translate": shards(project),
                              "backtranslation_stats": 1,
                              **after_candidates(TINY_FILTERS, shards(project))}
    stats = json.loads((project / "results/bitext/stats.json").read_text())
    assert stats["rejected"]["too_long"] > 100  # the new bounds took effect
    assert stats["rejected"]["not_czech"] > before["rejected"].get("not_czech", 0)
    assert executed(snakemake(project)) == {}


@step
def a_new_corpus_processes_only_its_own_shards(project, tmp_path):
    bitext = project / "data/sample/bitext"
    with gzip.open(bitext / "extra.cs.gz", "wt") as fh:
        fh.write("Nový pes běží.\nStará kočka spí.\n")
    with gzip.open(bitext / "extra.en.gz", "wt") as fh:
        fh.write("A new dog runs.\nAn old cat sleeps.\n")
    edit(project / "config.yaml", "  ingest:\n",
         "    extra:\n      format: moses\n      cs: data/sample/bitext/extra.cs.gz\n"
         "      en: data/sample/bitext/extra.en.gz\n  ingest:\n")
    proc = snakemake(project)
    # the NMT and filter models are trained on the corpora named in config: no retraining,
    # and only the new shard is translated and scored
    assert executed(proc) == {"ingest": 1, "clean": 1, "nmt_translate": 1,
                              "backtranslation_stats": 1, **scoring(TINY_FILTERS, 1),
                              **SELECT, **TINY_EMBED, **LEXICON, **DOWNSTREAM}
    assert "extra" in (project / "logs/ingest/extra.log").read_text()
    stats = json.loads((project / "results/bitext/stats.json").read_text())
    assert stats["corpora"]["extra"]["kept"] == 2


@step
def editing_a_rules_code_reruns_that_rule(project, tmp_path):
    edit(project / "rules/bitext.smk", '" --tsv {output.tsv:q} > {log:q} 2>&1"',
         '" --tsv {output.tsv:q} >{log:q} 2>&1"')
    proc = snakemake(project)
    assert executed(proc) == DOWNSTREAM
    assert "code" in (proc.stdout + proc.stderr).lower()


@step
def report_renders_the_registered_plots_and_tables(project, tmp_path):
    snakemake(project, "--report", "report.html")
    page = (project / "report.html").read_text()
    # tables, JSON and datasheets are shown as HTML pages (the report shows no .tsv/.json/.md)
    for item in ("bitext_outcomes.png", "provenance.html", "glance.html", "pages.html", "scores.png"):
        assert item in page, item
    pages = (project / "results/report/pages.html").read_text()
    for item in ("results/corpus/default/datasheet.md", "results/bitext/stats.json",
                 "results/bitext/outcomes.tsv"):
        assert f"<h2>{item}</h2>" in pages, item


@step
def touching_a_raw_corpus_reruns_nothing(project, tmp_path):
    import os
    import time

    raw = project / "data/sample/bitext/grammar.cs.gz"
    later = time.time() + 60
    os.utime(raw, (later, later))
    assert executed(snakemake(project)) == {}


@step
def own_models_replace_training(project, tmp_path):
    """nmt.models: a CTranslate2 bundle for CS->EN, an OpenNMT-py checkpoint for EN->CS."""
    other = copy_tiny_project(tmp_path / "own")
    nmt = project / "work/nmt"
    edit(other / "config.yaml", "  train_corpora: [grammar, grammar-b]\n",
         "  train_corpora: [grammar, grammar-b]\n  models:\n"
         f"    cs-en: {{ct2: {nmt}/cs-en/ct2, source_spm: {nmt}/spm/cs.model,"
         f" target_spm: {nmt}/spm/en.model}}\n"
         f"    en-cs: {{checkpoint: {nmt}/en-cs/model.pt, source_spm: {nmt}/spm/en.model,"
         f" target_spm: {nmt}/spm/cs.model}}\n")
    proc = snakemake(other, "results/nmt/backtranslation.json", "work/nmt/en-cs/ct2")
    assert executed(proc) == {"ingest": 2, "clean": 2, "nmt_convert": 1, "nmt_translate": shards(other),
                              "backtranslation_stats": 1}
    assert not (other / "work/nmt/cs-en").exists()  # used in place, nothing trained or converted
    assert ("paramill: built what was asked for: results/nmt/backtranslation.json, "
            "work/nmt/en-cs/ct2.") in proc.stderr + proc.stdout
    assert (other / "work/nmt/en-cs/ct2/model.bin").exists()


@step
def the_sweep_target_collects_one_table(project, tmp_path):
    # 2 component lists on a release that is not embed.release (config.yaml's grid crosses
    # M and both releases too: 8 models; the crossing is a unit test, test_embed.py)
    grid = tmp_path / "grid.yaml"
    grid.write_text("embed:\n  sweep:\n    grid:\n      components: [[word], [lstm]]\n"
                    "      megabatch: [4]\n      release: [top-half]\n")
    proc = snakemake(project, "sweep", overlays=[grid])
    ran = executed(proc)
    assert ran["embed_train"] == ran["sts_eval"] == 2 and ran["sweep"] == 1
    # the run ends by naming what it was asked for, not every result the config makes
    assert "paramill: built what was asked for: results/embed/sweep.tsv." in proc.stderr + proc.stdout
    table = (project / "results/embed/sweep.tsv").read_text().splitlines()
    models = {line.split("\t")[0] for line in table[1:]}
    assert models == {"sweep-00", "sweep-01"}
    assert any('"components": ["lstm"], "megabatch": 4, "release": "top-half"' in line
               for line in table)


@step
def changing_a_filter_bound_reruns_selection_and_what_follows_only(project, tmp_path):
    before = json.loads((project / "results/corpus/default/selection.json").read_text())
    corpus = pl.read_parquet(project / "results/corpus/default/corpus.parquet")
    # an upper bound between the two largest para-scores present surely cuts some rows and
    # keeps others (a continuous score: the tiny model's overlaps can all be one value)
    values = corpus["parascore"].unique().sort(descending=True).to_list()
    assert len(values) >= 2, values
    upper = (values[0] + values[1]) / 2
    edit(project / "config.yaml", "      overlap_1: [0.0, 0.9]",
         f"      overlap_1: [0.0, 0.9]\n      parascore: [null, {upper!r}]")
    proc = snakemake(project)
    # both releases: top-half takes its bounds from filters.select
    assert executed(proc) == {**SELECT, **TINY_EMBED, **LEXICON, "provenance_summary": 1}
    after = json.loads((project / "results/corpus/default/selection.json").read_text())
    assert 0 < after["rows"] < before["rows"]
    names = [s["step"] for s in after["steps"]]
    assert names[-2:] == ["duplicates", "near_duplicates"]  # bounds, then dedup
    assert any(n.startswith("parascore ") for n in names[:-2])
    assert after["rows"] == before["rows"] - corpus.filter(pl.col("parascore") > upper).height
    sheet = (project / "results/corpus/default/datasheet.md").read_text()
    assert f"| parascore | higher | – | {upper:.4g} |" in sheet, sheet


@step
def a_language_bound_or_the_near_duplicate_threshold_reselects_only(project, tmp_path):
    before = json.loads((project / "results/corpus/default/selection.json").read_text())
    steps = {s["step"]: s["pairs"] for s in before["steps"]}
    assert "langid_cand in [0.2, inf]" in steps and "near_duplicates" in steps
    edit(project / "config.yaml", "      langid_cand: [0.2, null]", "      langid_cand: [0.9, null]")
    edit(project / "config.yaml", "    max_tokens: 30 ", "    near_duplicates: 0.5\n    max_tokens: 30 ")
    proc = snakemake(project)
    assert executed(proc) == {**SELECT, **TINY_EMBED, **LEXICON, "provenance_summary": 1}
    after = json.loads((project / "results/corpus/default/selection.json").read_text())
    names = [s["step"] for s in after["steps"]]
    assert "langid_cand in [0.9, inf]" in names and names[-1] == "near_duplicates"
    assert after["settings"]["near_duplicates"] == 0.5 and after["rows"] < before["rows"]
    sheet = (project / "results/corpus/default/datasheet.md").read_text()
    assert "| langid_cand | higher | 0.9 | – |" in sheet and "at least 0.5 to an earlier kept pair" in sheet


@step
def a_filter_setting_rescores_that_filter_only(project, tmp_path):
    edit(project / "config.yaml", "    classifier: {epochs: 5}",
         "    classifier: {epochs: 5}\n    overlap: {orders: [1, 2]}")
    proc = snakemake(project)
    assert executed(proc) == {"score_overlap": shards(project), **SELECT, **TINY_EMBED, **LEXICON,
                              "provenance_summary": 1}
    corpus = pl.read_parquet(project / "results/corpus/default/corpus.parquet")
    assert "overlap_2" in corpus.columns and "overlap_3" not in corpus.columns


@step
def a_pair_corpus_runs_only_its_jobs_and_what_follows(project, tmp_path):
    text = (project / "config.yaml").read_text()
    (project / "config.yaml").write_text(
        text + "\npairs:\n  corpora:\n    extra-pairs: {format: paranmt, "
        "path: data/sample/pairs/grammar.paranmt.txt.gz}\n")
    proc = snakemake(project)
    # the filter models were trained on the corpora named in filters.heldout: no retraining
    assert executed(proc) == {"pairs_ingest": 1, "pairs_stats": 1, "score_by_method": 1,
                              **scoring(TINY_FILTERS, 1), **SELECT, **TINY_EMBED,
                              **LEXICON, "provenance_summary": 1}
    methods = json.loads((project / "results/pairs/scores_by_method.json").read_text())
    assert set(methods["methods"]) == {"beam", "paranmt"}
    corpus = pl.read_parquet(project / "results/corpus/default/corpus.parquet")
    assert {"beam", "paranmt"} <= set(corpus["method"].unique())
    assert corpus.filter(pl.col("method") == "beam")["given_score"].null_count() == \
        corpus.filter(pl.col("method") == "beam").height


@step
def a_decoding_setting_retranslates_without_retraining(project, tmp_path):
    """ParaBank 2's sample-score-cluster branch instead of beam search: no retraining, every
    shard translated and scored again, up to 5 paraphrases a source, the diversity table."""
    overlay = str(Path(__file__).with_name("sample.yaml"))
    proc = snakemake(project, overlays=[overlay])
    expected = {"nmt_translate": shards(project), "backtranslation_stats": 1,
                **after_candidates(TINY_FILTERS, shards(project)), "diversity_stats": 1,
                "provenance_summary": 1, "score_by_method": 1}  # the pair corpus added above
    expected["score_parascore"] += 1  # its shard, scored again with the retrained model
    assert executed(proc) == expected
    cands = pl.scan_parquet(project / "work/candidates/*/shard-*.parquet").collect()
    shards_ = pl.scan_parquet(project / "work/shards/*/shard-*.parquet").collect()
    per_source = cands.group_by("pair_id").len()["len"]
    assert per_source.max() <= 5 and per_source.mean() > 2
    assert cands["pair_id"].n_unique() > 0.8 * shards_.height
    assert cands["method"].unique().to_list() == ["sample"]
    assert cands.select(pl.col("bwd_nll").is_null().sum()).item() == 0
    assert ((cands["fwd_nll"] + cands["bwd_nll"]) <= 8.0).all()
    assert (cands["cluster"] > 0).all() and cands["constraint_set"].is_between(0, 1).all()
    diversity = json.loads((project / "results/nmt/diversity.json").read_text())
    assert [r["rank"] for r in diversity["by_rank"]] == [1, 2, 3, 4, 5]
    assert all(0 <= r["one_minus_bleu"] <= 1 for r in diversity["by_rank"])
    assert diversity["collective"]["bag_iou"] < 1.0
    record = json.loads((project / "work/candidates/grammar/shard-00000.parquet.prov.json").read_text())
    assert record["sampling"]["sampled"] == record["sampling"]["sources"] * 2 * 6
    assert (project / "results/nmt/diversity.png").stat().st_size > 1000



def _training(project, model):
    """An embedding model's log of its last training job and its record's training summary:
    the word model (``word``) or the para-score filter's (``parascore``)."""
    log, out = {"word": ("embed/embed_train.word.log", "embed/word/model.pt"),
                "parascore": ("filters/parascore_model.log", "filters/parascore/model.pt")}[model]
    record = json.loads((project / "work" / f"{out}.prov.json").read_text())
    return (project / "logs" / log).read_text(), record["training"]


def _after_embed_train(project):
    """The jobs a changed embed.train.* setting runs: both models it applies to (the word
    model and the para-score filter's, trained with the same settings), every shard scored
    again by the para-score filter (the pair corpus's too: its scores by method), and what
    follows."""
    return {"parascore_model": 1, "score_parascore": shards(project) + 1, "score_by_method": 1, **SELECT,
            **TINY_EMBED, **LEXICON, "provenance_summary": 1}


@step
def more_embedding_epochs_train_only_the_epochs_added(project, tmp_path):
    """epochs 1 -> 2: the para-score filter's model, whose data did not change, goes on from
    the checkpoint of its last epoch (kept beside the model) and trains one epoch, not two;
    its scores change the corpus, so the word model starts afresh. (The decoding overlay of
    the step before stays: without it every shard would be translated again.)"""
    overlay = tmp_path / "epochs.yaml"
    overlay.write_text("embed:\n  train: {epochs: 2}\n")
    proc = snakemake(project, overlays=[Path(__file__).with_name("sample.yaml"), overlay])
    assert executed(proc) == _after_embed_train(project)
    log, training = _training(project, "parascore")
    assert "resuming after epoch 1" in log, log
    assert [h["epoch"] for h in training["history"]] == [1, 2] and len(training["epoch_seconds"]) == 1
    log, training = _training(project, "word")
    assert "settings or data changed, starting afresh" in log, log
    assert [h["epoch"] for h in training["history"]] == [1, 2] and len(training["epoch_seconds"]) == 2


#: a value for every launch-only key (x-launch) of the sections the tiny DAG's rules read
LAUNCH_CHANGES = """\
bitext:
  advanced:
    ingest: {batch_rows: 7}
    clean: {bucket_rows: 1000}
pairs:
  advanced:
    ingest: {batch_rows: 7}
    clean: {bucket_rows: 1000}
embed:
  train: {epochs: 2}
  advanced:
    train: {cuda_graph: false, checkpoint_minutes: 5}
lexicon:
  advanced: {chunk_pairs: 50, partitions: 3, spill_rows: 100}
filters:
  advanced:
    parascore: {batch_size: 3}
    classifier: {score_batch_size: 5}
resources:  # not launch-only keys, but the job's request: no rerun trigger either
  ingest: {mem_mb: 3000, runtime: 7, retry_growth: 3}
  embed_train: {mem_mb: 9000, retry_growth: 1}
"""


@step
def how_a_job_is_launched_reruns_nothing(project, tmp_path):
    """Launch-only keys, and a rule's request (`resources`: memory, time, `retry_growth`,
    no rerun trigger). Launch-only keys (how a job runs, never what it computes: cuda_graph,
    checkpoint_minutes, the memory bounds of ingest, deduplication and the lexicon's counts,
    the filters' scoring batch
    sizes: lowered after a scoring job ran out of GPU memory, they re-scored every shard,
    and the classifier's retrained it) reach the commands outside the
    rules' params (--launch), so changing them all after a complete run runs no job (a
    changed cuda_graph re-ran both trainings and every shard's para-score, a changed
    batch_rows everything from ingest on, NMT training included); a job that does run takes
    the new values."""
    overlay = tmp_path / "launch.yaml"
    overlay.write_text(LAUNCH_CHANGES)
    overlays = [Path(__file__).with_name("sample.yaml"), overlay]
    assert executed(snakemake(project, overlays=overlays)) == {}
    commands = []
    # the shards' scoring on its own: a forced ingest leaves the shards (a checkpoint) to come
    for forced in (["ingest", "pairs_ingest", "parascore_model"], ["score_parascore"]):
        proc = snakemake(project, "--dry-run", "--printshellcmds", "--forcerun", *forced,
                         overlays=overlays)
        commands += [line.split("Shell command: ", 1)[-1] for line in proc.stdout.splitlines()
                     if "paramill --rule " in line]
    launched = {}
    for command in commands:
        verb = " ".join(command.split()[5:7])
        if "--launch " in command:
            value = command.split("--launch '", 1)[1].split("'", 1)[0]
            launched.setdefault(verb, set()).add(value)
            settings = command.split("--launch")[0]  # no launch-only key in the settings too
            assert not [k for keys in json.loads(value).values() for k in keys
                        if f'"{k}":' in settings], command
    assert launched == {
        "bitext ingest": {'{"bitext.ingest":{"batch_rows":7}}'},
        "bitext clean": {'{"bitext.clean":{"bucket_rows":1000},"bitext.ingest":{"batch_rows":7}}'},
        "pairs ingest": {'{"pairs.clean":{"bucket_rows":1000},"pairs.ingest":{"batch_rows":7}}'},
        "embed train": {'{"embed.train":{"checkpoint_minutes":5,"cuda_graph":false,'
                        '"recurrent_cuda_graph":false}}'},
        "lexicon build": {'{"lexicon":{"chunk_pairs":50,"partitions":3,"spill_rows":100}}'},
        "filters score": {'{"filters.classifier":{"score_batch_size":5},"filters.dual_xent":'
                          '{"batch_size":32,"batch_type":"examples"},"filters.parascore":{"batch_size":3}}'},
    }, launched


@pytest.mark.parametrize("change", STEPS, ids=[f.__name__ for f in STEPS])
def test_a_change_reruns_exactly_what_it_touches(project, tmp_path, change):
    change(project, tmp_path)
