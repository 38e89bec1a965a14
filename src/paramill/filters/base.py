"""The filter interface: every filter computes named score columns over a shard.

A filter never drops a row: it adds columns. Selection (:mod:`paramill.filters.select`)
reads the columns and applies bounds. This is OpusFilter's score/accept split.

A filter module defines one :class:`Filter` subclass with

- ``name``: the module's name in the config (``filters.<name>``) and on the command line;
- :meth:`Filter.columns`: the score columns it writes, each with its direction
  (higher-is-better, lower-is-better, or a range whose bounds are tuned);
- :meth:`Filter.score`: the columns' values for a :class:`Batch` of candidates.
"""

from __future__ import annotations

import enum
import json
import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.io import arrowcols
from paramill.run import device
from paramill.bitext.tables import BITEXT
from paramill.filters import token_table
from paramill.io.tableread import iter_parquet_batches, parquet_rows, schema_of
from paramill.run.job import table_job
from paramill.provenance import Run
from paramill.config.typed import Settings
from paramill.io.tableread import TABLE_KINDS, read_table
from paramill.text import token_count_expr


class Direction(str, enum.Enum):
    HIGHER = "higher"  # higher is better: bound from below
    LOWER = "lower"  # lower is better: bound from above
    RANGE = "range"  # neither: bounds tuned on both sides


@dataclass(frozen=True)
class Column:
    name: str
    direction: Direction
    description: str
    dtype: pa.DataType = pa.float64()


#: Candidate-table columns a filter may read (``cs`` is joined from the bitext shard).
CANDIDATE_COLUMNS = ("pair_id", "candidate_id", "en_ref", "candidate", "fwd_nll", "bwd_nll",
                     "n_tokens")
#: what a filter that reads Czech takes from its shard's bitext table
SOURCE_COLUMNS = pa.schema([BITEXT.field("pair_id"), BITEXT.field("cs")])


class Batch:
    """Candidates of one batch; n-gram counts are computed once and shared by the filters,
    or read from the token stage's table (``counts``, :mod:`paramill.filters.tokens`)."""

    def __init__(self, frame: pl.DataFrame, threads: int | None = None,
                 counts: pl.DataFrame | None = None):
        self.frame = frame
        self.threads = threads  # for the n-gram counts (None: polars' pool size)
        self.counts = counts  # the token stage's rows for this batch, when given

    def __len__(self) -> int:
        return self.frame.height

    def column(self, name: str) -> list[Any]:
        return self.frame.get_column(name).to_list()

    @functools.cached_property
    def refs(self) -> list[str]:
        return self.column("en_ref")

    @functools.cached_property
    def candidates(self) -> list[str]:
        return self.column("candidate")

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """Tokens of the reference and of the candidate (as cased)."""
        if self.counts is not None:
            return token_table.lengths(self.counts)
        counts = self.frame.select(r=token_count_expr(pl.col("en_ref")), c=token_count_expr(pl.col("candidate")))
        return counts["r"].to_numpy(), counts["c"].to_numpy()

    def matches(self, max_order: int, lowercase: bool):
        """Shared n-grams per order 1..max_order and token counts (see ngrams.batch_matches)."""
        if self.counts is not None and lowercase:
            if max_order <= token_table.ORDERS[-1]:
                return token_table.matches(self.counts, max_order)
        key = (max_order, lowercase)
        cache = self.__dict__.setdefault("_matches", {})
        if key not in cache:
            from paramill.filters.ngrams import batch_matches

            cache[key] = batch_matches(self.frame.get_column("en_ref"), self.frame.get_column("candidate"),
                                       range(1, max_order + 1), lowercase, threads=self.threads)
        return cache[key]


#: kinds of model a filter may score with; the workflow knows where each is made
MODEL_KINDS = ("kenlm", "classifier", "parascore", "ct2:cs-en", "ct2:en-cs", "spm:cs", "spm:en")


