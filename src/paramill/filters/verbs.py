"""``paramill filters``: held-out data, filter models, scores, selection and the release."""

import argparse

from paramill.run import device
from paramill.run.commands import (
    Group,
    arg,
    json_arg,
    json_of,
    launch_overlays,
    need,
    out,
    section_settings,
)

_NAMED = {"type": "object", "additionalProperties": {"type": "object"}}
#: what `filters analyse --sources` reads: the config's corpora, and how candidates were made
SOURCES = {"type": "object", "properties": {"corpora": _NAMED, "pairs": _NAMED,
                                            "translate": {"type": ["object", "null"]},
                                            "generation": {"type": ["string", "null"]}}}

group = Group("filters", "filter scores, selection and the released corpus",
              "Filters add score columns to candidate shards (never dropping rows); `select` "
              "applies bounds and writes the corpus; `analyse` writes its stats and datasheet.",
              docs="methods/filters.md")


@group.verb(
    "heldout", "pick held-out reference/translation pairs (seeded)",
    arg("candidates", nargs="+", help="candidate tables", table="candidates"), out("--out", "output Parquet"),
    settings="filters.heldout",
    example='paramill filters heldout work/candidates/grammar --out work/filters/heldout.parquet')
def heldout(args: argparse.Namespace) -> int | str:
    from paramill.filters.heldout import HeldoutSettings, select_heldout
    settings = HeldoutSettings.from_dict(args.settings)
    return str(select_heldout(args.candidates, args.out, settings, rule=args.rule))


@group.verb(
    "kenlm", "train the KenLM model on held-out references (lmplz)",
    need("--heldout", "held-out table from `paramill filters heldout`", table="heldout"),
    out("--out", "output KenLM binary"), settings="filters.kenlm",
    example='paramill filters kenlm --heldout work/filters/heldout.parquet --out work/filters/kenlm/lm.binary')
def kenlm(args: argparse.Namespace) -> int | str:
    from paramill.filters.kenlm import KenlmSettings, train_lm_from_heldout
    settings = KenlmSettings.from_dict(args.settings)
    return str(train_lm_from_heldout(args.heldout, args.out, settings, rule=args.rule))


@group.verb(
    "classifier", "train the reference/translation classifier",
    need("--heldout", "held-out table from `paramill filters heldout`", table="heldout"),
    out("--out", "output model (.pt)"), settings="filters.classifier", launch=True,
    example='paramill filters classifier --heldout work/filters/heldout.parquet --out work/filters/classifier/model.pt')
def classifier(args: argparse.Namespace) -> int | str:
    from paramill.filters.classifier import ClassifierSettings, train_from_heldout
    s = train_from_heldout(args.heldout, args.out, ClassifierSettings.from_dict(args.settings),
                           rule=args.rule)
    return (f"best epoch {s['epoch']}, valid accuracy {s['valid_accuracy']:.3f}, "
            f"test accuracy {s['test_accuracy']:.3f}")


@group.verb(
    "score", "add one filter's score columns to a candidate shard",
    need("--filter", "filter name (config filters.enabled lists them)"),
    need("--candidates", "candidate table of one shard", table="candidates"),
    out("--out", "output score table (Parquet)"), arg("--settings", type=json_arg, metavar="JSON",
        help="config section filters.<name> (JSON); keys left out take the schema's defaults"),
    arg("--models", type=json_of({"type": "object", "additionalProperties": {"type": "string"}},
                                 "{field: path}"), default={}, metavar="JSON", help="{field: path} of the "
        "filter's x-models (schema), \"source\": the bitext shard when it needs Czech, "
        "\"tokens\": the shard's token table (`filters tokens`) when it reads it"),
    arg("--launch", type=json_arg, metavar="JSON", help="launch-only keys (how the job runs, "
        "not what it computes: a scoring batch size) over --settings: {\"filters.NAME\": {KEY: "
        "VALUE}}, any filter's (each job reads its own); the workflow passes them here, outside "
        "its params, so changing one re-runs nothing"),
    description="Writes pair_id, candidate_id and the filter's columns, one row per candidate.",
    example='paramill filters score --filter overlap --candidates work/candidates/grammar/shard-00000.parquet --out scores.parquet')
def score(args: argparse.Namespace) -> int | str:
    from paramill import config
    from paramill import filters
    from paramill.filters.base import score_shard
    from paramill.io.tableread import check_kind
    cls = filters.filter_class(args.filter)
    section = f"filters.{cls.name}"
    launch = launch_overlays(args.launch, [f"filters.{name}" for name in filters.names()])
    # a job out of (GPU) memory names its filter's batch size (main's error line)
    args.memory_keys = tuple(f"{section}.{key}" for key in config.marked("launch", "filters", cls.name))
    given = section_settings(section, args.settings, launch.get(section))  # keys for its model's training
    options = {k: v for k, v in given.items() if k in cls.__dataclass_fields__}  # are left out
    models = dict(args.models or {})
    source_shard = models.pop("source", None)
    tokens = models.pop("tokens", None)
    for path, kind in ((source_shard, "bitext"), (tokens, "tokens")):
        if path:  # from the footer, before the filter's model loads: another table named
            check_kind([path], kind)  # the file; it was a polars traceback mid-job
    if set(models) != set(cls.models):
        raise ValueError(f"--models: filter {cls.name} takes {sorted(cls.models) or 'none'}, "
                         f"not {sorted(models)}")
    options.update(models)
    if "threads" in cls.__dataclass_fields__:
        options["threads"] = device.threads()
    stats = score_shard(filters.make(cls.name, **options), args.candidates, args.out,
                        source_shard=source_shard, inputs=list(models.values()), params=options,
                        threads=device.threads(), rule=args.rule, tokens=tokens)
    return f"{cls.name} {args.candidates}: {stats}"


