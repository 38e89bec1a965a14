import os
import signal
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.io.tableread import parquet_rows
from paramill.io.tablewrite import ShardWriter
from paramill.io.outputs import (
    atomic_output,
    owner_is_gone,
    scratch_dir,
    sha256_file,
    sweep_leftovers,
)
from paramill.io.compressed import compression_of, open_compressed

LINES = ["první řádek", "second line", "třetí"]


@pytest.mark.parametrize("kind,expected", [("plain", "plain"), ("gz", "gzip"), ("xz", "xz"),
                                           ("zst", "zstd"), ("bz2", "bz2")])
def test_open_compressed_reads_every_format_by_magic(write_file, kind, expected):
    # the name says nothing: detection must use the magic bytes
    path = write_file(f"data-{kind}.txt", LINES, kind)
    assert compression_of(path) == expected
    with open_compressed(path) as fh:
        assert fh.read().decode().splitlines() == LINES


def test_sha256_matches_known_digest(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_atomic_output_renames_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_output(target) as (tmp,):
        tmp.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    assert os.listdir(target.parent) == ["out.txt"]


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target_dir = tmp_path / "shards"
    with pytest.raises(RuntimeError):
        with atomic_output(target, target_dir) as (tmp, tmp_dir):
            tmp.write_text("half")
            tmp_dir.mkdir()
            (tmp_dir / "a").write_text("x")
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_atomic_output_replaces_an_old_directory(tmp_path):
    target = tmp_path / "d"
    target.mkdir()
    (target / "stale").write_text("old")
    with atomic_output(target) as (tmp,):
        tmp.mkdir()
        (tmp / "fresh").write_text("new")
    assert os.listdir(target) == ["fresh"]


def test_a_file_output_never_replaces_a_folder_nor_a_folder_output_a_file(tmp_path):
    """`--out` given a folder deleted the folder and everything in it when the job ended (a
    model file took its place); a folder output given a file's path deleted the file. Both
    are an error naming the path; nothing is renamed, no temporary stays; the other outputs
    of the job are not renamed either."""
    from paramill.errors import InputError

    folder, file, other = tmp_path / "results", tmp_path / "notes.txt", tmp_path / "other.txt"
    folder.mkdir()
    (folder / "keep.txt").write_text("precious")
    file.write_text("precious")
    for final, written, what in ((folder, "file", "is a folder, and this output is a file"),
                                 (file, "folder", "is a file, and this output is a folder")):
        with pytest.raises(InputError, match=rf"{final.name}: {what}: writing it would delete"):
            with atomic_output(other, final) as (tmp_other, tmp):
                tmp_other.write_text("new")
                if written == "file":
                    tmp.write_text("model")
                else:
                    tmp.mkdir()
    assert (folder / "keep.txt").read_text() == "precious" and file.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "results"]
    (tmp_path / "link").symlink_to(folder)  # a link is replaced, never followed
    with atomic_output(tmp_path / "link") as (tmp,):
        tmp.write_text("x")
    assert (tmp_path / "link").read_text() == "x" and (folder / "keep.txt").exists()


def test_shard_writer_splits_rows_into_shards(tmp_path):
    schema = pa.schema([pa.field("n", pa.int64())])
    writer = ShardWriter(tmp_path / "s", schema, shard_size=4)
    writer.write(pa.table({"n": list(range(6))}))
    writer.write(pa.table({"n": list(range(6, 11))}))
    paths = writer.close()
    assert [p.name for p in paths] == ["shard-00000.parquet", "shard-00001.parquet",
                                       "shard-00002.parquet"]
    assert [parquet_rows([p]) for p in paths] == [4, 4, 3]
    assert pq.read_table(paths[1])["n"].to_pylist() == [4, 5, 6, 7]


