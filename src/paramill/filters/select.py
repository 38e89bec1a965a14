"""Selection: bounds on score columns, a length limit, ParaNMT's ranking into folds, and a
seeded sample of a target size; writes the released corpus (TSV ``s1\\ts2`` and Parquet with
every score) and ``selection.json`` with the count left after each step.

Scoring never drops rows; selection does, in this order: held-out pairs (used to train the
filter models), identical pairs, the length limit (both sides at most ``max_tokens``), each
bound in config order (inclusive; ``null`` leaves a side open), duplicates (a pair whose
normalised reference and candidate already survived, in the order of the candidate files:
bitext corpora, then pair corpora, each in config order; this is where back-translated
candidates and pair corpora meet, so the release holds every pair once), near-duplicates (a
pair whose word shingles, both sentences together, have a Jaccard similarity of at least
``near_duplicates`` to an earlier kept pair's, in the same order: :mod:`paramill.text.neardup`),
the folds (pairs
ranked by ``rank_by`` cut into ``n_folds`` equal parts, fold 1 the best, kept folds in
``folds``), and a sample of ``size`` pairs chosen by a seeded hash of ``candidate_id`` (0
keeps all).

Memory: a batch of :data:`BATCH_ROWS` candidates and their scores at a time (the release's
Parquet is written in row groups of at most that); deduplication one hash bucket of
:data:`BUCKET_ROWS` keys and one byte a surviving pair (:mod:`paramill.dedup`), the
near-duplicates' band keys likewise and their shingles on disk; the fold cut
points need the ranked column of the surviving pairs (8 bytes a pair), the sample its hashes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.text.dedup import KEEP, KeySpill, drop_marked, pair_keys
from paramill.text.neardup import NearDuplicates
from paramill.filters.base import Direction
from paramill.filters.scored import (CANDIDATE_KEEP, batches, column_types, group_scores,
                                      scored_batches, shard_columns, shard_key)
from paramill.run.job import output_job
from paramill.io.tableread import scan_scratch
from paramill.io.tablewrite import TableWriter
from paramill.io.outputs import scratch_dir
from paramill.io.jsonfiles import write_json
from paramill.run.progress import progress
from paramill.provenance import Run
from paramill.io.tableread import read_frame
from paramill.config.typed import Settings, setting
from paramill.text import normalize_expr, token_count_expr

#: an inclusive [lower, upper] bound of a score column; None leaves that side open
Bound = Annotated[list[float | None], {"minItems": 2, "maxItems": 2}]

#: keys per hash bucket of the duplicate step (memory only; no effect on results)
BUCKET_ROWS = 2_000_000

#: rows a batch of the passes over the shards and parts (memory only; no effect on results)
BATCH_ROWS = 65_536



@dataclass(frozen=True)
class SelectSettings(Settings):
    bounds: dict[str, Bound] = setting(
        factory=dict, doc="Inclusive [lower, upper] per score column, null for open, e.g. "
        "{overlap_1: [0.1, 0.7], kenlm_ppl: [null, 200], classifier: [0.3, null]}.")
    max_tokens: int = setting(30, "Both sides at most this many tokens (0 = no limit; ParaNMT 30).",
                              minimum=0)
    drop_identical: bool = setting(True, "Drop pairs whose candidate equals the reference.")
    dedup: bool = setting(
        True, "Keep each pair once: drop a pair whose normalised reference and candidate "
        "already survived the steps before it in an earlier candidate (bitext corpora first, "
        "then pair corpora, each in config order), e.g. a pair corpus that repeats "
        "back-translated pairs.")
    near_duplicates: float = setting(
        0.7, "Drop a pair whose word shingles (both sentences together, order-free) have a "
        "Jaccard similarity of at least this to an earlier kept pair's (MinHash LSH, then the "
        "exact similarity; the first kept, in the order of dedup); 0: off.",
        minimum=0, maximum=1)
    near_ngram: int = setting(2, "Words per shingle of near_duplicates.", minimum=1, maximum=5)
    exclude_heldout: bool = setting(
        True, "Leave out the held-out pairs that trained the filter models.")
    rank_by: str | None = setting(
        None, "Rank by this score column into n_folds equal parts (ParaNMT: parascore); "
        "null = no folds.", pattern="^[a-z][a-z0-9_]*$")
    n_folds: int = setting(10, "Number of folds (tenths).", minimum=2)
    folds: list[Annotated[int, {"minimum": 1}]] = setting(
        factory=lambda: [1, 2], doc="Folds kept (1 = the best).", minItems=1)
    size: int = setting(0, 'Pairs to release: a seeded sample of the survivors (0: all). '
                           'ParaNMT-50M: 5,000,000.', minimum=0)
    seed: int = setting(13, "Seed of the sample.")
    paranmt_score: str = setting(
        "auto", "Score column written as the third column of corpus.paranmt.txt (the ParaNMT-50M "
        "layout `reference \\t paraphrase \\t score`, which `pairs.corpora` reads back); auto: "
        "the first of rank_by, parascore, given_score that the corpus has.",
        pattern="^[a-z][a-z0-9_]*$")


def check_columns(settings: SelectSettings, candidate_files: list[Path],
                  by_key: dict[str, list[Path]], name: str = "select") -> None:
    """A bound (or ``rank_by``) on a column some corpora do not have is an error naming the
    bound and those corpora (a filter skipped for pair corpora, a given score)."""
    wanted = [*settings.bounds, *([settings.rank_by] if settings.rank_by else [])]
    lacking: dict[str, set[str]] = defaultdict(set)
    for cand in candidate_files:
        have = shard_columns(cand, by_key.get(shard_key(cand), []))
        for column in wanted:
            if column not in have:
                lacking[column].add(Path(cand).parent.name)
    for column in wanted:
        if lacking[column]:
            what = "rank_by" if column == settings.rank_by and column not in settings.bounds \
                else f"bounds.{column}"
            raise ValueError(f"{name}.{what}: column {column} is missing for corpora "
                             f"{', '.join(sorted(lacking[column]))} (their candidates do not "
                             "have it, or its filter needs what they lack: the Czech side, the "
                             "decoder's cost); bound it in a release of the corpora that have it")


def _check_settings(settings: SelectSettings, directions: dict[str, Direction],
                    corpora: list[str] = ()) -> None:
    where = f" in corpora {', '.join(corpora)}" if corpora else ""
    hint = ("" if not corpora else " (dual_xent and cost are not run on pair corpora: they "
            "need the Czech side and the decoder's cost)")
    for name, bound in settings.bounds.items():
        if name not in directions:
            raise ValueError(f"select.bounds.{name}: no such score column{where}; scored: "
                             f"{sorted(directions)}{hint}")
        if not isinstance(bound, (list, tuple)) or len(bound) != 2:
            raise ValueError(f"select.bounds.{name}: give [lower, upper] (null for open), not {bound!r}")
    if settings.rank_by is not None and settings.rank_by not in directions:
        raise ValueError(f"select.rank_by: no such score column {settings.rank_by!r}{where}; "
                         f"scored: {sorted(directions)}{hint}")
    if settings.rank_by is not None and not all(1 <= f <= settings.n_folds for f in settings.folds):
        raise ValueError(f"select.folds must lie in 1..{settings.n_folds}, not {settings.folds}")


def _steps(settings: SelectSettings, heldout_ids: pl.Series | None) -> list[tuple[str, pl.Expr]]:
    steps: list[tuple[str, pl.Expr]] = []
    if heldout_ids is not None:
        steps.append(("heldout", ~pl.col("pair_id").is_in(heldout_ids.implode())))
    if settings.drop_identical:
        steps.append(("identical", pl.col("en_ref") != pl.col("candidate")))
    if settings.max_tokens:
        steps.append((f"max_tokens {settings.max_tokens}",
                      (token_count_expr(pl.col("en_ref")) <= settings.max_tokens)
                      & (token_count_expr(pl.col("candidate")) <= settings.max_tokens)))
    for name, (lo, hi) in settings.bounds.items():
        expr = pl.lit(True)
        if lo is not None:
            expr = expr & (pl.col(name) >= lo)
        if hi is not None:
            expr = expr & (pl.col(name) <= hi)
        label = f"{name} in [{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        steps.append((label, expr.fill_null(False)))
    return steps


def dedup_keys(frame: pl.DataFrame) -> np.ndarray:
    """Keys of the normalised ``(en_ref, candidate)`` of each row (punctuation and spaces as
    the cleaning rules normalise them, so a back-translation and a pair corpus's copy of the
    same pair meet)."""
    normal = frame.select(normalize_expr(pl.col("en_ref")).alias("r"),
                          normalize_expr(pl.col("candidate")).alias("c"))
    return pair_keys(normal["r"], normal["c"])


def fold_cuts(parts: list[Path], column: str, n_folds: int) -> list[float]:
    qs = [i / n_folds for i in range(1, n_folds)]
    row = (scan_scratch(parts).select([pl.col(column).quantile(q, "linear").alias(str(q)) for q in qs])
           .collect().row(0))
    return [float("nan") if v is None else float(v) for v in row]


def fold_expr(column: str, cuts: list[float], direction: Direction) -> pl.Expr:
    """Fold 1..n of each row: 1 holds the best tenth (highest, or lowest when lower is better)."""
    bucket = pl.lit(0, dtype=pl.Int32)
    for cut in cuts:
        bucket = bucket + (pl.col(column) > cut).cast(pl.Int32)
    n = len(cuts) + 1
    return (pl.lit(n, dtype=pl.Int32) - bucket) if direction != Direction.LOWER else bucket + 1


def paranmt_column(settings: SelectSettings, directions: dict[str, Direction],
                   where: str = "filters.select") -> str:
    """The score column of the ParaNMT-layout export."""
    if settings.paranmt_score != "auto":
        if settings.paranmt_score not in directions:
            raise ValueError(f"{where}.paranmt_score: no such score column "
                             f"{settings.paranmt_score!r}; scored: {sorted(directions)}")
        return settings.paranmt_score
    for column in (settings.rank_by, "parascore", "given_score"):
        if column and column in directions:
            return column
    raise ValueError(f"{where}.paranmt_score: corpus.paranmt.txt needs a score and the corpus "
                     f"has none of rank_by, parascore, given_score (scored: {sorted(directions)});"
                     " enable the parascore filter or name a score column")


def select(candidate_files: list[str | Path], score_files: list[str | Path],
           out_parquet: str | Path, out_tsv: str | Path, out_json: str | Path,
           settings: SelectSettings = SelectSettings(), heldout: str | Path | None = None,
           name: str = "default", rule: str = "select",
           out_paranmt: str | Path | None = None, threads: int = 1) -> dict[str, Any]:
    """Select the release; ``out_paranmt`` also writes it in the ParaNMT-50M layout.

    Pass 1 (:func:`_filter_shards`) applies the per-row steps shard by shard and
    deduplicates; then the rank folds and the sample are fixed (:func:`_fold_and_sample`);
    pass 2 (:func:`_write_release`) writes the survivors in shard order."""
    candidate_files = [Path(p) for p in candidate_files]
    by_key, directions = group_scores(candidate_files, score_files)
    corpora = sorted({Path(c).parent.name for c in candidate_files})
    _check_settings(settings, directions, corpora)
    where = "filters.select" if name == "default" else f"filters.releases.{name}"
    check_columns(settings, candidate_files, by_key, where)
    export = paranmt_column(settings, directions, where) if out_paranmt else None
    inputs = [*candidate_files, *score_files, *([heldout] if heldout else [])]
    run = Run(rule=rule, params={"selection": name, **asdict(settings)}, inputs=inputs)
    heldout_ids = None
    if heldout is not None and settings.exclude_heldout:
        heldout_ids = read_frame(heldout, ["pair_id"]).get_column("pair_id")
    out_parquet = Path(out_parquet)
    out_parquet.parent.mkdir(parents=True, exist_ok=True)
    with scratch_dir(out_parquet.parent, "select-") as work:
        parts, counts = _filter_shards(candidate_files, score_files, by_key, directions, settings,
                                       heldout_ids, work, name, threads)
        fold, threshold = _fold_and_sample(parts, settings, directions, counts)
        if not list(counts.values())[-1]:
            raise nothing_left(counts, where)
        finals = [out_parquet, Path(out_tsv), Path(out_json),
                  *([Path(out_paranmt)] if out_paranmt else [])]
        with output_job(run, *finals, rows_in=counts["candidates"], each=True) as job:
            files = job.paths
            n_out = _write_release(parts, files, fold, threshold, settings, directions, export)
            if settings.size:
                counts[f"sample of {settings.size} (seed {settings.seed})"] = n_out
            steps_out = [{"step": k, "pairs": v} for k, v in counts.items()]  # in order
            summary = {"selection": name, "settings": asdict(settings), "steps": steps_out,
                       "rows": n_out, "score_columns": {c: d.value for c, d in directions.items()},
                       "shards": len(candidate_files)}
            if export:
                summary["paranmt_score"] = export
            write_json(files[2], summary)
            job.rows_out, job.extra = n_out, {"steps": steps_out}
    return summary


def nothing_left(counts: dict[str, int], where: str) -> ValueError:
    """The error of a selection that left no pair: the step that took the last ones (``counts``:
    pairs left after each step, in order) and the setting to change."""
    steps = list(counts.items())
    if not steps[0][1]:
        return ValueError(f"{where}: no candidates to select from: the corpora's stats say why "
                          "every row was rejected")
    i = next(i for i in range(1, len(steps)) if not steps[i][1])
    step = steps[i][0]
    setting = {"heldout": "filters.heldout.size or filters.heldout.max_share (pairs held out "
                          f"for the filters' models), or {where}.exclude_heldout",
               "identical": f"{where}.drop_identical", "duplicates": f"{where}.dedup",
               "near_duplicates": f"{where}.near_duplicates"}.get(step) \
        or next((f"{where}.{key}" for prefix, key in (("max_tokens", "max_tokens"),
                 ("folds", "folds or the ranking")) if step.startswith(prefix)), None) \
        or f"{where}.bounds.{step.split(' in ')[0]}"
    return ValueError(f"{where}: the selection left no pair: step {step!r} took the last "
                      f"{steps[i - 1][1]:,}; change {setting}")


def _filter_shards(candidate_files: list[Path], score_files: list[str | Path], by_key, directions,
                   settings: SelectSettings, heldout_ids, work: Path, name: str, threads: int = 1
                   ) -> tuple[list[Path], dict[str, int]]:
    """Pass 1: each shard with its scores through the per-row steps, into a part file of
    one schema; exact duplicates, then near-duplicates dropped across parts. (parts, pairs
    left after each step)."""
    types = column_types(candidate_files, score_files)
    steps = _steps(settings, heldout_ids)
    counts: dict[str, int] = {"candidates": 0, **{label: 0 for label, _ in steps}}
    parts: list[Path] = []
    keys = KeySpill(work / "keys", BUCKET_ROWS) if settings.dedup else None
    near = NearDuplicates(work / "near", settings.near_duplicates, settings.near_ngram,
                          BUCKET_ROWS, threads) if settings.near_duplicates else None
    bar = progress(f"select {name}", unit="shards", total=len(candidate_files))
    for i, cand in enumerate(candidate_files):
        writer = None
        for frame in scored_batches(cand, by_key.get(shard_key(cand), []), batch_rows=BATCH_ROWS):
            frame = frame.with_columns([pl.lit(None, dtype=types[c]).alias(c)
                                        for c in directions if c not in frame.columns]
                                       ).select(*CANDIDATE_KEEP, *directions)  # one schema
            counts["candidates"] += frame.height
            for label, expr in steps:
                frame = frame.filter(expr)
                counts[label] += frame.height
            frame = frame.with_columns(_h=pl.col("candidate_id").hash(settings.seed))
            if keys is not None:
                keys.add(dedup_keys(frame))
            if near is not None:
                near.add(frame["en_ref"], frame["candidate"])
            table = frame.to_arrow()
            writer = writer or TableWriter(work / f"part-{i:06d}.parquet", table.schema)
            writer.write(table)
        if writer is not None:  # (a shard always yields a frame, empty or not)
            parts.append(writer.close())
        bar.update(1)
    bar.close()
    rows = list(counts.values())[-1]
    if keys is None and near is None:
        return parts, counts
    marks = keys.marks() if keys is not None else np.full(rows, KEEP, dtype=np.uint8)
    if keys is not None:
        counts["duplicates"] = int((marks == KEEP).sum())
    if near is not None:
        counts["near_duplicates"] = int((marks == KEEP).sum()) - near.mark(marks)
    drop_marked(parts, marks, BATCH_ROWS)
    return parts, counts


def _fold_and_sample(parts: list[Path], settings: SelectSettings, directions, counts: dict[str, int]
                     ) -> tuple[pl.Expr | None, int | None]:
    """The rank folds kept (``rank_by``) and the seeded sample's hash threshold (``size``),
    each None when not asked for; the folds' survivors are counted."""
    survivors = sum(scan_scratch(p).select(pl.len()).collect().item() for p in parts)
    fold = None
    if settings.rank_by is not None and survivors:
        cuts = fold_cuts(parts, settings.rank_by, settings.n_folds)
        fold = fold_expr(settings.rank_by, cuts, directions[settings.rank_by])
        kept = (scan_scratch(parts).select(fold.is_in(settings.folds).sum()).collect().item())
        counts[f"folds {settings.folds} of {settings.n_folds} by {settings.rank_by}"] = kept
        survivors = kept
    threshold = None
    if settings.size and survivors > settings.size:
        lazy = scan_scratch(parts)
        if fold is not None:
            lazy = lazy.filter(fold.is_in(settings.folds))
        threshold = lazy.select(pl.col("_h").bottom_k(settings.size).max()).collect().item()
    return fold, threshold