@group.verb(
    "tokens", "tokenise a candidate shard once for the length, overlap and BLEU filters",
    need("--candidates", "candidate table of one shard", table="candidates"),
    out("--out", "output token table (Parquet)"),
    description="Writes, row for row, both sides' token counts (as cased and lower-cased) and "
                "the clipped n-grams they share for orders 1-4; the filters that read it "
                "(x-reads-tokens) take it as --models '{\"tokens\": PATH}'.",
    example='paramill filters tokens --candidates work/candidates/grammar/shard-00000.parquet --out tokens.parquet')
def tokens(args: argparse.Namespace) -> int | str:
    from paramill.filters.tokens import count_shard
    stats = count_shard(args.candidates, args.out, threads=device.threads(), rule=args.rule)
    return f"{args.candidates}: {stats}"


@group.verb(
    "select", "apply bounds/folds/sample; write the corpus",
    arg("--candidates", nargs="+", required=True, help="candidate tables", table="candidates"),
    arg("--scores", nargs="*", help="score tables (any order; matched by corpus/shard)"),
    arg("--heldout", help="held-out table whose pairs are left out", table="heldout"),
    arg("--name", default="default", help="the release's name (in the datasheet)"),
    out("--parquet", "output corpus (Parquet)"), out("--tsv", "output corpus (TSV)"),
    out("--json", "output summary with counts per step"),
    out("--paranmt", required=False, help="also write the corpus in the ParaNMT-50M layout (reference \\t "
        "paraphrase \\t score; the score column is filters.select.paranmt_score)"),
    settings="filters.select",
    example='paramill filters select --candidates work/candidates/grammar/shard-00000.parquet --scores scores.parquet --settings \'{"bounds": {"overlap_1": [0.1, 0.7]}}\' --parquet out/corpus.parquet --tsv out/corpus.tsv --json out/selection.json')
def select(args: argparse.Namespace) -> int | str:
    from paramill.filters.select import SelectSettings, select
    summary = select(args.candidates, args.scores or [], args.parquet, args.tsv, args.json,
                     SelectSettings.from_dict(args.settings), heldout=args.heldout,
                     name=args.name, rule=args.rule, out_paranmt=args.paranmt,
                     threads=device.threads())
    steps = ", ".join(f"{r['step']}: {r['pairs']}" for r in summary["steps"])
    return f"{args.name}: {summary['rows']} pairs ({steps})"


@group.verb(
    "analyse", "stats, annotation sample, plots and datasheet of a corpus",
    arg("--candidates", nargs="+", required=True, help="candidate tables", table="candidates"),
    arg("--scores", nargs="*", help="score tables"),
    need("--corpus", "corpus.parquet from `paramill filters select`"),
    need("--summary", "selection.json from `paramill filters select`"),
    arg("--name", default="default", help="the release's name"),
    arg("--sources", type=json_of(SOURCES, "the release's sources"), metavar="JSON", help='{"corpora": config bitext.corpora, '
        '"pairs": config pairs.corpora, "translate": config nmt.translate} (or "generation": '
        'the text itself)'),
    out("--out-dir", "output folder"), settings="filters.analysis",
    example='paramill filters analyse --candidates work/candidates/grammar/shard-00000.parquet --corpus out/corpus.parquet --summary out/selection.json --out-dir out')
def analyse(args: argparse.Namespace) -> int | str:
    from paramill.filters.analysis import AnalysisSettings
    from paramill.filters.release import write_release_docs
    from paramill.filters.analysis import score_histograms
    stats = write_release_docs(args.name, args.candidates, args.scores or [], args.corpus,
                               args.summary, args.out_dir, AnalysisSettings.from_dict(args.settings),
                               sources=args.sources, plot=score_histograms, rule=args.rule)
    return f"{args.name}: {stats['corpus']}"


@group.verb(
    "by-method", "score distributions per candidate method (MT system, corpus format, beam...)",
    arg("--candidates", nargs="+", required=True, help="candidate tables", table="candidates"),
    arg("--scores", nargs="*", help="score tables (any order; matched by corpus/shard)"),
    out("--tsv", "output TSV: method, candidates, each score's mean"),
    out("--json", "output JSON: count, mean and std per method and score"),
    out("--png", "output box plots, one panel per score column"),
    arg("--sample", type=int, default=5000,
        help="values per method and score kept for the box plots (seeded reservoir)"),
    description="Before selection: how each method's candidates score under every filter, "
                "e.g. the MT systems of a `references` pair corpus side by side.",
    example='paramill filters by-method --candidates work/pairs/mt/shard-00000.parquet --tsv by-method.tsv --json by-method.json --png by-method.png')
def by_method(args: argparse.Namespace) -> int | str:
    from paramill.filters.methods import by_method
    result = by_method(args.candidates, args.scores or [], args.tsv, args.json, args.png,
                       sample=args.sample, rule=args.rule)
    return f"{len(result['methods'])} methods, {len(result['columns'])} score columns"
