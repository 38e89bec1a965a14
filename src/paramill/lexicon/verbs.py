"""``paramill lexicon``: the paraphrase lexicon and its SimLex evaluation."""

import argparse

from paramill.run.commands import Group, arg, need, out

group = Group("lexicon", "paraphrase lexicon with cross-sentence and adjusted PMI", docs="methods/lexicon.md")


@group.verb(
    "build", "count word pairs in a corpus and score them",
    arg("corpus", nargs="+", help="corpus Parquet files (s1, s2[, parascore])"),
    out("--tsv", "lexicon.tsv: u, v, count, pmi_cross, pmi_adjusted"),
    out("--neighbours", "top-k neighbours of each word (TSV)"),
    out("--stats", "output counts (JSON)"),
    arg("--spill-dir", help="where the partitioned counts go while they are summed (removed at "
                            "the end; default: beside --tsv)"),
    description="ParaNMT appendix A.1: pairs with parascore >= min_parascore and both sides <= "
                "max_tokens; counts partitioned on disk.",
    settings="lexicon", launch=True,
    memory=("lexicon.chunk_pairs", "lexicon.spill_rows", "lexicon.partitions"),
    example='paramill lexicon build results/corpus/default/corpus.parquet --tsv lexicon.tsv --neighbours neighbours.tsv --stats stats.json')
def build(args: argparse.Namespace) -> int | str:
    from paramill.lexicon.pmi import LexiconSettings, count_and_score
    stats = count_and_score(args.corpus, args.tsv, args.neighbours, args.stats,
                            LexiconSettings.from_dict(args.settings), rule=args.rule,
                            spill_dir=args.spill_dir)
    return f"{stats}"


@group.verb(
    "simlex", "Spearman of the lexicon's scores on SimLex-999",
    need("--lexicon", "lexicon.tsv from `paramill lexicon build`"),
    need("--simlex", "SimLex-999.txt (or a file in its format)"), out("--tsv", "output table"),
    out("--json", "output summary"),
    example='paramill lexicon simlex --lexicon lexicon.tsv --simlex SimLex-999.txt --tsv simlex.tsv --json simlex.json')
def simlex(args: argparse.Namespace) -> int | str:
    from paramill.lexicon.simlex import evaluate
    result = evaluate(args.lexicon, args.simlex, args.tsv, args.json, rule=args.rule)
    return f"{result['results']}"
