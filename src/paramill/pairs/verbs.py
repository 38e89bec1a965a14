"""``paramill pairs``: read paraphrase-pair corpora into candidate shards."""

import argparse

from paramill.run.commands import Group, arg, json_arg, need, out

group = Group("pairs", "read paraphrase-pair corpora (ParaNMT, ParaBank 2, MT outputs, ...)", docs="methods/cleaning.md")


@group.verb(
    "ingest", "read, clean and deduplicate a pair corpus into candidate shards",
    need("--corpus", "corpus name (part of every pair_id)"),
    arg("--spec", type=json_arg, required=True, metavar="JSON",
        help="the corpus as in config pairs.corpora.NAME: format, path or reference/hypotheses, "
             "columns, header, method, votes"),
    out("--out", "output directory (created atomically): shard-*.parquet, rejected.parquet, "
                  "keys.parquet, stats.json"),
    arg("--prior-keys", nargs="*", default=[],
        help="keys.parquet of pair corpora configured earlier (their pairs win duplicates)"),
    description="Stream a ParaNMT-50M, ParaBank 2, TSV, Parquet, MT-outputs-with-references or "
                "Twitter URL corpus (plain, gz, xz, zst, bz2) into candidate tables with the "
                "back-translation contract, applying the English-side cleaning rules and exact "
                "deduplication. Every candidate is kept or in rejected.parquet with a reason.",
    settings={"clean": "pairs.clean", "settings": "pairs.ingest"}, launch=True,
    memory=("pairs.clean.bucket_rows", "pairs.ingest.batch_rows"),
    example='paramill pairs ingest --corpus mt --spec \'{"format": "references", "reference": "refs.en", "hypotheses": ["hyp.*.en"]}\' --out work/pairs/mt')
def ingest(args: argparse.Namespace) -> int | str:
    from paramill.pairs.ingest import PairCleanSettings, PairIngestSettings, ingest_pairs
    from paramill.pairs.readers import PairCorpusSpec
    spec = PairCorpusSpec.from_dict(args.corpus, args.spec)
    stats = ingest_pairs(spec, args.out, PairCleanSettings.from_dict(args.clean),
                         PairIngestSettings.from_dict(args.settings), args.prior_keys,
                         rule=args.rule)
    return (f"{spec.name}: {stats['lines_in']} lines, {stats['rows_in']} candidates, "
            f"{stats['kept']} kept in {len(stats['shards'])} shards, rejected "
            f"{stats['rejected'] or 0}")


@group.verb(
    "stats", "gather the pair corpora's counts into one file",
    arg("corpora", nargs="+", help="corpus directories written by `paramill pairs ingest`"),
    out("--json", "output JSON summary"),
    out("--tsv", "output TSV: corpus, method, outcome (kept or a reason), candidates"),
    example='paramill pairs stats work/pairs/mt --json results/pairs/stats.json --tsv results/pairs/stats.tsv')
def stats(args: argparse.Namespace) -> int | str:
    from paramill.pairs.stats import write_stats
    summary = write_stats(args.corpora, args.json, args.tsv, rule=args.rule)
    return (f"{summary['rows_in']} candidates in, {summary['kept']} kept, "
            f"{summary['rejected_total']} rejected")
