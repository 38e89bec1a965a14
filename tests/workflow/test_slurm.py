"""End to end through a real single-node SLURM (scripts/local-slurm.sh), with the profile."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from .conftest import REPO, TINY_NMT, copy_project, digests, snakemake
from .test_retries import PROBE

pytestmark = pytest.mark.slow

SCRIPT = REPO / "scripts" / "local-slurm.sh"


def _can_run_slurm() -> str | None:
    if os.geteuid() != 0:
        return "not root: the local SLURM needs root to install and start its daemons"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "SLURM is not installed and apt-get is not available to install it"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = _can_run_slurm()
    if reason:
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("slurm-state")
    env = {**os.environ, "PARAMILL_SLURM_DIR": str(state)}
    proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    yield env
    subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=120)


def _squeue(job_ids):
    """job id -> (state, GPU/gres request per job and per node)."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(job_ids),
                          "-O", "JobID:20,State:20,tres-per-job:40,tres-per-node:40"],
                         capture_output=True, text=True, check=True).stdout
    return {f[0]: (f[1], " ".join(f[2:])) for f in (line.split() for line in out.splitlines())}


#: the bitext outputs, compared byte for byte with the local run's. Not the subword models
#: or what follows them: a model trained in a SLURM job can differ from the same training
#: run locally in the last bits (the job's CPUs are SLURM's to give).
BITEXT = ("work/shards/", "results/bitext/stats.json", "results/bitext/outcomes.tsv")


#: what the SLURM run builds: the bitext, its statistics, both subword models and the NMT
#: training data: five rules, two levels of dependencies, a job asking for a GPU. The whole
#: default DAG runs locally in test_default_workflow.py; here the point is the executor and
#: the profile. (Training and translating through SLURM too took 263 s of the suite's
#: critical path, mostly the plugin's status polling, which backs off 10 s a check.)
TARGETS = ["results/bitext/stats.json", "work/nmt/spm/cs.model", "work/nmt/spm/en.model",
           "work/nmt/data"]
#: a day's harvest (the sample's archive): a local rule, run where snakemake runs
HARVEST = "work/twitter/harvest/2026-10-05.parquet"


