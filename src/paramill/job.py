"""The skeleton of a job that streams one table: its output written under a temporary name
and renamed when complete, with its provenance record, a progress line, and its rows and
seconds counted. A stage writes the batches; this writes everything around them once.

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

from paramill.io import atomic_output
from paramill.progress import progress
from paramill.provenance import Run, prov_path
from paramill.tables import TableWriter


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


@contextlib.contextmanager
def table_job(run: Run, out: str | Path, schema: pa.Schema, desc: str, total: int | None,
              unit: str = "pairs", extra: dict[str, Any] | None = None) -> Iterator[TableJob]:
    """Open ``out`` for a stream of ``schema`` tables; on success close it, write its
    provenance (``rows_in``: ``total``; ``rows_out``: the rows written; ``extra`` and the
    seconds taken) and rename both into place. An exception leaves neither behind."""
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        job = TableJob(TableWriter(tmp, schema), progress(desc, unit=unit, total=total),
                       extra=dict(extra or {}))
        yield job
        job.bar.close()
        job.writer.close()
        job.seconds = round(job.elapsed, 3)
        run.write({out: tmp}, {out: tmp_prov}, rows_in=total, rows_out=job.rows,
                  extra={**job.extra, "seconds": job.seconds})
