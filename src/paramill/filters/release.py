"""The released corpus's companions: ``stats.json``, ``annotation.tsv``, the score
histograms, ``datasheet.md`` (sources, filters and bounds, counts at each step, stats,
licence) and ``README.md``, a Hugging Face dataset card with the same facts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from paramill import __version__
from paramill.filters.analysis import AnalysisSettings, analyse, annotation_sample
from paramill.run.plan import DISTINCT_SHARE
from paramill.filters.scored import iter_scored
from paramill.run.job import output_job
from paramill.io.tableread import parquet_rows
from paramill.io.outputs import sha256_file
from paramill.io.jsonfiles import write_json
from paramill.provenance import Run, code_version
from paramill.io.jsonfiles import COUNT, TEXT, read_json_as

LICENCE = """\
The pairs are derived from the bitext listed under Sources and inherit its terms. Data
derived from CzEng (any version) inherits CzEng's licence: CzEng is distributed by ÚFAL,
Charles University, for non-commercial research and educational use under its licence
agreement; redistribution of CzEng-derived text requires that agreement's permission.
Check the licence of every other source before sharing this corpus."""


def generation_text(translate: dict[str, Any] | None) -> str | None:
    """How the candidates were made, from the ``nmt.translate`` settings."""
    if not translate:
        return None
    return (f"back-translation of the Czech side, CTranslate2 {translate['method']} search "
            f"(beam {translate['beam_size']}, {translate['n_best']}-best)")


def _pair_files(spec: dict[str, Any]) -> str:
    """A pair corpus's files as configured (patterns unexpanded)."""
    if spec.get("path"):
        return spec["path"]
    hyps = spec.get("hypotheses") or []
    return " ".join([spec.get("reference", ""), *(hyps.values() if isinstance(hyps, dict) else hyps)])


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def datasheet(name: str, selection: dict[str, Any], stats: dict[str, Any],
              sources: dict[str, Any]) -> str:
    settings = selection["settings"]
    code = code_version()
    out = [f"# Paraphrase corpus `{name}`", "",
           f"Made by paramill {__version__} (commit {code.get('commit') or 'unknown'}"
           f"{', modified' if code.get('dirty') else ''}). {selection['rows']} pairs. When: "
           "`datasheet.md.prov.json` (no date here, so a rebuild gives the same bytes).", "",
           "Files: `corpus.tsv` (reference `\\t` paraphrase, one pair a line, no quoting), "
           "`corpus.paranmt.txt` (the ParaNMT-50M layout, reference `\\t` paraphrase `\\t` "
           f"score `{selection.get('paranmt_score', '?')}`; `pairs.corpora` reads it back), "
           "`corpus.parquet` (the same pairs with `pair_id` back to the source file and line, "
           "and every filter score), `stats.json`, `annotation.tsv` (pairs per paraphrase-score "
           "range for human judgement), `scores.png`, `README.md` (a Hugging Face dataset card "
           "with these facts). Each has a `.prov.json` provenance record.",
           "", "## Sources", ""]
    corpora, pairs = sources.get("corpora", {}), sources.get("pairs", {})
    if corpora:
        out += ["Bitext, back-translated:", "",
                _table([{"corpus": k, **{f: v.get(f) for f in ("format", "path", "cs", "en")}}
                        for k, v in corpora.items()], ["corpus", "format", "path", "cs", "en"])]
    if pairs:
        out += [*([""] if corpora else []), "Pair corpora, candidates as the files give them "
                "(no translation; each keeps its own licence):", "",
                _table([{"corpus": k, "format": v.get("format"), "files": _pair_files(v)}
                        for k, v in pairs.items()], ["corpus", "format", "files"])]
    if not corpora and not pairs:
        out.append("(not given)")
    generation = sources.get("generation") or (generation_text(sources.get("translate"))
                                               if corpora or not pairs else None)
    if generation:
        out += ["", f"Candidates: {generation}"]
    out += ["", "## Filters and bounds", "",
            "Every candidate was scored by each filter; selection applied these bounds "
            "(inclusive; – is open).", ""]
    bounds = settings.get("bounds", {})
    out.append(_table([{"score": c, "direction": d,
                        "lower": (bounds.get(c) or [None, None])[0],
                        "upper": (bounds.get(c) or [None, None])[1]}
                       for c, d in selection["score_columns"].items()],
                      ["score", "direction", "lower", "upper"]))
    out += ["", f"Both sides at most {settings['max_tokens'] or '∞'} tokens; identical pairs "
            f"{'dropped' if settings['drop_identical'] else 'kept'}; held-out pairs "
            f"{'excluded' if settings['exclude_heldout'] else 'kept'}"
            + ("; exact duplicates dropped" if settings.get("dedup") else "")
            + (f"; near-duplicates dropped (Jaccard similarity of word {settings['near_ngram']}-grams "
               f"at least {settings['near_duplicates']} to an earlier kept pair)"
               if settings.get("near_duplicates") else "")
            + (f"; ranked by `{settings['rank_by']}` into {settings['n_folds']} folds, kept "
               f"{settings['folds']}" if settings.get("rank_by") else "")
            + (f"; sample of {settings['size']} (seed {settings['seed']})" if settings["size"] else "")
            + ".", "", "## Counts at each step", ""]
    out.append(_table([{"step": r["step"], "pairs left": r["pairs"]} for r in selection["steps"]],
                      ["step", "pairs left"]))
    corpus = stats.get("corpus", {})
    repeated = stats.get("paraphrases") or {}
    if repeated.get("pairs"):
        out += ["", f"Paraphrases: {repeated['distinct']:,} distinct of {repeated['pairs']:,} "
                f"({repeated['distinct_share']:.1%}); the most repeated, "
                f"{repeated['most_repeated_count']:,} times: \"{repeated['most_repeated']}\"."]
        if repeated.get("degenerate"):
            out += ["", "**Degenerate candidates**: fewer than "
                    f"{DISTINCT_SHARE:.0%} of the paraphrases are distinct. The translation "
                    "models are likely too small or too little trained for this corpus (a trial "
                    "config's are): train them larger and longer before using the corpus."]
    out += ["", "## Statistics (ParaNMT Table 1)", "",
            _table([{"measure": k, "value": v} for k, v in corpus.items()], ["measure", "value"]),
            "", f"IDF from {stats.get('idf_corpus')}."]
    if stats.get("parascore_ranges"):
        out += ["", "## Pairs per paraphrase-score range, all scored candidates (ParaNMT Table 3)", "",
                _table(stats["parascore_ranges"], ["range", "pairs", "trigram_overlap_mean",
                                                   "trigram_overlap_std"])]
    if stats.get("references_vs_translations"):
        out += ["", f"## References vs translations, sample of {stats['sample']} (Wieting 2017 Table 9)", "",
                _table([{"measure": k, **v} for k, v in stats["references_vs_translations"].items()],
                       ["measure", "references", "translations", "difference"])]
    if stats.get("classifier_correlations"):
        out += ["", "## Spearman ×100 with the classifier's P(reference) (Wieting 2017 Table 10)", "",
                _table([{"measure": k, "rho": v} for k, v in stats["classifier_correlations"].items()],
                       ["measure", "rho"])]
    out += ["", "## Licence", "", LICENCE, ""]
    return "\n".join(out)


SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                   (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
                   (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"))
CZENG_LINK = "https://ufal.mff.cuni.cz/czeng"


def size_category(rows: int) -> str:
    """The Hugging Face Hub's size category of a dataset of ``rows`` rows."""
    return next((label for limit, label in SIZE_CATEGORIES if rows < limit), "1B<n<10B")


def czeng_derived(sources: dict[str, Any]) -> bool:
    """Whether any bitext source is CzEng (by format or by name/path)."""
    return any("czeng" in " ".join(str(v.get(k) or "") for k in ("format", "path", "cs", "en")).lower()
               or "czeng" in name.lower() for name, v in sources.get("corpora", {}).items())


def dataset_card(name: str, selection: dict[str, Any], sources: dict[str, Any],
                 digest: str | None) -> str:
    """A Hugging Face dataset card (README.md with the Hub's YAML header) for a release:
    the facts of its datasheet, ``configs`` pointing at ``corpus.parquet``. ``digest``: the
    sha256 of ``corpus.parquet``, which names the build; no date, so the same inputs give
    the same bytes on any day (a build date lives in the ``.prov.json`` records)."""
    import yaml

    rows = selection["rows"]
    header: dict[str, Any] = {"pretty_name": f"paramill paraphrase corpus {name}",
                              "language": ["en"]}
    if czeng_derived(sources):
        header.update(license="other", license_name="czeng", license_link=CZENG_LINK)
    else:
        header["license"] = "unknown"
    header.update({
        "task_categories": ["sentence-similarity", "text-generation"],
        "tags": ["paraphrase", "paraphrase-mining", "back-translation", "paramill"],
        "size_categories": [size_category(rows)],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": "train", "path": "corpus.parquet"}]}],
    })
    corpora, pairs = sources.get("corpora", {}), sources.get("pairs", {})
    made_from = ([f"bitext `{k}` ({v.get('format')}), back-translated" for k, v in corpora.items()]
                 + [f"pair corpus `{k}` ({v.get('format')})" for k, v in pairs.items()])
    settings = selection["settings"]
    bounds = {c: b for c, b in (settings.get("bounds") or {}).items() if b}
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# paramill paraphrase corpus `{name}`", "",
             f"{rows:,} English sentential paraphrase pairs (`s1`, `s2`) made by paramill "
             f"{__version__}" + (f" (`corpus.parquet` sha256 {digest})" if digest else "")
             + ". Load it with",
             "", "```python", "from datasets import load_dataset",
             'pairs = load_dataset(".")["train"]  # this card\'s configs: corpus.parquet',
             '# or: load_dataset("parquet", data_files="corpus.parquet")["train"]', "```",
             "", "## Sources", ""]
    lines += [f"- {m}" for m in made_from] or ["- (not given)"]
    lines += ["", "## Filtering", "",
              f"Every candidate pair was scored by: {', '.join(f'`{c}`' for c in selection['score_columns'])}"
              f" (all scores are columns of `corpus.parquet`). Bounds applied: "
              + (", ".join(f"`{c}` in [{'–' if b[0] is None else b[0]}, {'–' if b[1] is None else b[1]}]"
                           for c, b in bounds.items()) or "none") + ". Steps and counts: "
              + "; ".join(f"{r['step']}: {r['pairs']:,}" for r in selection["steps"]) + ".",
              "", "`pair_id` traces every pair to its source file and line; `datasheet.md` has "
              "the statistics, and each file's `.prov.json` the full provenance.",
              "", "## Licence", "", LICENCE, ""]
    return "\n".join(lines)


_BOUND = {"type": ["number", "null"]}
_WHOLE = {"type": "integer"}
#: `filters select --json`, as far as the release's documents read it
SELECTION = {"type": "object", "required": ["rows", "score_columns", "steps", "settings"], "properties": {
    "rows": COUNT, "paranmt_score": TEXT,
    "score_columns": {"type": "object", "additionalProperties": TEXT},
    "steps": {"type": "array", "items": {"type": "object", "required": ["step", "pairs"],
                                         "properties": {"step": TEXT, "pairs": COUNT}}},
    "settings": {"type": "object",
                 "required": ["max_tokens", "drop_identical", "exclude_heldout", "size"],
                 "properties": {
                     "bounds": {"type": "object", "additionalProperties": {
                         "type": ["array", "null"], "items": _BOUND, "minItems": 2, "maxItems": 2}},
                     "max_tokens": {"type": ["integer", "null"]}, "drop_identical": {"type": "boolean"},
                     "exclude_heldout": {"type": "boolean"}, "rank_by": {"type": ["string", "null"]},
                     "n_folds": _WHOLE, "folds": {"type": "array", "items": _WHOLE},
                     "size": COUNT, "seed": _WHOLE}}}}


def write_release_docs(name: str, candidate_files: list[str | Path], score_files: list[str | Path],
                       corpus: str | Path, selection_json: str | Path, out_dir: str | Path,
                       settings: AnalysisSettings = AnalysisSettings(),
                       sources: dict[str, Any] | None = None,
                       plot: Callable[[pl.DataFrame, list[str], Path], int] | None = None,
                       rule: str = "corpus_analysis") -> dict[str, Any]:
    """Write stats.json, annotation.tsv, datasheet.md, README.md (the dataset card) and
    scores.png via ``plot``."""
    out_dir = Path(out_dir)
    selection = read_json_as(selection_json, SELECTION, "a selection summary (`paramill filters select --json`)")
    inputs = [corpus, selection_json, *candidate_files, *score_files]
    if settings.idf_corpus:
        inputs.append(settings.idf_corpus)
    run = Run(rule=rule, params={"selection": name, **settings.__dict__}, inputs=inputs)
    total = parquet_rows(candidate_files)
    batches = (f for _, f in iter_scored(candidate_files, score_files))
    stats, sample = analyse(batches, total, corpus, settings)
    annotation = annotation_sample(sample, list(settings.parascore_edges), settings.annotate,
                                   settings.seed)
    names = (["stats.json", "annotation.tsv", "datasheet.md", "README.md"]
             + (["scores.png"] if plot else []))
    finals = [out_dir / n for n in names]
    with output_job(run, *finals, rows_in=total, each=True) as job:
        files = job.paths
        write_json(files[0], stats)
        annotation.write_csv(files[1], separator="\t", quote_style="never")
        files[2].write_text(datasheet(name, selection, stats, sources or {}), encoding="utf-8")
        files[3].write_text(dataset_card(name, selection, sources or {}, sha256_file(corpus)),
                            encoding="utf-8")
        if plot:
            plot(sample, list(selection["score_columns"]), files[4])
        job.rows_out = selection["rows"]
    return stats