def overlays(root):
    """The tiny overlay, then the sample's shard size again (the tiny overlay makes one shard a
    corpus): both runs clean 4 shards, so that more than one shard of a corpus is compared."""
    shards = root / "shards.yaml"
    shards.write_text("bitext:\n  ingest: {shard_size: 1000}\n")
    return [*TINY_NMT, str(shards)]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The same targets run locally (not the session's tiny run: this module then needs no
    other module's worker, and pytest-xdist can put it where there is room)."""
    root = copy_project(tmp_path_factory.mktemp("local"))
    snakemake(root, *TARGETS, *overlays(root))
    return root


def test_dag_through_slurm_equals_a_local_run(cluster, local, tmp_path):
    remote = copy_project(tmp_path / "remote")
    # the GPU mapping: a config key becomes the plugin's gpu resource (fake GPUs here)
    # and a rule's threads: SLURM's CPUs for the job, and what the job's pools were given
    (remote / "gpu.yaml").write_text("resources:\n  bitext_stats: {gpu: 1}\n"
                                     "  spm_train: {threads: 2}\n")
    proc = snakemake(remote, *TARGETS, HARVEST, "--profile", "slurm", *overlays(remote), "gpu.yaml",
                     "--slurm-init-seconds-before-status-checks", "1", timeout=1200)
    text = proc.stdout + proc.stderr
    assert "submitted with SLURM jobid" in text
    # one GPU of the node's two fake ones: nothing to warn of (three would be: the unit tests)
    assert not [line for line in text.splitlines() if line.startswith("paramill: rule") and "GPU" in line]

    records = [json.loads(p.read_text()) for p in remote.rglob("*.prov.json")
               if ".snakemake" not in p.parts]
    by_rule = {}
    for record in records:
        if record["rule"] == "harvest":  # the web: a local rule (resources.harvest.local)
            assert record["slurm_job_id"] is None, "harvest was submitted to SLURM"
            continue
        assert record["slurm_job_id"], f"{record['rule']} did not run under SLURM"
        by_rule.setdefault(record["rule"], set()).add(record["slurm_job_id"])
    assert (remote / HARVEST).exists() and f"{HARVEST}.prov.json" in {
        str(p.relative_to(remote)) for p in remote.rglob("*.prov.json")}
    assert set(by_rule) == {"ingest", "clean", "bitext_stats", "spm_train", "nmt_data"}
    jobs = _squeue(sorted({j for ids in by_rule.values() for j in ids}))
    assert all(state == "COMPLETED" for state, _ in jobs.values()), jobs
    (stats_job,) = by_rule["bitext_stats"]
    assert "gpu:1" in jobs[stats_job][1]  # the job asked SLURM for one GPU
    (ingest_job, *_) = sorted(by_rule["ingest"])
    assert "gpu" not in jobs[ingest_job][1]
    threads = {r["rule"]: r["threads"]["given"] for r in records if r["rule"] != "harvest"}
    assert threads["spm_train"] == 2 and threads["ingest"] == 1, threads
    cpus = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(by_rule["spm_train"]),
                           "-O", "NumCPUs"], capture_output=True, text=True, check=True).stdout
    assert cpus.split() == ["2"] * len(by_rule["spm_train"])  # asked of SLURM, not only used

    local_files = {k: v for k, v in digests(local).items() if k.startswith(BITEXT)}
    remote_files = {k: v for k, v in digests(remote).items() if k.startswith(BITEXT)}
    assert sum(k.endswith(".parquet") for k in local_files) == 4 and remote_files == local_files
    assert sorted(p.name for p in (remote / "work/nmt/data").iterdir()) == \
        sorted(p.name for p in (local / "work/nmt/data").iterdir())


def _partition_max_time(value: str) -> None:
    subprocess.run(["scontrol", "update", "PartitionName=main", f"MaxTime={value}"], check=True,
                   capture_output=True, timeout=60)


def test_a_job_retried_through_slurm_asks_slurm_for_twice_the_memory_within_the_partition(
        cluster, tmp_path):
    """The profile retries (its `restart-times: 0` once cancelled `retries: 2`), and the
    retry's larger request reaches sbatch, bounded by `max_runtime`. SLURM's default
    (`EnforcePartLimits=NO`) accepts a job over its partition's `MaxTime` and leaves it
    pending for ever (reason `PartitionTimeLimit`), and the run waits on it: as the run
    starts, a rule whose retries could ask for more is named, with the key that bounds it."""
    root = copy_project(tmp_path)
    (root / "probe.smk").write_text(PROBE)
    run = ["-s", "probe.smk", "probe.txt", "--profile", "slurm",
           "--slurm-init-seconds-before-status-checks", "1"]
    try:
        # a partition of 12 minutes: the second attempt (10) passes, a third would ask 20
        _partition_max_time("00:12:00")
        proc = snakemake(root, *run, timeout=600)
        assert ("paramill: rule probe: its retry (attempt 3) asks for 20 minutes, over partition "
                "main's MaxTime of 12: SLURM may leave it pending for ever; set "
                "resources.probe.max_runtime: 12") in proc.stderr
        first = [line.split() for line in (root / "probe.txt").read_text().splitlines()]
        assert [(mem, minutes) for _, mem, minutes in first] == [("1000", "5"), ("2000", "10")]
        # a partition of 8: the retry's doubled 10 minutes would pend for ever; bounded, it asks 8
        for name in ("probe.txt", "attempts.txt"):
            (root / name).unlink()
        (root / "bound.yaml").write_text("resources:\n  ingest: {max_runtime: 8}\n")
        _partition_max_time("00:08:00")
        proc = snakemake(root, *run, "--configfile", "config.yaml", "bound.yaml", timeout=600)
        assert "paramill: rule" not in proc.stderr
    finally:
        _partition_max_time("INFINITE")
    attempts = [line.split() for line in (root / "probe.txt").read_text().splitlines()]
    assert [(mem, minutes) for _, mem, minutes in attempts] == [("1000", "5"), ("2000", "8")]
    limits = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(j for j, *_ in attempts),
                             "-O", "JobID:20,TimeLimit:20,MinMemory:20"],
                            capture_output=True, text=True, check=True).stdout
    by_job = {job: rest for job, *rest in (line.split() for line in limits.splitlines())}
    # SLURM's own record of what each attempt asked for
    assert [by_job[job] for job, *_ in attempts] == [["5:00", "1000M"], ["8:00", "2000M"]]


