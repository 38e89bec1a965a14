"""The skeleton of a job: its outputs written under temporary names and renamed when
complete, with their provenance record (:func:`output_job`); for a job that streams one
table, also a progress line and its rows and seconds counted (:func:`table_job`). A stage
writes its data; this writes everything around it once.

    run = Run(rule=rule, params=..., inputs=[...])
    with table_job(run, out, SCHEMA, f"tokens {name}", total=n_in) as job:
        for batch in ...:
            job.write(table)
        if job.rows != n_in:  # raising here leaves nothing behind
            raise RuntimeError(...)
        job.extra["stage"] = {...}  # what the stage adds to the record (job.elapsed: seconds so far)
    job.rows, job.seconds
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.io.outputs import atomic_output
from paramill.run.progress import progress
from paramill.provenance import Run, prov_path
from paramill.io.tablewrite import TableWriter


@dataclass
class TableJob:
    """The open job: :meth:`write` appends a table (or record batch) and counts it."""

    writer: TableWriter
    bar: Any
    rows: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def write(self, table: pa.Table | pa.RecordBatch, done: int | None = None) -> None:
        """Append ``table``; the progress line advances by ``done`` inputs (default: the
        rows written, for a job writing a row per input)."""
        self.writer.write(table)
        self.rows += table.num_rows
        self.bar.update(table.num_rows if done is None else done)

    @property
    def elapsed(self) -> float:
        """Seconds since the job opened (for rates the stage records in ``extra``)."""
        return time.perf_counter() - self.started


@dataclass
class OutputJob:
    """The open job of :func:`output_job`: ``paths`` are where to write the outputs now (in
    the order given); what the record says is set here before the block ends."""

    paths: tuple[Path, ...]
    rows_in: int | None = None
    rows_out: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def output_job(run: Run, *outs: str | Path, rows_in: int | None = None,
               each: bool = False) -> Iterator[OutputJob]:
    """Any job's outputs: temporary names to write, then, when the block succeeds, their
    provenance and everything renamed into place together. An exception leaves none of them
    behind. The record names all the outputs, written beside each; with ``each``, every
    output gets a record naming it alone (so that verifying one does not need the others:
    a job's side tables, reports and plots).

        with output_job(run, out_tsv, out_json, rows_in=n) as job:
            tsv, json_path = job.paths
            ...
            job.rows_out = ...
    """
    finals = [Path(o) for o in outs]
    run.check_outputs(finals)  # before the work: an output that would replace an input
    run.check_inputs()  # and an input that no longer matches the record of the step that wrote it
    with atomic_output(*finals, *[prov_path(o) for o in finals]) as temps:
        job = OutputJob(tuple(temps[:len(finals)]), rows_in)
        yield job
        records = dict(zip(finals, temps[len(finals):]))
        groups = [{f: t} for f, t in zip(finals, job.paths)] if each else [dict(zip(finals, job.paths))]
        for outputs in groups:
            run.write(outputs, {f: records[f] for f in outputs}, rows_in=job.rows_in,
                      rows_out=job.rows_out, extra=job.extra)


@contextlib.contextmanager
def table_job(run: Run, out: str | Path, schema: pa.Schema, desc: str, total: int | None,
              unit: str = "pairs", extra: dict[str, Any] | None = None) -> Iterator[TableJob]:
    """Open ``out`` for a stream of ``schema`` tables; on success close it, write its
    provenance (``rows_in``: ``total``; ``rows_out``: the rows written; ``extra`` and the
    seconds taken) and rename both into place. An exception leaves neither behind."""
    with output_job(run, out, rows_in=total) as files:
        job = TableJob(TableWriter(files.paths[0], schema), progress(desc, unit=unit, total=total),
                       extra=dict(extra or {}))
        yield job
        job.bar.close()
        job.writer.close()
        job.seconds = round(job.elapsed, 3)
        files.rows_out, files.extra = job.rows, {**job.extra, "seconds": job.seconds}
