"""paramill.job: the one skeleton around a job that streams a table."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.job import table_job
from paramill.provenance import Run

SCHEMA = pa.schema([pa.field("x", pa.int64())])


def test_a_table_job_writes_counts_and_records(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("input\n")
    out = tmp_path / "out.parquet"
    run = Run(rule="demo", params={"k": 1}, inputs=[src])
    with table_job(run, out, SCHEMA, "demo", total=5, extra={"note": "n"}) as job:
        job.write(pa.table({"x": [1, 2, 3]}, schema=SCHEMA))
        job.write(pa.record_batch([pa.array([4, 5])], schema=SCHEMA))
        assert not out.exists()  # renamed into place only when the block succeeds
    assert pq.read_table(out).column("x").to_pylist() == [1, 2, 3, 4, 5]
    assert job.rows == 5 and job.seconds >= 0
    record = json.loads((tmp_path / "out.parquet.prov.json").read_text())
    assert (record["rule"], record["rows_in"], record["rows_out"]) == ("demo", 5, 5)
    assert record["note"] == "n" and record["seconds"] == job.seconds


def test_a_failing_table_job_leaves_nothing(tmp_path):
    out = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError, match="short"):
        with table_job(Run(rule="demo", params={}, inputs=[]), out, SCHEMA, "demo", 3) as job:
            job.write(pa.table({"x": [1]}, schema=SCHEMA))
            raise RuntimeError("short")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
