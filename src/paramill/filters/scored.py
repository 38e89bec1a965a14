"""A shard's candidates with their score columns beside them, a batch at a time: the score
tables are found by shard (``corpus/shard``), and each must hold its shard's rows in their
order. Selection, the release's analysis and the by-method table read scored shards so."""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from paramill.filters.base import Direction, score_directions
from paramill.filters.token_table import aligned
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.io.arrowcols import empty_table
from paramill.io.tableread import read_frame, schema_of

#: rows a batch of the passes over the shards and parts (memory only; no effect on results)
BATCH_ROWS = 65_536

CANDIDATE_KEEP = ["pair_id", "candidate_id", "en_ref", "candidate", "method", "rank"]


def shard_key(path: str | Path) -> str:
    """``corpus/shard`` of a candidate or score file (its last two path parts)."""
    p = Path(path)
    return f"{p.parent.name}/{p.stem}"


#: columns a pair corpus gives (paramill.pairs), carried into the release and boundable
GIVEN = {"given_score": Direction.HIGHER, "label": Direction.HIGHER}


def group_scores(candidate_files: list[str | Path], score_files: list[str | Path]
                 ) -> tuple[dict[str, list[Path]], dict[str, Direction]]:
    """Score files by shard key, and every score column's direction (given columns of pair
    corpora included). Shards of different corpora may have different columns: a filter
    that needs what a pair corpus lacks is not run on it."""
    by_key: dict[str, list[Path]] = defaultdict(list)
    directions: dict[str, Direction] = {}
    for path in map(Path, score_files):
        by_key[shard_key(path)].append(path)
        directions.update(score_directions(path))
    for cand in candidate_files:
        if shard_key(cand) not in by_key and score_files:
            raise ValueError(f"{cand}: no score files for shard {shard_key(cand)}")
        directions.update({c: GIVEN[c] for c in given_columns(cand)})
    return by_key, directions


def given_columns(candidates: str | Path) -> list[str]:
    """The given columns (``given_score``, ``label``) a candidate shard has values in."""
    present = [c for c in schema_of(candidates).names if c in GIVEN]
    if not present:
        return []
    stat = os.stat(candidates)
    return list(_given(os.fspath(candidates), stat.st_size, stat.st_mtime_ns, tuple(present)))


@functools.lru_cache(maxsize=1024)
def _given(path: str, size: int, mtime: int, present: tuple[str, ...]) -> tuple[str, ...]:
    """The ``present`` columns of a shard that hold a value (once while the file is unchanged:
    selection, the analysis and the by-method table all ask)."""
    has = dict.fromkeys(present, False)
    for batch in iter_parquet_batches([path], BATCH_ROWS, list(present)):
        for name in present:
            has[name] = has[name] or batch.column(name).null_count < batch.num_rows
    return tuple(c for c in present if has[c])


def shard_columns(candidates: str | Path, score_files: list[Path]) -> set[str]:
    """The score and given columns one shard has."""
    names = set(given_columns(candidates))
    for path in score_files:
        names |= set(score_directions(path))
    return names


def column_types(candidate_files: list[Path], score_files: list[str | Path]) -> dict[str, pl.DataType]:
    """The polars type of every score and given column (missing ones are filled with nulls)."""
    types: dict[str, pl.DataType] = {}
    for path in [*score_files, *candidate_files]:
        for name, dtype in pl.from_arrow(empty_table(schema_of(path))).schema.items():
            if name not in ("pair_id", "candidate_id") and name not in types:
                types[name] = dtype
    return types


def scored_batches(candidates: str | Path, score_files: list[Path],
                   keep: list[str] = CANDIDATE_KEEP, batch_rows: int = BATCH_ROWS
                   ) -> Iterator[pl.DataFrame]:
    """One shard's candidates (their ``keep`` and given columns), a batch at a time, each with
    every score column beside it. A score file holds the shard's rows in their order
    (``score_shard`` writes them so); one that does not (another shard's, stale) is an error
    naming both files."""
    frames = batches(candidates, keep + given_columns(candidates), batch_rows)
    for path in score_files:
        frames = _beside(frames, path, candidates)
    return frames


def batches(path: str | Path, columns: list[str] | None = None,
            batch_rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """A Parquet file's rows as polars frames, a batch at a time (one empty frame, for its
    columns, where it has no rows)."""
    if not parquet_rows([path]):
        yield read_frame(path, columns)
    for batch in iter_parquet_batches([path], batch_rows, columns):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        yield frame


def _beside(frames: Iterator[pl.DataFrame], path: Path, candidates: str | Path) -> Iterator[pl.DataFrame]:
    for frame, scores in aligned(frames, path, candidates, "the scores", "its score rule"):
        scores = scores.drop("pair_id", "candidate_id")
        if twice := [c for c in scores.columns if c in frame.columns]:
            raise ValueError(f"{path}: column {', '.join(twice)} of {candidates} is given by "
                             "another score table (or the candidates) too; two filters name one column")
        yield frame.hstack(scores.get_columns())


def scored_shard(candidates: str | Path, score_files: list[Path],
                 keep: list[str] = CANDIDATE_KEEP) -> pl.DataFrame:
    """One shard's candidates with every score column (:func:`scored_batches`), whole."""
    return pl.concat(list(scored_batches(candidates, score_files, keep)), rechunk=False)


def iter_scored(candidate_files: list[str | Path], score_files: list[str | Path]):
    """(candidate file, a scored batch of it) of each shard in turn (:func:`scored_batches`)."""
    by_key, _ = group_scores(candidate_files, score_files)
    for cand in candidate_files:
        yield from ((cand, frame) for frame in scored_batches(cand, by_key.get(shard_key(cand), [])))