def _write_release(parts: list[Path], files: list[Path], fold: pl.Expr | None,
                   threshold: int | None, settings: SelectSettings, directions,
                   export: str | None) -> int:
    """Pass 2: the parts' survivors of the folds and the sample, in shard order, to the
    Parquet, the TSV and (with a fourth file) the ParaNMT layout. Returns the rows written."""
    tmp_parquet, tmp_tsv = files[0], files[1]
    tmp_paranmt = files[3] if len(files) > 3 else None
    writer: TableWriter | None = None
    score_columns = [c for c in directions if c not in ("pair_id", "candidate_id")]
    n_out = 0
    with open(tmp_tsv, "wb") as tsv:
        for frame in (f for part in parts for f in batches(part, batch_rows=BATCH_ROWS)):
            if fold is not None:
                frame = frame.with_columns(fold=fold).filter(pl.col("fold").is_in(settings.folds))
            if threshold is not None:
                frame = frame.filter(pl.col("_h") <= threshold)
            frame = frame.select(
                s1=pl.col("en_ref"), s2=pl.col("candidate"),
                *[c for c in ("pair_id", "candidate_id", "method", "rank", "fold")
                  if c in frame.columns],
                *[c for c in score_columns if c in frame.columns])
            if writer is None:
                writer = TableWriter(tmp_parquet, frame.to_arrow().schema)
            writer.write(frame.to_arrow())
            lines = frame.select(_one_line("s1"), _one_line("s2"))
            _write_lines(tsv, lines)
            if tmp_paranmt is not None:
                _append_paranmt(tmp_paranmt, lines, frame[export])
            n_out += frame.height
    if writer is None:
        TableWriter(tmp_parquet, pa.schema([("s1", pa.string()), ("s2", pa.string())])).close()
    else:
        writer.close()
    if tmp_paranmt is not None and not n_out:
        tmp_paranmt.touch()
    return n_out


def _append_paranmt(path: Path, lines: pl.DataFrame, score: pl.Series) -> None:
    """``reference \t paraphrase \t score`` lines: the TSV's ``lines`` and the score as
    Python's ``.6g`` writes it; a pair without the score gets ``nan``, which the paranmt
    reader rejects as bad_score."""
    text = pl.Series("score", ["nan" if v is None else f"{float(v):.6g}" for v in score.to_list()],
                     dtype=pl.String)
    with open(path, "ab") as fh:
        _write_lines(fh, lines.with_columns(text))


def _one_line(column: str) -> pl.Expr:
    """A sentence on one line of a TSV: its tabs and line breaks made spaces."""
    return pl.col(column).str.replace_all(r"[\t\n\r]", " ")


def _write_lines(fh, frame: pl.DataFrame) -> None:
    """``frame``'s rows as tab-separated lines, unquoted (its text holds no tab or line break)."""
    if frame.height:
        frame.write_csv(fh, separator="\t", include_header=False, quote_style="never")