class Filter(Settings, ABC):
    """A filter declares everything the config schema, the command line and the workflow
    derive from it (``paramill.filters.settings``): nothing about a filter is written
    anywhere else.

    Its config section ``filters.<name>`` holds the fields declared with
    :func:`paramill.settings.setting` (of the class itself, or of ``settings`` when its
    section also trains its model); other fields are filled at run time (model paths,
    ``threads``)."""

    #: the module's name: ``filters.<name>`` in the config, ``--filter <name>`` on the CLI
    name: ClassVar[str]
    #: one line describing the filter and its columns (the config section's description)
    doc: ClassVar[str]
    #: position in the default ``filters.enabled`` (cheap filters first)
    order: ClassVar[int]
    #: the class holding the config section when it is not the filter itself
    settings: ClassVar[type | None] = None
    #: models the filter scores with: {field name: one of MODEL_KINDS}
    models: ClassVar[dict[str, str]] = {}
    #: extra inputs: ``cs`` (the Czech source, joined from the bitext shard)
    needs_source: ClassVar[bool] = False
    #: reads the decoder's columns (``fwd_nll``, ``bwd_nll``, ``n_tokens``), which only
    #: back-translated candidates have: skipped for pair corpora (``pairs.corpora``)
    needs_decoder: ClassVar[bool] = False
    #: reads the token stage's counts when given (length, overlap, BLEU): the workflow runs
    #: the ``tokens`` rule once per shard and passes its table (``--models {"tokens": …}``)
    reads_tokens: ClassVar[bool] = False
    #: the launch-only field that bounds what one scoring batch holds on a GPU (its scores
    #: the same within float noise at any value): halved for the rest of a shard when a
    #: batch runs out of GPU memory (:func:`paramill.device.fit_gpu_memory`); None: no such
    memory_batch: ClassVar[str | None] = None

    def summary(self) -> dict[str, Any]:
        """What the filter found over the shard, for the job's record and its last line (the
        language identifier's count of sides in another language); none by default."""
        return {}

    def covered_by_tokens(self) -> bool:
        """Whether the token stage's table holds all this filter needs (then the job reads
        only the candidates' ids, not their text). Filters that read tokens narrow it by
        their settings (lower-casing, n-gram orders)."""
        return self.reads_tokens

    @abstractmethod
    def columns(self) -> list[Column]:
        """The score columns this filter writes."""

    @abstractmethod
    def score(self, batch: Batch) -> dict[str, Any]:
        """One value per candidate of ``batch`` for each column of :meth:`columns`."""


class ModelFilter(Filter):
    """A filter that scores with trained models (its ``models``): :meth:`load` reads them
    once, when the filter is made, and ``loaded`` holds what it returned."""

    def __post_init__(self):
        object.__setattr__(self, "_loaded", self.load())  # frozen: set once, here

    @abstractmethod
    def load(self) -> Any:
        """The model(s) :meth:`score` uses, read from the filter's model paths."""

    @property
    def loaded(self) -> Any:
        return self.__dict__["_loaded"]


#: Parquet metadata key of a score file: {column: direction}, read by selection
DIRECTIONS_KEY = b"paramill.directions"


def score_schema(filt: Filter) -> pa.Schema:
    directions = {c.name: c.direction.value for c in filt.columns()}
    return pa.schema([pa.field("pair_id", pa.string(), nullable=False),
                      pa.field("candidate_id", pa.string(), nullable=False)]
                     + [pa.field(c.name, c.dtype) for c in filt.columns()],
                     metadata={DIRECTIONS_KEY: json.dumps(directions).encode()})


def score_directions(path: str | Path) -> dict[str, Direction]:
    """The score columns of a score file and their directions (from its metadata)."""
    meta = schema_of(path).metadata or {}
    if DIRECTIONS_KEY not in meta:
        raise ValueError(f"{path}: not a paramill score table (no column directions)")
    return {k: Direction(v) for k, v in json.loads(meta[DIRECTIONS_KEY]).items()}


def _score_table(filt: Filter, frame: pl.DataFrame, threads: int | None = None,
                 counts: pl.DataFrame | None = None) -> pa.Table:
    values = filt.score(Batch(frame, threads, counts))
    columns = {"pair_id": frame.get_column("pair_id").to_arrow(),
               "candidate_id": frame.get_column("candidate_id").to_arrow()}
    for col in filt.columns():
        column = values[col.name]
        if len(column) != frame.height:
            raise RuntimeError(f"filter {filt.name} gave {len(column)} values of {col.name} "
                               f"for {frame.height} candidates")
        columns[col.name] = arrowcols.column(column, col.dtype, nan_is_null=True)
    return pa.table(columns, schema=score_schema(filt))


