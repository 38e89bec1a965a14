"""The ``paramill`` command line: one subcommand a stage, called by the Snakemake rules.

Errors in the input (a bad file or line, a bad setting) end with one message naming the
file and line or the setting, and exit status 2; nothing is left half-written.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from paramill import __version__

EXIT_INPUT_ERROR = 2


def _json_arg(value: str) -> Any:
    """A JSON value given inline, or ``@path`` to a JSON/YAML file."""
    if value.startswith("@"):
        text = Path(value[1:]).read_text()
        if value.endswith((".yaml", ".yml")):
            import yaml

            return yaml.safe_load(text)
        return json.loads(text)
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {value[:80]!r}") from None


def _settings(section: tuple[str, ...], given: dict[str, Any] | None) -> dict[str, Any]:
    """Schema defaults of ``section`` overlaid with ``given`` (unknown keys are errors later)."""
    from paramill import config

    return {**config.defaults(*section), **(given or {})}


# -- subcommands ---------------------------------------------------------------------

def cmd_ingest(args: argparse.Namespace) -> int:
    from paramill.bitext.ingest import IngestSettings, ingest
    from paramill.bitext.readers import CorpusSpec

    spec = dict(args.spec or {})
    for key in ("format", "path", "cs", "en", "columns", "header"):
        value = getattr(args, key)
        if value not in (None, False):
            spec[key] = value
    if "format" not in spec:
        raise ValueError("give --format (or --spec with a `format`)")
    corpus = CorpusSpec.from_dict(args.corpus, spec)
    settings = IngestSettings.from_dict(_settings(("bitext", "ingest"), args.settings))
    stats = ingest(corpus, args.out, settings, rule=args.rule or "ingest")
    print(f"ingest {corpus.name}: {stats['rows_in']} lines, {stats['rows_out']} pairs in "
          f"{len(stats['shards'])} shards, {sum(stats['rejected'].values())} rejected "
          f"{stats['rejected'] or ''}", file=sys.stderr)
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from paramill.bitext.clean import CleanSettings, clean

    settings = CleanSettings.from_dict(_settings(("bitext", "clean"), args.settings))
    ingest_settings = _settings(("bitext", "ingest"), args.ingest_settings)
    stats = clean(args.corpus, args.ingested, args.shards, args.rejected, args.keys, args.stats,
                  prior_key_files=args.prior_keys, settings=settings,
                  shard_size=ingest_settings["shard_size"],
                  batch_rows=ingest_settings["batch_rows"], rule=args.rule or "clean")
    print(f"clean {args.corpus}: {stats['rows_in']} in, {stats['kept']} kept, "
          f"{stats['rejected_total']} rejected {stats['rejected']}", file=sys.stderr)
    return 0


def cmd_stats_bitext(args: argparse.Namespace) -> int:
    from paramill.bitext.stats import write_stats

    summary = write_stats(args.stats, args.json, args.tsv, rule=args.rule or "bitext_stats")
    print(f"bitext: {summary['rows_in']} in, {summary['kept']} kept in {summary['shards']} "
          f"shards, {summary['rejected_total']} rejected", file=sys.stderr)
    return 0


def cmd_nmt_spm(args: argparse.Namespace) -> int:
    from paramill.nmt.subwords import SubwordSettings, train

    settings = SubwordSettings.from_dict(_settings(("nmt", "spm"), args.settings))
    size = train(args.shards, args.lang, args.model, settings, rule=args.rule or "spm_train")
    print(f"spm {args.lang}: {size} pieces in {args.model}", file=sys.stderr)
    return 0


def cmd_nmt_data(args: argparse.Namespace) -> int:
    from paramill.nmt.data import write_training_text

    stats = write_training_text(args.shards, args.out, args.valid_size, args.seed,
                                rule=args.rule or "nmt_data")
    print(f"nmt data: {stats['train']} training and {stats['valid']} validation pairs",
          file=sys.stderr)
    return 0


def cmd_nmt_train(args: argparse.Namespace) -> int:
    from paramill.nmt.train import ModelSettings, TrainSettings, train

    model = ModelSettings.from_dict(_settings(("nmt", "model"), args.model_settings))
    settings = TrainSettings.from_dict(_settings(("nmt", "train"), args.settings))
    summary = train(args.direction, args.data, args.src_spm, args.tgt_spm, args.out, args.work,
                    model, settings, rule=args.rule or "nmt_train")
    print(f"nmt train {args.direction}: {summary}", file=sys.stderr)
    return 0


def cmd_nmt_convert(args: argparse.Namespace) -> int:
    from paramill.nmt.convert import convert

    convert(args.checkpoint, args.src_spm, args.tgt_spm, args.out, args.quantization or None,
            rule=args.rule or "nmt_convert")
    print(f"nmt convert: {args.out}", file=sys.stderr)
    return 0


def cmd_nmt_translate(args: argparse.Namespace) -> int:
    from paramill.nmt.convert import bundle_spm
    from paramill.nmt.translate import TranslateSettings, translate_shard

    settings = TranslateSettings.from_dict(_settings(("nmt", "translate"), args.settings))
    src_spm, tgt_spm = args.src_spm, args.tgt_spm
    if not (src_spm and tgt_spm):
        found = bundle_spm(args.model)
        if found is None:
            raise ValueError(f"{args.model} holds no SentencePiece models: give --src-spm and --tgt-spm")
        src_spm, tgt_spm = found
    if settings.method == "sample":  # ParaBank 2: constrained sampling, dual scoring, clusters
        from paramill.nmt.diverse import SampleSettings, sample_shard

        if not args.bwd_model:
            raise ValueError("method sample needs --bwd-model (the EN->CS model, for dual scoring)")
        sample = SampleSettings.from_dict(_settings(("nmt", "sample"), args.sample_settings))
        stats = sample_shard(args.shard, args.model, args.bwd_model, src_spm, tgt_spm, args.out,
                             sample, threads=args.threads, rule=args.rule or "back_translate")
    else:
        stats = translate_shard(args.shard, args.model, src_spm, tgt_spm, args.out, settings,
                                threads=args.threads, rule=args.rule or "back_translate")
    print(f"translate {args.shard}: {stats}", file=sys.stderr)
    return 0


def cmd_nmt_diversity(args: argparse.Namespace) -> int:
    from paramill.nmt.diversity import write_diversity
    from paramill.report.plots import diversity_plot

    result = write_diversity(args.candidates, args.spm, args.tsv, args.json, args.png,
                             plot=diversity_plot, rule=args.rule or "diversity_stats")
    print(f"diversity: {result['by_rank']} collective {result['collective']}", file=sys.stderr)
    return 0


def cmd_nmt_stats(args: argparse.Namespace) -> int:
    from paramill.nmt.stats import write_summary

    summary = write_summary(args.candidates, args.out, rule=args.rule or "backtranslation_stats")
    print(f"back-translation: {summary}", file=sys.stderr)
    return 0


def cmd_embed_train(args: argparse.Namespace) -> int:
    from paramill.embed.model import ModelSpec
    from paramill.embed.train import TrainSettings, read_pairs, train

    spec = ModelSpec.from_dict(_settings(("embed", "model"), args.spec))
    settings = TrainSettings.from_dict(_settings(("embed", "train"), args.settings))
    pairs = read_pairs(args.pairs, settings.max_pairs)
    summary = train(pairs, args.out, spec, settings, resume=args.resume, inputs=args.pairs,
                    rule=args.rule or "embed_train")
    print(f"embed train: {summary}", file=sys.stderr)
    return 0


def cmd_embed_encode(args: argparse.Namespace) -> int:
    import numpy as np

    from paramill.embed.model import load_model
    from paramill.io import atomic_output

    model = load_model(args.model)
    sentences = Path(args.input).read_text(encoding="utf-8").splitlines()
    vectors = model.encode(sentences, batch_size=args.batch_size)
    with atomic_output(args.out) as (tmp,):
        with open(tmp, "wb") as fh:
            np.save(fh, vectors)
    print(f"embed: {vectors.shape[0]} sentences x {vectors.shape[1]} dims in {args.out}", file=sys.stderr)
    return 0


def cmd_filter_heldout(args: argparse.Namespace) -> int:
    from paramill.filters.heldout import HeldoutSettings, select_heldout

    settings = HeldoutSettings.from_dict(_settings(("filters", "heldout"), args.settings))
    stats = select_heldout(args.candidates, args.out, settings, rule=args.rule or "heldout")
    print(f"heldout: {stats}", file=sys.stderr)
    return 0


def cmd_filter_kenlm(args: argparse.Namespace) -> int:
    from paramill.filters.kenlm import KenlmSettings, train_lm_from_heldout

    settings = KenlmSettings.from_dict(_settings(("filters", "kenlm"), args.settings))
    stats = train_lm_from_heldout(args.heldout, args.out, settings, rule=args.rule or "kenlm_train")
    print(f"kenlm: {stats}", file=sys.stderr)
    return 0


def cmd_filter_classifier(args: argparse.Namespace) -> int:
    from paramill.filters.classifier import ClassifierSettings, train_from_heldout

    settings = ClassifierSettings.from_dict(_settings(("filters", "classifier"), args.settings))
    summary = train_from_heldout(args.heldout, args.out, settings,
                                 rule=args.rule or "classifier_train")
    print(f"classifier: best epoch {summary['epoch']}, valid accuracy "
          f"{summary['valid_accuracy']:.3f}, test accuracy {summary['test_accuracy']:.3f}",
          file=sys.stderr)
    return 0


def cmd_filter_score(args: argparse.Namespace) -> int:
    from paramill import filters
    from paramill.filters.base import score_shard

    given = _settings(("filters", args.filter), args.settings) if args.filter in _FILTER_SECTIONS else {}
    cls = filters.filter_class(args.filter)
    fields = {k for k in getattr(cls, "__dataclass_fields__", {}) if not k.startswith("_")}
    options = {k: v for k, v in given.items() if k in fields}  # the rest trains its model
    models = dict(args.models or {})
    source_shard = models.pop("source", None) or args.source_shard
    unknown = set(models) - _MODEL_KEYS
    if unknown:
        raise ValueError(f"--models: unknown keys {sorted(unknown)} (known: {sorted(_MODEL_KEYS)})")
    options.update(models)
    if "threads" in fields:
        options["threads"] = args.threads
    filt = filters.make(args.filter, **options)
    stats = score_shard(filt, args.candidates, args.out, source_shard=source_shard,
                        inputs=list(models.values()), params=options, threads=args.threads,
                        rule=args.rule or f"score_{args.filter}")
    print(f"score {args.filter} {args.candidates}: {stats}", file=sys.stderr)
    return 0


_MODEL_KEYS = {"model", "cs_en", "en_cs", "cs_spm", "en_spm"}
_FILTER_SECTIONS = ("length", "cost", "overlap", "bleu", "kenlm", "classifier", "parascore", "dual_xent")


def cmd_filter_select(args: argparse.Namespace) -> int:
    from paramill.filters.select import SelectSettings, select

    settings = SelectSettings.from_dict(_settings(("filters", "select"), args.settings))
    summary = select(args.candidates, args.scores or [], args.parquet, args.tsv, args.json,
                     settings, heldout=args.heldout, name=args.name, rule=args.rule or "select")
    steps = ", ".join(f"{r['step']}: {r['pairs']}" for r in summary["steps"])
    print(f"select {args.name}: {summary['rows']} pairs ({steps})", file=sys.stderr)
    return 0


def cmd_filter_analyse(args: argparse.Namespace) -> int:
    from paramill.filters.analysis import AnalysisSettings
    from paramill.filters.release import write_release_docs
    from paramill.report.plots import score_histograms

    settings = AnalysisSettings.from_dict(_settings(("filters", "analysis"), args.settings))
    stats = write_release_docs(args.name, args.candidates, args.scores or [], args.corpus,
                               args.selection, args.out_dir, settings, sources=args.sources,
                               plot=score_histograms, rule=args.rule or "corpus_analysis")
    print(f"analysis {args.name}: {stats['corpus']}", file=sys.stderr)
    return 0


def cmd_twitter_harvest(args: argparse.Namespace) -> int:
    from paramill.twitter.harvest import HarvestError, HarvestSettings, harvest_day

    settings = HarvestSettings.from_dict(_settings(("twitter", "harvest"), args.settings))
    try:
        stats = harvest_day(args.date, args.out, settings, source=args.source, raw_dir=args.raw_dir,
                            state_path=args.state, archive=args.archive, url_cache=args.url_cache,
                            rule=args.rule or "harvest", rejected_out=args.rejected)
    except HarvestError as exc:
        print(f"paramill twitter harvest: {exc}", file=sys.stderr)
        return 3
    print(f"harvest {args.date}: {stats}", file=sys.stderr)
    return 0


def cmd_twitter_train(args: argparse.Namespace) -> int:
    from paramill.twitter.identify import IdentifySettings
    from paramill.twitter.month import train_identifier

    settings = IdentifySettings.from_dict({k: v for k, v in _settings(("twitter", "identify"), args.settings).items()
                                           if k not in ("train", "evaluate")})
    if args.embed_model is not None:
        settings = IdentifySettings.from_dict({**settings.__dict__, "embed_model": args.embed_model or None})
    result = train_identifier(args.train, args.evaluate or [], args.out, args.report, settings,
                              rule=args.rule or "paraid_train")
    for ev in result["evaluations"]:
        print(f"{ev['data']}: LR F1 {ev['lr']['f1']}, extended F1 {ev['extended']['f1']}", file=sys.stderr)
    return 0


def cmd_twitter_month(args: argparse.Namespace) -> int:
    from paramill.twitter.month import load_cards, score_month
    from paramill.twitter.pairs import PairSettings

    settings = PairSettings.from_dict(_settings(("twitter", "pairs"), args.settings))
    stats = score_month(args.days, args.model, args.accounts, args.pairs, args.tsv, args.stats,
                        args.month, settings, args.threshold, load_cards(args.cards),
                        rule=args.rule or "twitter_month")
    print(f"month {args.month}: {stats}", file=sys.stderr)
    return 0


def cmd_twitter_growth(args: argparse.Namespace) -> int:
    from paramill.report.plots import growth_plot
    from paramill.twitter.month import growth

    rows = growth(args.stats, args.tsv, args.png, plot=growth_plot, rule=args.rule or "twitter_growth")
    print(f"growth: {rows}", file=sys.stderr)
    return 0


def cmd_lexicon_build(args: argparse.Namespace) -> int:
    from paramill.lexicon.pmi import LexiconSettings, count_and_score

    settings = LexiconSettings.from_dict({k: v for k, v in _settings(("lexicon",), args.settings).items()
                                          if k not in ("simlex", "selection")})
    stats = count_and_score(args.corpus, args.tsv, args.neighbours, args.stats, settings,
                            rule=args.rule or "lexicon", spill_dir=args.spill_dir)
    print(f"lexicon: {stats}", file=sys.stderr)
    return 0


def cmd_lexicon_simlex(args: argparse.Namespace) -> int:
    from paramill.lexicon.simlex import evaluate

    result = evaluate(args.lexicon, args.simlex, args.tsv, args.json, rule=args.rule or "lexicon_simlex")
    print(f"simlex: {result['results']}", file=sys.stderr)
    return 0


def cmd_evaluate_sts(args: argparse.Namespace) -> int:
    from paramill.evaluate.sts import evaluate

    result = evaluate(args.model, args.datasets, args.tsv, args.json, rule=args.rule or "sts_eval")
    for row in result["datasets"]:
        print(f"{row['dataset']:<24} {row['year']:<6} n={row['n']:<6} pearson={row['pearson']} "
              f"spearman={row['spearman']}", file=sys.stderr)
    return 0


def cmd_evaluate_download(args: argparse.Namespace) -> int:
    from paramill.evaluate.download import download

    result = download(args.name, args.out, rule=args.rule or "sts_download")
    print(f"download {args.name}: {len(result['files'])} files in {args.out}", file=sys.stderr)
    return 0


def cmd_evaluate_collect(args: argparse.Namespace) -> int:
    from paramill.evaluate.sts import collect

    n = collect(args.results, args.points or {}, args.out, rule=args.rule or "sweep")
    print(f"evaluate: {n} rows in {args.out}", file=sys.stderr)
    return 0


def cmd_report_outcomes(args: argparse.Namespace) -> int:
    from paramill.report.plots import outcomes_plot

    bars = outcomes_plot(args.tsv, args.out, rule=args.rule or "plot_bitext_outcomes")
    print(f"report: {bars} bars in {args.out}", file=sys.stderr)
    return 0


def cmd_report_provenance(args: argparse.Namespace) -> int:
    from paramill.report.provenance import recorded_outputs, write_summary

    outputs = [*args.outputs, *recorded_outputs(args.under, exclude=[args.html, args.tsv])]
    if not outputs:
        raise ValueError("no provenance records: give outputs or --under FOLDER")
    n = write_summary(outputs, args.html, args.tsv, rule=args.rule or "provenance_summary")
    print(f"report: {n} provenance records in {args.html}", file=sys.stderr)
    return 0


def cmd_provenance_verify(args: argparse.Namespace) -> int:
    from paramill.provenance import verify

    status = 0
    for path in args.paths:
        findings = verify(path, recursive=not args.no_recursive)
        if findings:
            status = 1
            print(f"{path}: BROKEN ({len(findings)} problem{'s' * (len(findings) != 1)})")
            for finding in findings:
                print(f"  {finding}")
        else:
            print(f"{path}: OK" + ("" if args.no_recursive else " (whole chain)"))
    return status


def cmd_provenance_show(args: argparse.Namespace) -> int:
    from paramill.io import read_json
    from paramill.provenance import prov_path

    record = read_json(prov_path(args.path))
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def cmd_config_resolve(args: argparse.Namespace) -> int:
    from paramill import config

    if args.file == "-":
        data = json.load(sys.stdin)
        resolved = config.resolve(data)
    else:
        resolved = config.load(args.file)
    if args.with_digest:
        resolved = {"config": resolved, "digest": config.digest(resolved)}
    json.dump(resolved, sys.stdout, sort_keys=False)
    sys.stdout.write("\n")
    return 0


def cmd_config_validate(args: argparse.Namespace) -> int:
    from paramill import config

    config.load(args.file)
    print(f"{args.file}: valid")
    return 0


# -- parser --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paramill",
        description="Paraphrase corpora from Czech-English bitext and news tweets. Each "
                    "subcommand is one pipeline stage; the Snakemake rules call them, and "
                    "they run on their own too. Every output gets <output>.prov.json.")
    parser.add_argument("--version", action="version", version=f"paramill {__version__}")
    parser.add_argument("--rule", help="rule name recorded in provenance (set by the workflow)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("ingest", help="read a bitext corpus into Parquet shards",
                       description="Stream a CzEng 1.x, CzEng 2.0-style TSV, Moses pair or TSV "
                                   "corpus (plain, gz, xz, zst, bz2) into Parquet shards of the "
                                   "bitext schema. Lines that cannot be read go to "
                                   "rejected.parquet with a reason.")
    p.add_argument("--corpus", required=True, help="corpus name (part of every pair_id)")
    p.add_argument("--spec", type=_json_arg, help="corpus spec as in config bitext.corpora.NAME (JSON or @file)")
    p.add_argument("--format", choices=["czeng1", "czeng2", "moses", "tsv"])
    p.add_argument("--path", help="input file (czeng1, czeng2, tsv)")
    p.add_argument("--cs", help="Czech file (moses)")
    p.add_argument("--en", help="English file (moses)")
    p.add_argument("--columns", nargs="+", help="column names, including cs and en (czeng2, tsv)")
    p.add_argument("--header", action="store_true", help="first line names the columns")
    p.add_argument("--settings", type=_json_arg, help="bitext.ingest settings (JSON or @file)")
    p.add_argument("--out", required=True, help="output directory (created atomically)")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("clean", help="clean and deduplicate an ingested corpus",
                       description="ParaBank 2 cleaning (punctuation normalisation, latin-1/"
                                   "latin-2, empty/identical sides, length bounds and ratio) "
                                   "and exact dedup against this corpus and earlier ones.")
    p.add_argument("--corpus", required=True)
    p.add_argument("--ingested", required=True, help="directory written by `paramill ingest`")
    p.add_argument("--shards", required=True, help="output directory of cleaned shards")
    p.add_argument("--rejected", required=True, help="output Parquet of rejected rows")
    p.add_argument("--keys", required=True, help="output Parquet of kept pairs' dedup keys")
    p.add_argument("--stats", required=True, help="output JSON of counts")
    p.add_argument("--prior-keys", nargs="*", default=[],
                   help="key files of earlier corpora (their pairs win duplicates)")
    p.add_argument("--settings", type=_json_arg, help="bitext.clean settings (JSON or @file)")
    p.add_argument("--ingest-settings", type=_json_arg, help="bitext.ingest settings (shard size, batch)")
    p.set_defaults(func=cmd_clean)

    p = sub.add_parser("nmt", help="subwords, translation models, back-translation")
    nmt_sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    q = nmt_sub.add_parser("spm", help="train a SentencePiece model on one side of bitext shards")
    q.add_argument("shards", nargs="+", help="bitext shards (Parquet)")
    q.add_argument("--lang", required=True, choices=["cs", "en"])
    q.add_argument("--model", required=True, help="output .model (its .vocab is written beside it)")
    q.add_argument("--settings", type=_json_arg, help="nmt.spm settings (JSON or @file)")
    q.set_defaults(func=cmd_nmt_spm)
    q = nmt_sub.add_parser("data", help="write OpenNMT-py training text (train/valid, cs/en)")
    q.add_argument("shards", nargs="+")
    q.add_argument("--out", required=True, help="output directory")
    q.add_argument("--valid-size", type=int, default=200, help="held-out validation pairs")
    q.add_argument("--seed", type=int, default=13)
    q.set_defaults(func=cmd_nmt_data)
    q = nmt_sub.add_parser("train", help="train (or resume) a transformer with OpenNMT-py",
                           description="Builds the vocabulary and trains one direction with "
                                       "onmt_train on all visible GPUs (CPU when none), resuming "
                                       "from the last checkpoint in --work after a killed job.")
    q.add_argument("--direction", required=True, choices=["cs-en", "en-cs"])
    q.add_argument("--data", required=True, help="directory from `paramill nmt data`")
    q.add_argument("--src-spm", required=True)
    q.add_argument("--tgt-spm", required=True)
    q.add_argument("--work", required=True, help="training workspace (checkpoints; kept for resuming)")
    q.add_argument("--out", required=True, help="output: the final checkpoint (.pt)")
    q.add_argument("--model-settings", type=_json_arg, help="nmt.model settings (JSON or @file)")
    q.add_argument("--settings", type=_json_arg, help="nmt.train settings (JSON or @file)")
    q.set_defaults(func=cmd_nmt_train)
    q = nmt_sub.add_parser("convert", help="convert an OpenNMT-py checkpoint to CTranslate2")
    q.add_argument("--checkpoint", required=True)
    q.add_argument("--src-spm", required=True)
    q.add_argument("--tgt-spm", required=True)
    q.add_argument("--out", required=True, help="output model bundle directory")
    q.add_argument("--quantization", help="int8, float16, ... (default: none)")
    q.set_defaults(func=cmd_nmt_convert)
    q = nmt_sub.add_parser("translate", help="back-translate one bitext shard with CTranslate2",
                           description="Translate the Czech side of a shard into English (beam, "
                                       "k-best, or ParaBank 2's constrained sampling with dual "
                                       "scoring and clustering) and write the candidate table.")
    q.add_argument("--shard", required=True)
    q.add_argument("--model", required=True, help="CTranslate2 model dir or paramill bundle")
    q.add_argument("--bwd-model", help="EN->CS CTranslate2 model (method sample: dual scoring)")
    q.add_argument("--sample-settings", type=_json_arg, help="nmt.sample settings (JSON)")
    q.add_argument("--src-spm", help="source SentencePiece model (default: from the bundle)")
    q.add_argument("--tgt-spm", help="target SentencePiece model (default: from the bundle)")
    q.add_argument("--out", required=True, help="output candidate table (Parquet)")
    q.add_argument("--threads", type=int, default=1, help="CPU threads (ignored on GPU)")
    q.add_argument("--settings", type=_json_arg, help="nmt.translate settings (JSON or @file)")
    q.set_defaults(func=cmd_nmt_translate)
    q = nmt_sub.add_parser("diversity", help="diversity of paraphrases by rank (ParaBank 2 Tables 1-2)")
    q.add_argument("candidates", nargs="+")
    q.add_argument("--spm", required=True, help="English SentencePiece model (pieces for BLEU/bags)")
    q.add_argument("--tsv", required=True)
    q.add_argument("--json", required=True)
    q.add_argument("--png", help="bar plot by rank")
    q.set_defaults(func=cmd_nmt_diversity)
    q = nmt_sub.add_parser("stats", help="summarise candidate tables")
    q.add_argument("candidates", nargs="+")
    q.add_argument("--out", required=True, help="output JSON")
    q.set_defaults(func=cmd_nmt_stats)

    p = sub.add_parser("embed", help="paraphrastic sentence embeddings")
    emb_sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    q = emb_sub.add_parser("train", help="train an encoder on paraphrase pairs",
                           description="Margin loss with hardest negatives from a mega-batch "
                                       "(Wieting et al.). Pairs: Parquet s1/s2 or candidate tables "
                                       "(en_ref/candidate, rank 1), or TSV s1<TAB>s2. Resumes "
                                       "after a killed job from --resume.")
    q.add_argument("pairs", nargs="+", help="paraphrase pair files")
    q.add_argument("--out", required=True, help="output model (.pt)")
    q.add_argument("--resume", help="per-epoch checkpoint (default: <out>.resume.pt)")
    q.add_argument("--spec", type=_json_arg, help="embed.model settings: components, dim, ... (JSON)")
    q.add_argument("--settings", type=_json_arg, help="embed.train settings (JSON)")
    q.set_defaults(func=cmd_embed_train)
    q = emb_sub.add_parser("encode", help="embed sentences (one a line) into a .npy matrix")
    q.add_argument("--model", required=True)
    q.add_argument("--input", required=True, help="text file, one sentence a line")
    q.add_argument("--out", required=True, help="output .npy (float32, n x dim)")
    q.add_argument("--batch-size", type=int, default=256)
    q.set_defaults(func=cmd_embed_encode)

    p = sub.add_parser("filter", help="filter scores, selection and the released corpus",
                       description="Filters add score columns to candidate shards (never dropping "
                                   "rows); `select` applies bounds and writes the corpus; "
                                   "`analyse` writes its stats and datasheet. See README "
                                   "'Filters and selection'.")
    f_sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    q = f_sub.add_parser("heldout", help="pick held-out reference/translation pairs (seeded)")
    q.add_argument("candidates", nargs="+", help="candidate tables")
    q.add_argument("--out", required=True, help="output Parquet")
    q.add_argument("--settings", type=_json_arg, help="filters.heldout settings (JSON)")
    q.set_defaults(func=cmd_filter_heldout)
    q = f_sub.add_parser("kenlm", help="train the KenLM model on held-out references (lmplz)")
    q.add_argument("--heldout", required=True)
    q.add_argument("--out", required=True, help="output KenLM binary")
    q.add_argument("--settings", type=_json_arg, help="filters.kenlm settings (JSON)")
    q.set_defaults(func=cmd_filter_kenlm)
    q = f_sub.add_parser("classifier", help="train the reference/translation classifier")
    q.add_argument("--heldout", required=True)
    q.add_argument("--out", required=True, help="output model (.pt)")
    q.add_argument("--settings", type=_json_arg, help="filters.classifier settings (JSON)")
    q.set_defaults(func=cmd_filter_classifier)
    q = f_sub.add_parser("score", help="add one filter's score columns to a candidate shard",
                         description="Filters: " + ", ".join(_FILTER_SECTIONS) + ". Writes "
                                     "pair_id, candidate_id and the filter's columns, one row "
                                     "per candidate.")
    q.add_argument("--filter", required=True, choices=_FILTER_SECTIONS)
    q.add_argument("--candidates", required=True, help="candidate table of one shard")
    q.add_argument("--source-shard", help="the bitext shard (dual_xent needs the Czech side)")
    q.add_argument("--out", required=True, help="output score table (Parquet)")
    q.add_argument("--settings", type=_json_arg, help="filters.<name> settings (JSON)")
    q.add_argument("--models", type=_json_arg, default={},
                   help='JSON {"model": kenlm binary, classifier or embedding model} or, for '
                        'dual_xent, {"cs_en", "en_cs": CTranslate2 models, "cs_spm", "en_spm": '
                        'SentencePiece models, "source": the bitext shard}')
    q.add_argument("--threads", type=int, default=1)
    q.set_defaults(func=cmd_filter_score)
    q = f_sub.add_parser("select", help="apply bounds/folds/sample; write the corpus")
    q.add_argument("--candidates", nargs="+", required=True)
    q.add_argument("--scores", nargs="*", help="score tables (any order; matched by corpus/shard)")
    q.add_argument("--heldout", help="held-out table whose pairs are left out")
    q.add_argument("--name", default="default", help="selection name (in the datasheet)")
    q.add_argument("--settings", type=_json_arg, help="filters.select settings (JSON)")
    q.add_argument("--parquet", required=True)
    q.add_argument("--tsv", required=True)
    q.add_argument("--json", required=True, help="selection summary with counts per step")
    q.set_defaults(func=cmd_filter_select)
    q = f_sub.add_parser("analyse", help="stats, annotation sample, plots and datasheet of a corpus")
    q.add_argument("--candidates", nargs="+", required=True)
    q.add_argument("--scores", nargs="*")
    q.add_argument("--corpus", required=True, help="corpus.parquet from `filter select`")
    q.add_argument("--selection", required=True, help="selection.json from `filter select`")
    q.add_argument("--name", default="default")
    q.add_argument("--sources", type=_json_arg, help='JSON {"corpora": config bitext.corpora, "translate": config nmt.translate}'
                        ' (or "generation": the text itself)')
    q.add_argument("--settings", type=_json_arg, help="filters.analysis settings (JSON)")
    q.add_argument("--out-dir", required=True)
    q.set_defaults(func=cmd_filter_analyse)

    p = sub.add_parser("twitter", help="tweets sharing news URLs: harvest, pairs, identification")
    tw_sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    q = tw_sub.add_parser("harvest", help="harvest (or replay from archives) one day of tweets",
                          description="Live: news accounts' timelines since the last harvested id, "
                                      "then a recent search per new URL (X API v2 via tweepy; "
                                      "credentials from the environment variables named in "
                                      "twitter.harvest). Archive: JSONL of v1.1/v2 tweet objects. "
                                      "Exit 3 when the harvest cannot go on (credentials refused, the free "
                                      "tier, another harvest holding the state).")
    q.add_argument("--date", required=True, help="YYYY-MM-DD")
    q.add_argument("--out", required=True, help="the day's tweet table (Parquet)")
    q.add_argument("--rejected", help="the day's rejected records with reasons (Parquet; "
                                      "default: rejected/<name> beside --out)")
    q.add_argument("--source", choices=["live", "archive"], default="live")
    q.add_argument("--archive", nargs="*", help="JSONL files to replay (source archive)")
    q.add_argument("--raw-dir", default="data/twitter/raw", help="raw API pages, per day")
    q.add_argument("--state", default="data/twitter/state.json", help="since_id/cursor state file")
    q.add_argument("--url-cache", help="URL expansion cache (JSON)")
    q.add_argument("--settings", type=_json_arg, help="twitter.harvest settings (JSON)")
    q.set_defaults(func=cmd_twitter_harvest)
    q = tw_sub.add_parser("train", help="train the paraphrase identifier (LR and extended)")
    q.add_argument("--train", type=_json_arg, required=True, help='JSON [{"path", "format"}]')
    q.add_argument("--evaluate", type=_json_arg, help='JSON [{"path", "format"}] (default: 5-fold CV)')
    q.add_argument("--embed-model", help="embedding model for the cosine feature ('' = none)")
    q.add_argument("--settings", type=_json_arg, help="twitter.identify settings (JSON)")
    q.add_argument("--out", required=True, help="model file")
    q.add_argument("--report", required=True, help="evaluation JSON (max F1, P, R)")
    q.set_defaults(func=cmd_twitter_train)
    q = tw_sub.add_parser("month", help="pairs of a month's tweets with p_paraphrase")
    q.add_argument("days", nargs="*", help="day tables of the month")
    q.add_argument("--month", required=True)
    q.add_argument("--model", required=True)
    q.add_argument("--accounts", nargs="+", required=True, help="news accounts (lower-case)")
    q.add_argument("--threshold", type=float, default=0.5)
    q.add_argument("--cards", help="JSON {url: {title, description}} of linked pages")
    q.add_argument("--settings", type=_json_arg, help="twitter.pairs settings (JSON)")
    q.add_argument("--pairs", required=True)
    q.add_argument("--tsv", required=True, help="accepted: s1, s2, tweet_a, tweet_b, p")
    q.add_argument("--stats", required=True)
    q.set_defaults(func=cmd_twitter_month)
    q = tw_sub.add_parser("growth", help="tweets, pairs and paraphrases per month")
    q.add_argument("stats", nargs="+")
    q.add_argument("--tsv", required=True)
    q.add_argument("--png")
    q.set_defaults(func=cmd_twitter_growth)

    p = sub.add_parser("lexicon", help="paraphrase lexicon with cross-sentence and adjusted PMI")
    lx_sub = p.add_subparsers(dest="what", required=True, metavar="STEP")
    q = lx_sub.add_parser("build", help="count word pairs in a corpus and score them",
                          description="ParaNMT appendix A.1: pairs with parascore >= min_parascore "
                                      "and both sides <= max_tokens; counts partitioned on disk.")
    q.add_argument("corpus", nargs="+", help="corpus Parquet files (s1, s2[, parascore])")
    q.add_argument("--settings", type=_json_arg, help="lexicon settings (JSON)")
    q.add_argument("--tsv", required=True, help="lexicon.tsv: u, v, count, pmi_cross, pmi_adjusted")
    q.add_argument("--neighbours", required=True, help="top-k neighbours of each word (TSV)")
    q.add_argument("--stats", required=True)
    q.add_argument("--spill-dir", help="where the partitioned counts go while they are summed "
                                       "(removed at the end; default: beside --tsv)")
    q.set_defaults(func=cmd_lexicon_build)
    q = lx_sub.add_parser("simlex", help="Spearman of the lexicon's scores on SimLex-999")
    q.add_argument("--lexicon", required=True)
    q.add_argument("--simlex", required=True, help="SimLex-999.txt (or a file in its format)")
    q.add_argument("--tsv", required=True)
    q.add_argument("--json", required=True)
    q.set_defaults(func=cmd_lexicon_simlex)

    p = sub.add_parser("evaluate", help="evaluate models")
    ev_sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    q = ev_sub.add_parser("sts", help="STS correlations of an embedding model")
    q.add_argument("--model", required=True)
    q.add_argument("--datasets", type=_json_arg, required=True,
                   help='JSON list of {"name","year","format","path"} (as config evaluate.sts)')
    q.add_argument("--tsv", required=True)
    q.add_argument("--json", required=True)
    q.set_defaults(func=cmd_evaluate_sts)
    q = ev_sub.add_parser("download", help="fetch an official STS archive, check its sha256, unpack",
                          description="Archives with pinned sha256: stsbenchmark, stscompanion, "
                                      "sts2017. A download whose digest differs is refused.")
    q.add_argument("name", help="stsbenchmark | stscompanion | sts2017")
    q.add_argument("--out", required=True, help="directory to create")
    q.set_defaults(func=cmd_evaluate_download)
    q = ev_sub.add_parser("collect", help="one table of several models' STS results")
    q.add_argument("results", nargs="+", help="sts.json files (the model name is their folder)")
    q.add_argument("--points", type=_json_arg, help="JSON {model: settings} labelling the rows")
    q.add_argument("--out", required=True, help="output TSV")
    q.set_defaults(func=cmd_evaluate_collect)

    p = sub.add_parser("stats", help="corpus statistics")
    stats_sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    q = stats_sub.add_parser("bitext", help="gather per-corpus clean stats into one file")
    q.add_argument("stats", nargs="+", help="per-corpus stats JSON files from `paramill clean`")
    q.add_argument("--json", required=True, help="output JSON summary")
    q.add_argument("--tsv", required=True, help="output TSV: corpus, shard, outcome, rows")
    q.set_defaults(func=cmd_stats_bitext)

    p = sub.add_parser("report", help="figures and tables for the Snakemake report")
    rep_sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    q = rep_sub.add_parser("outcomes", help="plot rows kept/rejected per reason per input shard")
    q.add_argument("--tsv", required=True, help="outcomes TSV from `paramill stats bitext`")
    q.add_argument("--out", required=True, help="output PNG")
    q.set_defaults(func=cmd_report_outcomes)
    q = rep_sub.add_parser("provenance", help="one table of the provenance records of outputs")
    q.add_argument("outputs", nargs="*", help="outputs whose .prov.json to summarise")
    q.add_argument("--under", action="append", default=[], metavar="FOLDER",
                   help="also every output with a .prov.json anywhere under FOLDER (repeatable)")
    q.add_argument("--html", required=True, help="output HTML table")
    q.add_argument("--tsv", required=True, help="output TSV table")
    q.set_defaults(func=cmd_report_provenance)

    p = sub.add_parser("provenance", help="inspect and verify provenance records")
    prov_sub = p.add_subparsers(dest="what", required=True, metavar="ACTION")
    q = prov_sub.add_parser("verify", help="re-hash inputs and outputs; follow the chain",
                            description="Exit 0 when every recorded input and output still has "
                                        "its recorded sha256, back to the raw files; 1 otherwise.")
    q.add_argument("paths", nargs="+", help="outputs (not their .prov.json)")
    q.add_argument("--no-recursive", action="store_true", help="check only these records")
    q.set_defaults(func=cmd_provenance_verify)
    q = prov_sub.add_parser("show", help="print an output's record")
    q.add_argument("path")
    q.set_defaults(func=cmd_provenance_show)

    p = sub.add_parser("config", help="validate configs against the schema")
    cfg_sub = p.add_subparsers(dest="what", required=True, metavar="ACTION")
    q = cfg_sub.add_parser("validate", help="check a config file; errors name the key")
    q.add_argument("file")
    q.set_defaults(func=cmd_config_validate)
    q = cfg_sub.add_parser("resolve", help="print the config with defaults filled in, as JSON")
    q.add_argument("file", help="YAML file, or - for JSON on stdin")
    q.add_argument("--with-digest", action="store_true",
                   help='print {"config": ..., "digest": sha256} (used by the Snakefile)')
    q.set_defaults(func=cmd_config_resolve)
    return parser


def _terminated(signum: int, frame: Any) -> None:
    # SLURM (time limit, scancel) and snakemake stop a job with SIGTERM; as an exception
    # it unwinds like any failure, so temporaries and scratch space are removed
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    from paramill.config import ConfigError
    from paramill.io import InputError

    parser = build_parser()
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        return args.func(args)
    except (InputError, ConfigError, ValueError) as exc:
        print(f"paramill {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except OSError as exc:  # a disk full (ENOSPC), a file that cannot be opened or written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"paramill {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
