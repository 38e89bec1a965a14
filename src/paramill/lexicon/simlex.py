"""SimLex-999 evaluation of a lexicon: Spearman's rho x100 of each score against the gold
similarity, an unseen pair scoring 0, both orderings (u, v) and (v, u) averaged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from paramill.formats import simlex as simlex_format
from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.provenance import Run


#: the columns of ``lexicon.tsv`` (``paramill lexicon build``) that the evaluation reads
LEXICON_COLUMNS = {"u": pl.String, "v": pl.String, "pmi_cross": pl.Float64, "pmi_adjusted": pl.Float64}


def read_lexicon(path: str | Path, words: set[str]) -> pl.DataFrame:
    """The rows of the lexicon ``path`` whose two words are both in ``words``. A file that is
    not such a lexicon (no header naming u, v, pmi_cross and pmi_adjusted; a score that is not
    a finite number) is an :class:`~paramill.errors.InputError` naming it: polars' own errors
    named no file, and a NaN score made the correlation NaN. So is a line of more or fewer
    fields than the header (a tab doubled or lost): polars, reading only the columns asked
    for, read such a line's count as its ``pmi_cross`` and left a missing score null."""
    from paramill.errors import InputError, first_line
    from paramill.formats.reading import strict_lines

    header = next(strict_lines(path), (1, ""))[1].split("\t")
    missing = [c for c in LEXICON_COLUMNS if c not in header]
    if missing:
        raise InputError(path, 1, f"not a lexicon from `paramill lexicon build`: its header has no "
                                  f"{', '.join(missing)} (it has {', '.join(header)[:120]})")
    fields = pl.all().exclude("row").is_null()
    short = pl.any_horizontal(fields) & ~pl.all_horizontal(fields)  # a blank line is no row
    try:  # every column parsed (no projection pushdown), so a line of extra fields is an error
        lex = (pl.scan_csv(path, separator="\t", quote_char=None, schema_overrides=LEXICON_COLUMNS,
                           row_index_name="row")
               .filter(short | (pl.col("u").is_in(words) & pl.col("v").is_in(words)))
               .collect(optimizations=pl.QueryOptFlags(projection_pushdown=False)))
    except (pl.exceptions.PolarsError, OSError) as exc:  # a row that does not parse
        why = (f"a line has more fields than the header's {len(header)} (a tab doubled?)"
               if "more fields" in str(exc) else first_line(exc))
        raise InputError(path, None, f"not a readable lexicon ({why})") from None
    broken = lex.filter(short)
    if broken.height:
        raise InputError(path, broken["row"][0] + 2, "not a readable lexicon: an empty field, or "
                         f"fewer fields than the header's {len(header)} (a tab lost?)")
    lex = lex.select(list(LEXICON_COLUMNS))
    bad = lex.filter(~pl.col("pmi_cross").is_finite() | ~pl.col("pmi_adjusted").is_finite())
    if bad.height:
        u, v = bad.row(0)[:2]
        raise InputError(path, None, f"the scores of {u!r} / {v!r} are not finite numbers")
    return lex


def evaluate(lexicon_tsv: str | Path, simlex: str | Path, out_tsv: str | Path, out_json: str | Path,
             rule: str = "lexicon_simlex") -> dict[str, Any]:
    from paramill.correlation import spearman

    run = Run(rule=rule, params={}, inputs=[lexicon_tsv, simlex])
    gold = simlex_format.read(simlex)
    wanted = {w for a, b, _ in gold for w in (a, b)}
    lex = read_lexicon(lexicon_tsv, wanted)
    scores = {(u, v): (c, a) for u, v, c, a in lex.select("u", "v", "pmi_cross", "pmi_adjusted").iter_rows()}
    rows, seen = [], 0
    results = []
    columns = {"pmi_cross": 0, "pmi_adjusted": 1}
    per_pair = []
    for a, b, g in gold:
        found = [scores.get((a, b)), scores.get((b, a))]
        if any(found):
            seen += 1
        per_pair.append((a, b, g, [sum((f[i] if f else 0.0) for f in found) / 2 for i in (0, 1)]))
    for name, i in columns.items():
        rho = spearman([g for _, _, g, _ in per_pair], [s[i] for *_, s in per_pair])
        results.append({"score": name, "spearman": round(100 * float(rho), 2) if rho == rho else None,
                        "pairs": len(gold), "seen": seen, "coverage": round(seen / len(gold), 4) if gold else 0.0})
        rows.append(results[-1])
    with output_job(run, out_tsv, out_json, rows_in=len(gold), each=True) as job:
        tsv, json_path = job.paths
        pl.DataFrame(rows).write_csv(tsv, separator="\t")
        write_json(json_path, {"simlex": str(simlex), "results": results})
        job.rows_out = len(results)
    return {"results": results}