def _ended_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_only_what_ended_processes_of_this_host_left(tmp_path, capsys):
    host = socket.gethostname()
    dead, alive = _ended_pid(), os.getpid()
    (tmp_path / f"lexicon-{dead}@{host}-abc123").mkdir()           # killed job: goes
    (tmp_path / f"lexicon-{dead}@{host}-abc123" / "part.parquet").write_bytes(b"x")
    (tmp_path / f"lexicon-{dead}@{host}-x_y9").write_text("")      # a file too: goes
    (tmp_path / f"lexicon-{alive}@{host}-def456").mkdir()          # running job: stays
    (tmp_path / f"lexicon-{dead}@other-node-1-ghi789").mkdir()     # another host: stays
    (tmp_path / f"select-{dead}@{host}-jkl012").mkdir()            # another prefix: stays
    (tmp_path / "lexicon-tmpabcd").mkdir()                         # no owner: stays
    removed = sweep_leftovers(tmp_path, "lexicon-")
    assert sorted(p.name for p in removed) == [f"lexicon-{dead}@{host}-abc123",
                                               f"lexicon-{dead}@{host}-x_y9"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["lexicon-tmpabcd", f"lexicon-{alive}@{host}-def456",
         f"lexicon-{dead}@other-node-1-ghi789", f"select-{dead}@{host}-jkl012"])
    assert "left by a job that was killed" in capsys.readouterr().err
    assert owner_is_gone(f"{dead}@{host}") and not owner_is_gone(f"{alive}@{host}")
    assert not owner_is_gone(f"{dead}@other-node") and not owner_is_gone("garbage")


def test_scratch_dir_is_named_for_its_owner_and_removed(tmp_path):
    host = socket.gethostname()
    (tmp_path / f"kenlm-{_ended_pid()}@{host}-zzz").mkdir()
    with scratch_dir(tmp_path / "work", "kenlm-") as first:
        assert first.name.startswith(f"kenlm-{os.getpid()}@{host}-") and first.is_dir()
    assert not first.exists()
    with scratch_dir(tmp_path, "kenlm-") as second:
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("kenlm-")] == [second.name]
    with pytest.raises(RuntimeError), scratch_dir(tmp_path, "kenlm-") as third:
        raise RuntimeError("stage failed")
    assert not third.exists()


HOLD = """
import sys, time
from paramill import cli
from paramill.io.outputs import atomic_output, scratch_dir

def hold(args):
    with scratch_dir(args.dir, "job-") as work, atomic_output(args.out) as (tmp,):
        (work / "spill").write_text("partial")
        tmp.write_text("partial")
        print("ready", flush=True)
        time.sleep(60)
    return 0

parser = cli.build_parser()
sub = parser._subparsers._group_actions[0]
hold_parser = sub.add_parser("hold")
hold_parser.add_argument("out")
hold_parser.add_argument("dir")
hold_parser.set_defaults(func=hold)
cli.build_parser = lambda: parser
sys.exit(cli.main(["hold", sys.argv[1], sys.argv[2]]))
"""


def _start_holding_job(tmp_path):
    out, work = tmp_path / "out.txt", tmp_path / "work"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out), str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    assert len(list(tmp_path.glob(".out.txt.tmp-*"))) == 1 and len(list(work.iterdir())) == 1
    return proc, out, work


def test_a_terminated_job_removes_its_temporaries(tmp_path):
    # SLURM's time limit and scancel, and snakemake stopping a run, send SIGTERM
    proc, out, work = _start_holding_job(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert not out.exists() and not list(tmp_path.glob(".out.txt.tmp-*"))
    assert list(work.iterdir()) == []


def test_what_a_killed_job_left_is_removed_by_the_next_one(tmp_path):
    proc, out, work = _start_holding_job(tmp_path)
    proc.kill()  # SIGKILL: no chance to clean up
    proc.wait(timeout=30)
    assert len(list(tmp_path.glob(".out.txt.tmp-*"))) == 1 and len(list(work.iterdir())) == 1
    with scratch_dir(work, "job-") as fresh, atomic_output(out) as (tmp,):
        assert list(work.iterdir()) == [fresh]
        tmp.write_text("complete")
    assert out.read_text() == "complete" and not list(tmp_path.glob(".out.txt.tmp-*"))


def test_a_json_file_that_cannot_be_read_is_one_error_naming_it(tmp_path):
    """A harvest state, stats or meta file edited by hand: the file and line, not json's
    words alone; still a ValueError, as json's own error was."""
    from paramill.io.jsonfiles import MalformedJson, read_json

    bad = tmp_path / "state.json"
    bad.write_text('{\n  "users": {"1": "cnn",}\n}\n')
    with pytest.raises(MalformedJson, match=r"state.json:2: not JSON \(Expecting property name "
                                            r"enclosed in double quotes, column 24\)") as caught:
        read_json(bad)
    assert isinstance(caught.value, ValueError) and caught.value.utf8
    bad.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(MalformedJson, match=r"state.json: not UTF-8 \(byte 10\)"):
        read_json(bad)
    bad.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MalformedJson, match=r"state.json: not JSON \(nested too deeply to read\)"):
        read_json(bad)
    bad.write_text('{"a": [1, 2]}')
    assert read_json(bad) == {"a": [1, 2]}


