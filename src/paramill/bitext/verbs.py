"""``paramill bitext``: ingest, clean, stats."""

import argparse

from paramill.run.commands import Group, arg, json_arg, need, out

group = Group("bitext", "read, clean and count Czech-English bitext", docs="methods/cleaning.md")


@group.verb(
    "ingest", "read a bitext corpus into Parquet shards",
    need("--corpus", "corpus name (part of every pair_id)"),
    arg("--spec", type=json_arg, required=True, metavar="JSON",
        help="the corpus as in config bitext.corpora.NAME: format, path or cs/en, columns, header"),
    out("--out", "output directory (created atomically)"),
    description="Stream a CzEng 1.x, CzEng 2.0-style TSV, Moses pair or TSV corpus (plain, gz, "
                "xz, zst, bz2) into Parquet shards of the bitext schema. Lines that cannot be "
                "read go to rejected.parquet with a reason.",
    settings="bitext.ingest", launch=True, memory=("bitext.ingest.batch_rows",),
    example='paramill bitext ingest --corpus mine --spec \'{"format": "moses", "cs": "data/sample/bitext/grammar.cs.gz", "en": "data/sample/bitext/grammar.en.gz"}\' --out work/ingest/mine')
def ingest(args: argparse.Namespace) -> int | str:
    from paramill.bitext.ingest import IngestSettings, ingest
    from paramill.bitext.readers import CorpusSpec
    corpus = CorpusSpec.from_dict(args.corpus, args.spec)
    stats = ingest(corpus, args.out, IngestSettings.from_dict(args.settings), rule=args.rule)
    return (f"{corpus.name}: {stats['rows_in']} lines, {stats['rows_out']} pairs in "
            f"{len(stats['shards'])} shards, rejected {stats['rejected'] or 0}")


@group.verb(
    "clean", "clean and deduplicate an ingested corpus", need("--corpus", "corpus name"),
    need("--ingested", "directory written by `paramill bitext ingest`"),
    out("--shards", "output directory of cleaned shards"),
    out("--rejected", "output Parquet of rejected rows"),
    out("--keys", "output Parquet of kept pairs' dedup keys"),
    out("--stats", "output JSON of counts"), arg("--prior-keys", nargs="*", default=[],
        help="key files of earlier corpora (their pairs win duplicates)"),
    description="ParaBank 2 cleaning (punctuation normalisation, latin-1/latin-2, empty/"
                "identical sides, length bounds and ratio), the Czech side's language, and "
                "exact dedup against this corpus and earlier ones. With `paramill --threads "
                "N` the rules run on N worker processes.",
    settings={"settings": "bitext.clean", "ingest_settings": "bitext.ingest"}, launch=True,
    memory=("bitext.clean.bucket_rows", "bitext.ingest.batch_rows"),
    example='paramill bitext clean --corpus mine --ingested work/ingest/mine --shards work/shards/mine --rejected work/clean/mine.rejected.parquet --keys work/clean/mine.keys.parquet --stats work/clean/mine.stats.json')
def clean(args: argparse.Namespace) -> int | str:
    from paramill.bitext.clean import CleanSettings, clean
    from paramill.run.device import threads
    ingest = args.ingest_settings
    stats = clean(args.corpus, args.ingested, args.shards, args.rejected, args.keys, args.stats,
                  prior_key_files=args.prior_keys, settings=CleanSettings.from_dict(args.settings),
                  shard_size=ingest["shard_size"], batch_rows=ingest["batch_rows"], rule=args.rule,
                  threads=threads())
    return (f"{args.corpus}: {stats['rows_in']} in, {stats['kept']} kept, "
            f"{stats['rejected_total']} rejected {stats['rejected']}")


@group.verb(
    "stats", "gather per-corpus clean stats into one file",
    arg("stats", nargs="+", help="per-corpus stats JSON files from `paramill bitext clean`"),
    out("--json", "output JSON summary"),
    out("--tsv", "output TSV: corpus, shard, outcome, rows"),
    example='paramill bitext stats work/clean/mine.stats.json --json results/bitext/stats.json --tsv results/bitext/outcomes.tsv')
def stats(args: argparse.Namespace) -> int | str:
    from paramill.bitext.stats import write_stats
    summary = write_stats(args.stats, args.json, args.tsv, rule=args.rule)
    return (f"{summary['rows_in']} in, {summary['kept']} kept in {summary['shards']} "
            f"shards, {summary['rejected_total']} rejected")