#: the embedding model a time limit stops: word units, small, epochs enough to be stopped in
EMBED = """embed:
  model: {dim: 16, hidden: 16}
  train: {epochs: 15, batch_size: 50, megabatch: 2}
"""
EMBED_MODEL = "work/embed/word/model.pt"


def _embed_corpus(root) -> None:
    """12,000 pairs as the released corpus embed_train reads (the rules before it are not
    run: ``--allowed-rules embed_train``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    words = np.array([f"w{i}" for i in range(300)])
    s1 = [" ".join(rng.choice(words, 6)) for _ in range(12_000)]
    s2 = [f"{a} {rng.choice(words)}" for a in s1]
    path = root / "results/corpus/default/corpus.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table({"s1": s1, "s2": s2}), path)
    (root / "embed.yaml").write_text(EMBED)


def test_embed_train_stopped_by_slurm_resumes_in_snakemakes_retry(cluster, tmp_path):
    """What a user meets at a time limit, through ``snakemake --profile slurm`` and the
    project's own embed_train rule: SLURM's SIGTERM (``scancel`` sends it as a time limit
    does, SIGKILL ``KillWait`` later) reaches ``paramill`` inside the plugin's ``srun`` step,
    which writes its checkpoint and ends; Snakemake resubmits the job; the retry resumes there,
    says why in the log it writes afresh, and writes the model of a run never stopped."""
    import time

    import torch

    local, remote = (copy_project(tmp_path / name) for name in ("local", "remote"))
    for root in (local, remote):
        _embed_corpus(root)
    args = [EMBED_MODEL, "--allowed-rules", "embed_train", "--configfile", "config.yaml", "embed.yaml"]
    snakemake(local, *args)

    env = {**os.environ, "PARAMILL_PROGRESS": "0"}
    env["PATH"] = os.path.dirname(sys.executable) + ":" + env["PATH"]
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", *args, "--profile", "slurm",
                             "--slurm-init-seconds-before-status-checks", "1"],
                            cwd=remote, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = remote / "logs/embed/embed_train.word.log"
    jobs = remote / ".snakemake/slurm_logs/rule_embed_train/word"
    try:
        deadline = time.monotonic() + 300
        while not (log.exists() and "id store of" in log.read_text()):  # the epochs start
            assert proc.poll() is None and time.monotonic() < deadline, "the job never began its epochs"
            time.sleep(0.2)
        (first,) = [p.stem for p in jobs.glob("*.log")]
        subprocess.run(["scancel", first], check=True, timeout=60)
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, out[-4000:]
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", out)
    assert len(submitted) == 2 and submitted[0] == first, out[-4000:]  # resubmitted once
    stopped = (jobs / f"{first}.log").read_text()  # a failed job's SLURM log is kept
    assert re.search(rf"\*\*\* JOB {first} ON \S+ CANCELLED AT", stopped), stopped[-2000:]
    text = log.read_text()  # the retry's
    assert "embed train: resuming in epoch " in text
    assert "; the run before was asked to stop (SIGTERM) and wrote it at " in text
    a, b = (torch.load(root / EMBED_MODEL, weights_only=True) for root in (local, remote))
    assert len(a["history"]) == 15 and a["history"] == b["history"]
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
