import json

from paramill import provenance
from paramill.io import atomic_output, sha256_file
from paramill.provenance import Run, prov_path, verify


def make_step(tmp_path, name, inputs, content, rule="step"):
    out = tmp_path / name
    run = Run(rule=rule, params={"k": 1}, inputs=inputs)
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        tmp.write_text(content)
        run.write({out: tmp}, {out: tmp_prov}, rows_in=3, rows_out=2)
    return out


def test_record_holds_what_design_asks(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("PARAMILL_CONFIG_DIGEST", "abc")
    src = tmp_path / "raw.txt"
    src.write_text("raw")
    out = make_step(tmp_path, "out.txt", [src], "cooked")
    record = json.loads(prov_path(out).read_text())
    assert record["rule"] == "step" and record["params"] == {"k": 1}
    assert record["inputs"] == [{"path": str(src), "sha256": sha256_file(src), "bytes": 3}]
    assert record["outputs"][0]["path"] == str(out)
    assert record["outputs"][0]["sha256"] == sha256_file(out)
    assert record["slurm_job_id"] == "4242" and record["config_digest"] == "abc"
    assert record["rows_in"] == 3 and record["rows_out"] == 2
    assert record["packages"]["python"] and record["host"]
    assert set(record["code"]) == {"paramill", "commit", "dirty"}
    assert record["started"] <= record["ended"]


def test_code_version_reads_the_git_checkout():
    info = provenance.code_version()
    assert info["commit"] is None or len(info["commit"]) == 40


def test_verify_follows_the_chain_and_finds_a_changed_file(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("raw")
    mid = make_step(tmp_path, "mid.txt", [raw], "mid")
    final = make_step(tmp_path, "final.txt", [mid], "final")
    assert verify(final) == []
    raw.write_text("tampered")
    findings = verify(final)
    assert [f.path for f in findings] == [str(raw)]
    assert "changed since the record" in findings[0].problem
    assert verify(final, recursive=False) == []


def test_verify_reports_a_missing_record_and_missing_file(tmp_path):
    lonely = tmp_path / "x.txt"
    lonely.write_text("x")
    assert "no provenance record" in verify(lonely)[0].problem
    raw = tmp_path / "raw.txt"
    raw.write_text("r")
    out = make_step(tmp_path, "o.txt", [raw], "o")
    raw.unlink()
    assert [f.problem for f in verify(out)] == ["input is missing"]


def test_directory_outputs_are_hashed_file_by_file(tmp_path):
    out = tmp_path / "shards"
    run = Run(rule="d", params={}, inputs=[])
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        tmp.mkdir()
        (tmp / "shard-00000.parquet").write_text("a")
        run.write({out: tmp}, {out: tmp_prov}, rows_in=None, rows_out=None)
    record = json.loads(prov_path(out).read_text())
    assert [e["path"] for e in record["outputs"]] == [str(out / "shard-00000.parquet")]
    assert verify(out) == []
    (out / "extra.parquet").write_text("b")
    assert [f.problem for f in verify(out)] == ["file not in the record"]
