"""``paramill evaluate``: STS correlations, official archives, result tables."""

import argparse

from paramill.run.commands import Group, arg, json_of, need, out

group = Group("evaluate", "evaluate models", docs="methods/embeddings.md")


@group.verb(
    "sts", "STS correlations of an embedding model",
    need("--model", "a model from `paramill embed train`"),
    arg("--datasets", type=json_of({"type": "array", "items": {"type": "object"}},
                                   'a list of {"name","year","format","path"}'), required=True, metavar="JSON",
        help='list of {"name","year","format","path"} (as config evaluate.sts)'),
    out("--tsv", "output table"), out("--json", "output summary"),
    example='paramill evaluate sts --model work/embed/word/model.pt --datasets \'[{"name": "stsb", "year": "dev", "format": "stsbenchmark", "path": "data/sample/sts/sts-dev.csv"}]\' --tsv sts.tsv --json sts.json')
def sts(args: argparse.Namespace) -> int | str:
    from paramill.evaluate.sts import evaluate
    result = evaluate(args.model, args.datasets, args.tsv, args.json, rule=args.rule)
    if not result["datasets"]:
        return "no STS set given (config evaluate.sts names none): the table has no rows"
    # pairs without a usable gold score are said here too, not only in the table
    return "".join(f"\n  {r['dataset']:<24} {r['year']:<6} n={r['n']:<6} pearson={r['pearson']} "
                   f"spearman={r['spearman']}" + f" ({r['skipped']} pair{'s' * (r['skipped'] > 1)} "
                   "without a gold score skipped)" * bool(r["skipped"]) for r in result["datasets"])


@group.verb(
    "download", "fetch an official STS archive, check its sha256, unpack",
    arg("name", help="stsbenchmark | stscompanion | sts2017"), out("--out", "directory to create"),
    description="Archives with pinned sha256: stsbenchmark, stscompanion, sts2017. A download "
                "whose digest differs is refused.",
    example='paramill evaluate download stsbenchmark --out data/sts/stsbenchmark')
def download(args: argparse.Namespace) -> int | str:
    from paramill.evaluate.download import download
    result = download(args.name, args.out, rule=args.rule)
    return f"{args.name}: {len(result['files'])} files in {args.out}"


@group.verb(
    "sweep", "one table of the STS results of several models (the sweep's points)",
    arg("results", nargs="+", help="sts.json files (the model name is their folder)"),
    arg("--points", type=json_of({"type": "object", "additionalProperties": {"type": "object"}},
                                 "{model: settings}"), metavar="JSON",
        help="{model: settings} labelling the rows"),
    out("--out", "output TSV"),
    example='paramill evaluate sweep results/embed/sweep/*/sts.json --out results/embed/sweep.tsv')
def sweep(args: argparse.Namespace) -> int | str:
    from paramill.evaluate.sts import collect
    n = collect(args.results, args.points or {}, args.out, rule=args.rule)
    return f"{n} rows in {args.out}"
