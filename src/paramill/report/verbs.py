"""``paramill report``: figures and tables for the Snakemake report."""

import argparse

from paramill.run.commands import Group, arg, need, out

group = Group("report", "figures and tables for the Snakemake report", docs="outputs.md")


@group.verb(
    "outcomes", "plot rows kept/rejected per reason per input shard",
    need("--tsv", "outcomes TSV from `paramill bitext stats`"), out("--out", "output PNG"),
    example='paramill report outcomes --tsv results/bitext/outcomes.tsv --out outcomes.png')
def outcomes(args: argparse.Namespace) -> int | str:
    from paramill.report.plots import outcomes_plot
    bars = outcomes_plot(args.tsv, args.out, rule=args.rule)
    return f"{bars} bars in {args.out}"


@group.verb(
    "provenance", "one table of the provenance records of outputs",
    arg("outputs", nargs="*", help="outputs whose .prov.json to summarise"),
    arg("--under", action="append", default=[], metavar="FOLDER",
        help="also every output with a .prov.json anywhere under FOLDER (repeatable)"),
    out("--html", "output HTML table"), out("--tsv", "output TSV table"),
    out("--glance", required=False, help="also the report's first page (HTML): what ran, on what, what came out"),
    arg("--results", default="results", help="the results folder (what came out, for --glance)"),
    out("--pages", required=False, help="also one HTML page of the --render files (tables, JSON, datasheets)"),
    arg("--render", nargs="*", default=[], metavar="FILE",
        help="result files to render as pages: .tsv, .json and .md (others are skipped)"),
    example='paramill report provenance --under results --html provenance.html --tsv provenance.tsv')
def provenance(args: argparse.Namespace) -> int | str:
    from paramill.report.recordtable import recorded_outputs, write_summary
    outputs = [*args.outputs, *recorded_outputs(args.under, exclude=[
        p for p in (args.html, args.tsv, args.glance, args.pages) if p])]
    if not outputs:
        raise ValueError("no provenance records: give outputs or --under FOLDER")
    n = write_summary(outputs, args.html, args.tsv, rule=args.rule, glance_path=args.glance,
                      results=args.results, pages=args.pages, render_files=args.render)
    return f"{n} provenance records in {args.html}"