def _frames(candidates: str | Path, source_shard: str | Path | None, batch_size: int,
            columns: tuple[str, ...] = CANDIDATE_COLUMNS) -> Iterator[pl.DataFrame]:
    sources = None
    if source_shard is not None:  # one shard's Czech side: shard-sized, joined per batch
        sources = pl.from_arrow(read_table(source_shard, SOURCE_COLUMNS, TABLE_KINDS["bitext"][3]))
    for batch in iter_parquet_batches([candidates], batch_size=batch_size, columns=list(columns)):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        if sources is not None:
            frame = frame.join(sources, on="pair_id", how="left", maintain_order="left")
            missing = frame.filter(pl.col("cs").is_null())
            if missing.height:
                raise ValueError(f"{candidates}: pair {missing['pair_id'][0]} is not in the "
                                 f"bitext shard {source_shard}")
        yield frame


def score_shard(filt: Filter, candidates: str | Path, out: str | Path,
                source_shard: str | Path | None = None, inputs: list[str | Path] | None = None,
                params: dict[str, Any] | None = None, threads: int = 1, batch_size: int = 20000,
                rule: str = "score", tokens: str | Path | None = None) -> dict[str, Any]:
    """Score every candidate of one shard with ``filt``; write ``pair_id``, ``candidate_id``
    and the filter's columns to ``out`` (same rows, same order). Atomic, with provenance.
    ``tokens``: the shard's token-stage table, read instead of tokenising again by the
    filters that read it (``reads_tokens``)."""
    if filt.needs_source and source_shard is None:
        raise ValueError(f"filter {filt.name} needs the bitext shard (the Czech source)")
    tokens = tokens if filt.covered_by_tokens() else None  # otherwise it counts from the text
    n_in = parquet_rows([candidates])
    run = Run(rule=rule, params={"filter": filt.name, **(params or {})},
              inputs=[candidates, *([source_shard] if source_shard else []), *([tokens] if tokens else []),
                      *(inputs or [])])
    frames = _frames(candidates, source_shard if filt.needs_source else None, batch_size,
                     ("pair_id", "candidate_id") if tokens is not None else CANDIDATE_COLUMNS)
    if tokens is not None:
        pairs = token_table.aligned(frames, tokens, candidates)
    else:
        pairs = ((frame, None) for frame in frames)
    columns = [c.name for c in filt.columns()]
    halved: list[dict[str, Any]] = []
    with table_job(run, out, score_schema(filt), f"{filt.name} {Path(candidates).name}", n_in,
                   extra={"columns": columns}) as job:
        for frame, counts in pairs:  # length/overlap/BLEU vectorised over `threads`; models batch
            job.write(_fitting(filt, frame, threads, counts, halved, f"{Path(candidates).name} row {job.rows}"))
        if job.rows != n_in:
            raise RuntimeError(f"{candidates}: {n_in} candidates in but {job.rows} scored")
        job.extra["out_of_gpu_memory"] = halved
        found = filt.summary()
        job.extra.update(found)
    return {"rows": job.rows, "seconds": job.seconds, "columns": columns, **found}


def _fitting(filt: Filter, frame: pl.DataFrame, threads: int | None, counts: pl.DataFrame | None,
             halved: list[dict[str, Any]], at: str) -> pa.Table:
    """The frame's scores; with a model filter's batch bound (``memory_batch``), halved
    until a batch fits the GPU's memory and kept so for the rest of the shard (set on the
    filter in place: its models stay loaded)."""
    if filt.memory_batch is None:
        return _score_table(filt, frame, threads, counts)

    def work(size: int) -> pa.Table:
        object.__setattr__(filt, filt.memory_batch, size)  # frozen: a launch-only bound
        return _score_table(filt, frame, threads, counts)

    table, _ = device.fit_gpu_memory(work, getattr(filt, filt.memory_batch), filt.memory_batch,
                                     "paramill filters score", at, halved)
    return table
