import json

import pytest

from paramill import provenance
from paramill.io.outputs import atomic_output, sha256_file
from paramill.provenance import Run, prov_path, verify
from tests.hostile import edited


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
    import subprocess
    from pathlib import Path

    import paramill

    root = Path(__file__).resolve().parents[2]  # the checkout these tests are in
    info = provenance.code_version()
    if Path(paramill.__file__).resolve().parents[1] != root / "src" or not (root / ".git").exists():
        assert info["commit"] is None and info["dirty"] is None  # an installed copy: it says so
        return
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, check=True).stdout.strip())
    assert info["commit"] == head and len(head) == 40
    assert info["dirty"] is dirty


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


def _chain(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("raw")
    mid = make_step(tmp_path, "mid.txt", [raw], "mid")
    return raw, mid, make_step(tmp_path, "final.txt", [mid], "final")


def test_a_deleted_link_breaks_the_chain_even_when_nothing_else_changed(tmp_path):
    raw, mid, final = _chain(tmp_path)
    assert verify(final) == []
    prov_path(mid).unlink()
    raw.write_text("changed behind the missing record")
    findings = verify(final)
    assert [f.path for f in findings] == [str(prov_path(mid))]
    assert "record is missing: the chain is broken" in findings[0].problem


def test_an_edited_link_is_found(tmp_path):
    _, mid, final = _chain(tmp_path)
    record = json.loads(prov_path(mid).read_text())
    record["inputs"] = []  # hide the raw input
    prov_path(mid).write_text(json.dumps(record))
    problems = [f.problem for f in verify(final)]
    assert any(p.startswith("record changed since the record") for p in problems)


def test_links_edited_away_are_found_and_the_chain_is_still_followed(tmp_path):
    """A record whose ``input_records`` was emptied stopped the chain there: verify
    answered OK for the output even with the raw input changed behind it."""
    raw, mid, final = _chain(tmp_path)
    record = json.loads(prov_path(final).read_text())
    prov_path(final).write_text(json.dumps({**record, "input_records": []}))
    raw.write_text("changed behind the missing link")
    assert [(f.path, f.problem.split(":")[0]) for f in verify(final)] == [
        (str(prov_path(mid)), "record of an input that the chain does not link"),
        (str(raw), "input changed since the record (31 bytes, recorded 3)")]


def test_malformed_and_unreadable_records_are_one_finding_each(tmp_path):
    _, mid, final = _chain(tmp_path)
    for text, expected in [("{not json", "malformed record (not JSON"),
                           ("[1, 2]", "malformed record (not a JSON object)"),
                           ('{"inputs": [{"path": 3}]}', "malformed record (`inputs`"),
                           ('{"outputs": "x"}', "malformed record (`outputs`"),
                           (b"\xff\xfe{", "unreadable record")]:
        if isinstance(text, bytes):
            prov_path(final).write_bytes(text)
        else:
            prov_path(final).write_text(text)
        findings = verify(final)
        assert len(findings) == 1 and findings[0].problem.startswith(expected), findings
    record = json.loads(prov_path(mid).read_text())
    record["outputs"][0]["bytes"] = "3"
    prov_path(final).write_text(json.dumps(record))
    assert [f.problem for f in verify(final)] == [
        "malformed record (a `bytes` of `outputs` is not a whole number)"]
    prov_path(final).unlink()
    prov_path(final).mkdir()
    assert verify(final)[0].problem.startswith("record is not a file")


def test_a_record_that_does_not_list_its_output_or_a_file_of_another_size_is_found(tmp_path,
                                                                                  monkeypatch):
    """A record put beside another file (copied, or edited to list nothing) verified that
    file as OK when the files it listed were unchanged; a file of another size than recorded
    is found without being read."""
    _, mid, final = _chain(tmp_path)
    other = tmp_path / "other.txt"
    other.write_text("other")
    prov_path(other).write_text(prov_path(final).read_text())  # final's record, beside other
    assert [(f.path, f.problem) for f in verify(other, recursive=False)] == [
        (str(other), "not among the outputs other.txt.prov.json lists: the record of another "
                     "file, or edited")]
    record = json.loads(prov_path(final).read_text())
    prov_path(final).write_text(json.dumps({**record, "outputs": []}))
    assert [f.path for f in verify(final, recursive=False)] == [str(final)]
    prov_path(final).write_text(json.dumps(record))
    assert verify(final) == []

    real = provenance.sha256_file

    def not_final(path, *args, **kwargs):
        assert path != final, "the output was read"
        return real(path, *args, **kwargs)

    final.write_text("final, longer")
    monkeypatch.setattr(provenance, "sha256_file", not_final)
    (found,) = verify(final, recursive=False)
    assert found.problem == "output changed since the record (13 bytes, recorded 5)"


@pytest.mark.timeout(60)
def test_a_fifo_or_device_where_a_file_was_recorded_is_a_finding_not_a_hang(tmp_path):
    import os

    raw, _, final = _chain(tmp_path)
    raw.unlink()
    os.mkfifo(raw)
    findings = verify(final)
    assert [(f.path, f.problem) for f in findings] == [
        (str(raw), "input is not a regular file (recorded as one)")]
    record = json.loads(prov_path(final).read_text())
    record["inputs"][0]["path"] = "/dev/zero"
    prov_path(final).write_text(json.dumps(record))
    assert any("/dev/zero" in str(f) and "not a regular file" in f.problem
               for f in verify(final, recursive=False))


def test_verify_gives_the_same_answer_from_any_directory_and_after_a_move(tmp_path, monkeypatch):
    import shutil

    tree = tmp_path / "project"
    (tree / "data").mkdir(parents=True)
    monkeypatch.chdir(tree)
    (tree / "data" / "raw.txt").write_text("raw")
    from pathlib import Path

    mid = make_step(Path("data"), "mid.txt", [Path("data/raw.txt")], "mid")
    final = make_step(Path("data"), "final.txt", [mid], "final")
    assert json.loads(prov_path(final).read_text())["inputs"][0]["path"] == "data/mid.txt"
    assert verify(final) == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert verify(tree / "data" / "final.txt") == []
    moved = tmp_path / "moved"
    shutil.move(tree, moved)
    assert verify(moved / "data" / "final.txt") == []
    (moved / "data" / "raw.txt").write_text("tampered")
    assert [f.path for f in verify(moved / "data" / "final.txt")] == ["data/raw.txt"]


def test_cli_verify_prints_one_line_per_problem_and_exits_1(tmp_path, capsys):
    from paramill.cli import main

    _, mid, final = _chain(tmp_path)
    assert main(["provenance", "verify", str(final)]) == 0
    assert capsys.readouterr().out.strip().endswith("OK (whole chain)")
    prov_path(mid).write_text("{broken")
    assert main(["provenance", "verify", str(final)]) == 1
    out = capsys.readouterr().out
    assert "BROKEN (2 problems)" in out and "record changed since" in out and "malformed record" in out and "Traceback" not in out


def test_any_field_of_a_record_of_the_wrong_json_type_is_a_finding_or_an_answer_never_a_crash(tmp_path):
    """Records are files anyone can edit: every field of a real record set to each value of
    other JSON types (:data:`tests.hostile.WRONG_JSON`) gives findings or an empty list, never an exception; a wrong
    `outputs` or `inputs` entry is always a finding."""
    _, mid, final = _chain(tmp_path)
    record = json.loads(prov_path(final).read_text())
    cases = 0
    for path, value, changed in edited(record):
        prov_path(final).write_text(json.dumps(changed))
        findings = verify(final)
        assert all(isinstance(f, provenance.Finding) for f in findings)
        if path[0] in ("outputs", "input_records") or path[:1] == ("inputs",) and len(path) > 1:
            assert findings, (path, value)
        cases += 1
    assert cases > 300


def _job(tmp_path, name, inputs, content="out"):
    """A job as the commands run one: the check before the work, the record after."""
    from paramill.run.job import output_job

    run = Run(rule="next", params={}, inputs=inputs)
    out = tmp_path / name
    with output_job(run, out) as job:
        job.paths[0].write_text(content)
    return out


def test_a_job_refuses_an_input_that_no_longer_matches_the_record_of_the_step_that_wrote_it(
        tmp_path):
    from paramill.errors import InputError

    raw, mid, _ = _chain(tmp_path)
    raw.write_text("a raw file has no record: not checked")
    assert verify(_job(tmp_path, "ok.txt", [raw, mid]), recursive=False) == []
    mid.write_text("edited by hand")
    with pytest.raises(InputError) as err:
        _job(tmp_path, "refused.txt", [mid])
    assert err.value.path == str(mid)
    assert f"changed since `step` wrote it (sha256 differs from its record {prov_path(mid)})" in str(err.value)
    assert f"delete {prov_path(mid)} to use the file as a raw input" in str(err.value)
    assert not list(tmp_path.glob("refused*"))  # nothing written, nothing half-written
    prov_path(mid).unlink()  # as the message says: now a raw input
    assert verify(_job(tmp_path, "raw-now.txt", [mid]), recursive=False) == []
    prov_path(final := tmp_path / "final.txt").write_text("{broken")
    with pytest.raises(InputError, match=r"final.txt.prov.json: malformed record \(not JSON"):
        _job(tmp_path, "after-broken.txt", [final])


def test_a_folder_input_that_gained_or_lost_a_file_is_refused(tmp_path):
    from paramill.errors import InputError

    shards = tmp_path / "shards"
    run = Run(rule="ingest", params={}, inputs=[])
    with atomic_output(shards, prov_path(shards)) as (tmp, tmp_prov):
        tmp.mkdir()
        for i in range(2):
            (tmp / f"shard-{i:05d}.parquet").write_text(str(i))
        run.write({shards: tmp}, {shards: tmp_prov}, rows_in=None, rows_out=None)
    _job(tmp_path, "a.txt", [shards])
    _job(tmp_path, "b.txt", [shards / "shard-00001.parquet"])  # a file of a recorded folder
    (shards / "shard-00002.parquet").write_text("2")
    with pytest.raises(InputError, match="shard-00002.parquet: not among the outputs its record"):
        _job(tmp_path, "c.txt", [shards])
    (shards / "shard-00002.parquet").unlink()
    (shards / "shard-00000.parquet").unlink()
    with pytest.raises(InputError, match=r"shard-00000.parquet is missing: `ingest` wrote it"):
        _job(tmp_path, "d.txt", [shards])
    assert not (tmp_path / "c.txt").exists() and not (tmp_path / "d.txt").exists()


def test_an_input_changed_while_the_job_ran_is_refused_and_one_unchanged_is_hashed_once(
        tmp_path, monkeypatch):
    from paramill.errors import InputError
    from paramill.run.job import output_job

    _, mid, _ = _chain(tmp_path)
    hashed = []
    real = provenance.sha256_file
    monkeypatch.setattr(provenance, "sha256_file", lambda p, *a, **k: hashed.append(str(p)) or real(p, *a, **k))
    out = _job(tmp_path, "once.txt", [mid])
    assert hashed.count(str(mid)) == 1  # checked before the work; the record reuses it
    assert json.loads(prov_path(out).read_text())["inputs"][0]["sha256"] == real(mid)
    run = Run(rule="next", params={}, inputs=[mid])
    with pytest.raises(InputError, match="changed since `step` wrote it"):
        with output_job(run, tmp_path / "during.txt") as job:
            job.paths[0].write_text("out")
            mid.write_text("rewritten while the job ran")
    assert not (tmp_path / "during.txt").exists()


def test_a_raw_input_changed_while_the_job_read_it_is_refused(tmp_path):
    """A raw input (no record: the user's corpus, a harvest's archive) appended to or
    replaced while a job reads it, or a folder that gains or loses a file: the job read some
    of it as it was and some as it is, and its record (the digest from the start, or one
    taken at the end) described neither. Refused when the record is made; an input left
    alone, or only read, passes."""
    import os

    from paramill.errors import InputError
    from paramill.run.job import output_job

    raw, folder = tmp_path / "archive.jsonl", tmp_path / "pages"
    raw.write_text("one\n")
    folder.mkdir()
    (folder / "a.json").write_text("{}")
    for change, message in ((lambda: raw.open("a").write("two\n"),
                             r"archive\.jsonl: changed while this job read it \(4 bytes when the job began, 8 now\)"),
                            (lambda: (folder / "b.json").write_text("{}"),
                             r"pages: changed while this job read it: its file b\.json appeared"),
                            (lambda: os.utime(folder / "a.json", ns=(1, 1)),
                             r"pages: changed while this job read it: its file a\.json \(2 bytes")):
        run = Run(rule="read", params={}, inputs=[raw, folder])
        with pytest.raises(InputError, match=message):
            with output_job(run, tmp_path / "out.txt") as job:
                job.paths[0].write_text(raw.read_text())
                change()
        assert not (tmp_path / "out.txt").exists()
    run = Run(rule="read", params={}, inputs=[raw, folder])
    with output_job(run, tmp_path / "out.txt") as job:
        job.paths[0].write_text(raw.read_text() + (folder / "a.json").read_text())
    assert json.loads(prov_path(tmp_path / "out.txt").read_text())["inputs"][0]["bytes"] == 8


def test_an_output_copied_away_with_its_record_is_still_the_output_it_describes(
        tmp_path, monkeypatch):
    """A released model shared with its record (copied or downloaded into another folder,
    a name the record's tree never had): a job reading it was refused as "not among the
    outputs its record lists", and verify said the same. The output the record is named for
    is the one beside it; the record's other names still point into its tree."""
    import shutil

    from paramill.errors import InputError

    tree = tmp_path / "project"
    (tree / "data").mkdir(parents=True)
    monkeypatch.chdir(tree)
    (tree / "data" / "raw.txt").write_text("raw")
    from pathlib import Path

    mid = make_step(Path("data"), "mid.txt", [Path("data/raw.txt")], "mid")
    folder = Path("data/shards")
    run = Run(rule="ingest", params={}, inputs=[mid])
    with atomic_output(folder, prov_path(folder)) as (tmp, tmp_prov):
        tmp.mkdir()
        (tmp / "shard-0.parquet").write_text("0")
        run.write({folder: tmp}, {folder: tmp_prov}, rows_in=None, rows_out=None)
    shared = tmp_path / "shared"
    shared.mkdir()
    for name in ("mid.txt", "mid.txt.prov.json", "shards.prov.json"):
        shutil.copy(tree / "data" / name, shared / name)
    shutil.copytree(tree / "data" / "shards", shared / "shards")
    monkeypatch.chdir(tmp_path)
    for copy in (shared / "mid.txt", shared / "shards"):
        assert verify(copy, recursive=False) == []  # the inputs are found in the tree
        out = _job(shared, f"from-{copy.name}.txt", [copy])
        assert json.loads(prov_path(out).read_text())["input_records"][0]["output"] == str(copy)
    shutil.rmtree(tree)  # the tree gone: the inputs cannot be checked, the output can
    assert [f.path for f in verify(shared / "mid.txt", recursive=False)] == ["data/raw.txt"]
    from paramill import cli

    for copy in (shared / "mid.txt", shared / "shards"):
        assert verify(copy, inputs=False) == []
        assert cli.main(["provenance", "verify", "--outputs-only", str(copy)]) == 0
    (shared / "shards" / "shard-0.parquet").write_text("changed")
    assert [(f.path, f.problem[:30]) for f in verify(shared / "shards", inputs=False)] == [
        (str(shared / "shards" / "shard-0.parquet"), "output changed since the recor")]
    (shared / "shards" / "shard-0.parquet").write_text("0")
    (shared / "mid.txt").write_text("edited")
    with pytest.raises(InputError, match="mid.txt: changed since `step` wrote it"):
        _job(shared, "refused.txt", [shared / "mid.txt"])
    (shared / "shards" / "shard-1.parquet").write_text("1")
    assert [f.problem for f in verify(shared / "shards", inputs=False)] == ["file not in the record"]
    with pytest.raises(InputError, match="shard-1.parquet: not among the outputs its record"):
        _job(shared, "refused.txt", [shared / "shards"])
    shutil.copy(shared / "mid.txt.prov.json", shared / "renamed.txt.prov.json")
    (shared / "renamed.txt").write_text("mid")  # another name: not what the record describes
    with pytest.raises(InputError, match="renamed.txt: not among the outputs its record"):
        _job(shared, "refused.txt", [shared / "renamed.txt"])
