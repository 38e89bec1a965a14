"""A job SLURM gave a GPU that its library cannot use stops, naming both, rather than run on
the CPU behind its user's back (hours where minutes were asked for)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from paramill.run import device
from paramill.nmt.engine import select

SLURM = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE", "CUDA_VISIBLE_DEVICES")
#: this machine's torch cannot use CUDA (the CI's CPU build): the refusal is what runs here
NO_CUDA = not torch.cuda.is_available()


@pytest.fixture
def slurm_env(monkeypatch):
    for name in SLURM:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_what_slurm_gave_the_job(slurm_env):
    assert device.given_gpus() is None
    slurm_env.setenv("SLURM_GPUS_ON_NODE", "0")
    assert device.given_gpus() is None  # a count of none
    slurm_env.setenv("SLURM_GPUS_ON_NODE", "2")
    assert device.given_gpus() == "SLURM_GPUS_ON_NODE=2"
    slurm_env.setenv("SLURM_JOB_GPUS", "0")  # an index, GPU 0: the job's list first
    assert device.given_gpus() == "SLURM_JOB_GPUS=0"
    slurm_env.setenv("SLURM_STEP_GPUS", "1,3")
    assert device.given_gpus() == "SLURM_STEP_GPUS=1,3"
    slurm_env.setenv("CUDA_VISIBLE_DEVICES", "")  # hidden on purpose (a CPU trial child)
    assert device.given_gpus() is None
    assert device.pick("auto") == "cpu" and device.pick("cpu") == "cpu"


@pytest.mark.skipif(not NO_CUDA, reason="torch can use CUDA here: the job would use the GPU")
def test_torch_on_a_gpu_it_cannot_use_stops_naming_the_gpu_and_why(slurm_env):
    assert device.pick("auto") == "cpu"  # no GPU given: the CPU, as ever
    slurm_env.setenv("SLURM_JOB_GPUS", "0")
    with pytest.raises(device.GpuNotUsable) as info:
        device.pick("auto")
    message = str(info.value)
    assert "SLURM gave this job GPUs (SLURM_JOB_GPUS=0) but torch cannot use CUDA" in message
    why = device.torch_cuda_problem()
    assert why and why in message
    if torch.version.cuda is None:
        assert why == f"torch {torch.__version__} is a CPU build"
    assert device.pick("cpu") == "cpu"  # asked for the CPU: no surprise to refuse
    with pytest.raises(ValueError, match="no GPU is visible"):
        device.pick("cuda")


@pytest.mark.skipif(not NO_CUDA, reason="torch can use CUDA here")
def test_translation_on_a_gpu_ctranslate2_cannot_see_stops(slurm_env):
    import ctranslate2

    if ctranslate2.get_cuda_device_count():
        pytest.skip("CTranslate2 sees a GPU here")
    assert select("auto", "nmt.translate", "auto").device == "cpu"
    slurm_env.setenv("SLURM_GPUS_ON_NODE", "1")
    with pytest.raises(device.GpuNotUsable, match=r"\(SLURM_GPUS_ON_NODE=1\) but CTranslate2 "
                       r"[0-9.]+ cannot use CUDA: it sees no CUDA device"):
        select("auto", "nmt.translate", "auto")
    assert select("cpu", "nmt.translate", "auto").device == "cpu"


@pytest.mark.skipif(not NO_CUDA, reason="torch can use CUDA here")
def test_a_job_given_a_gpu_it_cannot_use_ends_with_one_line_before_its_work(tmp_path):
    pairs = tmp_path / "p.tsv"
    pairs.write_text("a man reads\ta man is reading\nthe dog runs\ta dog runs\n")
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_GPUS": "0", "PARAMILL_PROGRESS": "0"}
    proc = subprocess.run([sys.executable, "-m", "paramill.cli", "embed", "train", str(pairs),
                           "--out", str(tmp_path / "m.pt"), "--spec",
                           '{"components": ["word"], "units": "word", "dim": 8}'],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("paramill ")]
    assert line.startswith("paramill embed train: error: SLURM gave this job GPUs "
                           "(SLURM_JOB_GPUS=0) but torch cannot use CUDA")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.tsv"]  # nothing written
