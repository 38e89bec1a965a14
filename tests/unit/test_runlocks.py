"""paramill.runlocks: a Snakemake run's end removes its own lock files, not another run's;
``snakemake --unlock`` still removes them all. (The overlap itself, with real Snakemake runs:
tests/workflow/test_harvest_workflow.py.)"""

from __future__ import annotations

from types import SimpleNamespace

from snakemake.persistence.file import FilePersistence

from paramill.run.runlocks import keep_other_runs_locks


def run_holding(lockdir, *names):
    for name in names:
        (lockdir / name).write_text("results/x.tsv\n")
    return SimpleNamespace(_lockdir=str(lockdir), _lockfile={
        name.split(".")[1]: str(lockdir / name) for name in names})


def test_a_runs_end_removes_its_own_locks_and_unlock_removes_all(tmp_path):
    assert keep_other_runs_locks() is True
    assert keep_other_runs_locks() is True  # once: the second call wraps nothing again
    lockdir = tmp_path / "locks"
    lockdir.mkdir()
    other = run_holding(lockdir, "0.input.lock", "0.output.lock")  # a long run's
    this = run_holding(lockdir, "1.input.lock", "1.output.lock")
    FilePersistence.unlock(this)
    assert sorted(p.name for p in lockdir.iterdir()) == ["0.input.lock", "0.output.lock"]
    assert this._lockfile == {}
    FilePersistence.unlock(other)  # the last run out: the folder goes, as Snakemake's did
    assert not lockdir.exists()
    lockdir.mkdir()
    run_holding(lockdir, "0.input.lock", "3.output.lock")  # left by runs killed outright
    FilePersistence.cleanup_locks(SimpleNamespace(_lockdir=str(lockdir), _lockfile={}))  # --unlock
    assert not lockdir.exists()
