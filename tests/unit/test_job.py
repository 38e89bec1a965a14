"""paramill.job: the one skeleton around a job that streams a table."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.run.job import output_job, table_job
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


@pytest.mark.parametrize("each", [False, True])
def test_an_output_job_writes_its_files_and_their_records_together(tmp_path, each):
    from paramill.provenance import verify

    src = tmp_path / "in.txt"
    src.write_text("input\n")
    a, b = tmp_path / "a.tsv", tmp_path / "b.json"
    with output_job(Run(rule="demo", params={}, inputs=[src]), a, b, rows_in=7, each=each) as job:
        job.paths[0].write_text("x\n")
        job.paths[1].write_text("{}\n")
        job.rows_out, job.extra = 3, {"note": "n"}
        assert not a.exists() and not b.exists()
    records = [json.loads((tmp_path / f"{p.name}.prov.json").read_text()) for p in (a, b)]
    for record, own in zip(records, ("a.tsv", "b.json")):
        assert (record["rows_in"], record["rows_out"], record["note"]) == (7, 3, "n")
        named = sorted(e["path"].rsplit("/", 1)[-1] for e in record["outputs"])
        assert named == ([own] if each else ["a.tsv", "b.json"])
    assert verify(a) == [] and verify(b) == []
    b.unlink()  # a record of its own: verifying a does not need b
    assert (verify(a) == []) == each


def test_a_failing_output_job_leaves_nothing(tmp_path):
    a = tmp_path / "a.tsv"
    with pytest.raises(RuntimeError, match="stop"):
        with output_job(Run(rule="demo", params={}, inputs=[]), a) as job:
            job.paths[0].write_text("half\n")
            raise RuntimeError("stop")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_that_would_replace_an_input_is_refused_before_the_work(tmp_path):
    """`--out` given an input's name (or a folder output that holds an input) replaced the
    input with the output when the job ended: `embed train pairs.tsv --out pairs.tsv` left a
    model where the training pairs had been. It is an error naming both, before the job's
    block runs, and the input is untouched; through a symlink or `..` it is the same file."""
    from paramill.cli import main
    from paramill.errors import InputError

    src = tmp_path / "in.txt"
    src.write_text("input\n")
    (tmp_path / "sub").mkdir()
    run = Run(rule="r", params={}, inputs=[src])
    ran = []
    for out, what in ((src, "is"), (tmp_path / "sub" / ".." / "in.txt", "is"), (tmp_path, "holds")):
        with pytest.raises(InputError, match=rf"this output {what} the input {src}: writing it "
                                             r"would replace the input"):
            with output_job(run, out):
                ran.append(out)
    (tmp_path / "link.txt").symlink_to(src)
    with pytest.raises(InputError):
        with table_job(run, tmp_path / "link.txt", SCHEMA, "x", total=0):
            ran.append("link")
    assert not ran and src.read_text() == "input\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "in.txt", "link.txt", "sub"]
    with output_job(run, tmp_path / "sub" / "out.txt") as job:  # beside an input: fine
        job.paths[0].write_text("out")
    assert (tmp_path / "sub" / "out.txt").read_text() == "out"

    # inside an input folder: `bitext clean --ingested ing --stats ing/stats.json` replaced the
    # ingest's own stats.json, and the folder's record no longer matched it
    folder = tmp_path / "ingested"
    folder.mkdir()
    (folder / "stats.json").write_text("{}\n")
    in_folder = Run(rule="r", params={}, inputs=[folder])
    for out in (folder / "stats.json", folder / "new" / "out.parquet"):
        with pytest.raises(InputError, match=rf"this output is inside the input folder {folder}: "
                                             "writing it would change the input"):
            with output_job(in_folder, out):
                ran.append(out)
    assert not ran and sorted(p.name for p in folder.iterdir()) == ["stats.json"]
    assert (folder / "stats.json").read_text() == "{}\n"
    with output_job(in_folder, tmp_path / "ingested-stats.json") as job:  # a sibling's name: fine
        job.paths[0].write_text("{}")

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"a man reads book {i}\ta man is reading book {i}\n" for i in range(20)))
    before = pairs.read_bytes()
    assert main(["embed", "train", str(pairs), "--out", str(pairs), "--spec",
                 '{"units": "word", "components": ["word"], "dim": 4}', "--settings", '{"epochs": 1}']) == 2
    assert pairs.read_bytes() == before and not list(tmp_path.glob("pairs.tsv.*"))
    (tmp_path / "models").mkdir()  # --out given a folder: refused before training
    (tmp_path / "models" / "old.pt").write_text("kept")
    assert main(["embed", "train", str(pairs), "--out", str(tmp_path / "models"), "--spec",
                 '{"units": "word", "components": ["word"], "dim": 4}', "--settings", '{"epochs": 1}']) == 2
    assert (tmp_path / "models" / "old.pt").read_text() == "kept" and not list(tmp_path.glob("models.*"))