def test_an_output_whose_folder_cannot_be_written_is_refused_before_the_block_runs(tmp_path):
    from paramill.errors import InputError
    from paramill.io.outputs import check_writable

    (tmp_path / "file").write_text("x\n")
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    ran = []
    for path, says in ((tmp_path / "file" / "deeper" / "out.tsv", f"{tmp_path / 'file'} is a file, not a folder"),
                       (tmp_path / "link" / "out.tsv", f"is a link to {tmp_path / 'gone'}, which does not exist")):
        with pytest.raises(InputError) as caught:
            with atomic_output(tmp_path / "fine.json", path):
                ran.append(path)
        assert caught.value.path == str(path) and says in str(caught.value)
    assert ran == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "link"]  # fine.json's folder probe left nothing
    # a folder that can be made is made, and the probe leaves nothing in it
    check_writable(tmp_path / "new" / "sub" / "out.parquet")
    assert (tmp_path / "new" / "sub").is_dir() and list((tmp_path / "new" / "sub").iterdir()) == []
    # a folder where no file may be created (/proc takes none, even from root)
    if os.path.isdir("/proc/self"):
        with pytest.raises(InputError, match="cannot be written"):
            check_writable("/proc/paramill-test.json")


def test_the_folders_the_output_check_made_are_named_and_removed_only_while_empty(tmp_path):
    from paramill.errors import InputError
    from paramill.io.outputs import check_writable, remove_made_folders

    (tmp_path / "there").mkdir()
    made = check_writable(tmp_path / "there" / "a" / "b" / "x.json", tmp_path / "there" / "c" / "y.json",
                          tmp_path / "there" / "a" / "z.json")
    there = tmp_path / "there"
    assert made == [there / "a" / "b", there / "a", there / "c"]  # deepest first, each once
    (there / "c" / "someone-elses.txt").write_text("x\n")
    remove_made_folders(made)
    assert sorted(p.name for p in there.iterdir()) == ["c"]  # c holds a file: kept
    # a later output that cannot be written removes the folders the earlier ones made
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_writable(there / "d" / "e" / "ok.json", tmp_path / "file" / "bad.json")
    assert sorted(p.name for p in there.iterdir()) == ["c"]


def test_a_json_cache_merged_by_two_jobs_keeps_both_jobs_entries(tmp_path):
    """Past days rebuilt side by side each read the URL cache at start and wrote the whole back
    at the end: the last rename won and the other job's expansions were lost."""
    from paramill.io.jsonfiles import merge_json, read_json

    cache = tmp_path / "cache.json"
    cache.write_text('{"a": "1"}')
    load = lambda p: read_json(p)  # noqa: E731
    assert merge_json(cache, {"b": "2"}, load) == {"a": "1", "b": "2"}
    # a second job that read the file before the first wrote: what it adds is laid over
    assert merge_json(cache, {"c": "3", "a": "1b"}, load, indent=None) == {"a": "1b", "b": "2", "c": "3"}
    assert cache.read_text() == '{"a": "1b", "b": "2", "c": "3"}\n'
    assert merge_json(tmp_path / "new" / "x.json", {"z": "9"}, load) == {"z": "9"}
    with pytest.raises(ValueError, match="not yours"):
        merge_json(cache, {"d": "4"}, lambda p: (_ for _ in ()).throw(ValueError(f"{p}: not yours")))
    assert read_json(cache) == {"a": "1b", "b": "2", "c": "3"}  # nothing written


def test_a_json_cache_is_merged_under_a_lock_another_process_waits_for(tmp_path):
    from paramill.io.jsonfiles import file_lock, read_json

    cache = tmp_path / "cache.json"
    cache.write_text('{"a": "1"}')
    code = ("import sys; from paramill.io.jsonfiles import merge_json, read_json; "
            "merge_json(sys.argv[1], {'b': '2'}, read_json); print('merged', flush=True)")
    with file_lock(cache):
        other = subprocess.Popen([sys.executable, "-c", code, str(cache)], stdout=subprocess.PIPE, text=True)
        try:
            other.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        assert other.poll() is None  # it waits for the lock this process holds
        cache.write_text('{"a": "1", "c": "3"}')  # what this job added while it held the lock
    out, _ = other.communicate(timeout=60)
    assert other.returncode == 0 and out == "merged\n"
    assert read_json(cache) == {"a": "1", "b": "2", "c": "3"}
    assert (tmp_path / ".cache.json.lock").exists()
