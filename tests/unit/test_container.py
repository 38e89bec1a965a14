"""The container definitions build from Debian and the project's own install, and the
workflow names the image for --sdm apptainer."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_both_definitions_are_debian_plus_make_install():
    docker = (REPO / "container/Dockerfile").read_text()
    apptainer = (REPO / "container/paramill.def").read_text()
    assert re.findall(r"^FROM (\S+)", docker, re.M) == ["debian:bookworm"]
    assert re.search(r"^From: debian:bookworm$", apptainer, re.M)
    for text in (docker, apptainer):
        assert "make install PYTHON=python3" in text and "PARAMILL_NO_BROWSER=1" in text
        # Debian packages and the Makefile (PyPI) only: no other index, no model download
        assert not re.search(r"--index-url|--extra-index-url|conda|wget|curl ", text)
        # the Boost packages the KenLM build needs (scripts/build-kenlm.sh)
        need = re.search(r"need=\(([^)]*)\)", (REPO / "scripts/build-kenlm.sh").read_text()).group(1)
        assert all(pkg in text for pkg in need.split() if pkg.startswith("lib"))
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", ".git", "work", "results"} <= set(ignored)
    # Apptainer's %files has no ignore file: the host's venv must not stand in for the image's
    post = apptainer.split("%post", 1)[1]
    assert post.index("rm -rf .venv") < post.index("make install")


def test_the_workflow_names_the_image_and_the_build_script_parses():
    assert "container: CONTAINER" in (REPO / "Snakefile").read_text()
    assert 'CONTAINER = config["container"]' in (REPO / "rules/common.smk").read_text()
    from paramill.schema import PipelineConfig
    assert PipelineConfig().container == "paramill.sif"
    subprocess.run(["bash", "-n", str(REPO / "scripts/build-container.sh")], check=True)
    done = subprocess.run(["bash", str(REPO / "scripts/build-container.sh"), "nope"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "unknown tool nope" in done.stderr


def test_make_install_adds_cuda12_cublas_where_torch_is_a_cuda_build(tmp_path):
    """GPU nodes and the container install PyPI's CUDA torch: there the Makefile's install
    line asks for the gpu extra (nvidia-cublas-cu12, which CTranslate2 needs); with a CPU
    torch (CI, this machine) it does not. The Makefile's own expression is run, against a
    stand-in torch that reports CUDA 13 and against the installed one."""
    import sys

    line = next(x for x in (REPO / "Makefile").read_text().splitlines()
                if " install " in x and '-e ".[test' in x)
    expression = re.search(r"\$\$\((.*)\)\]", line).group(1).replace("$(BIN)/python", sys.executable)
    stub = tmp_path / "torch"
    stub.mkdir()
    (stub / "__init__.py").write_text("class version:\n    cuda = '13.0'\n")

    def extras(pythonpath):
        env = {**__import__("os").environ, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
        return subprocess.run(["bash", "-c", f"echo \"$({expression})\""], capture_output=True,
                              text=True, env=env, check=True).stdout.strip()

    assert extras(str(tmp_path)) == ",gpu"
    import torch
    assert extras(None) == (",gpu" if torch.version.cuda else "")
    gpu = re.search(r'^gpu = \[(.*)\]$', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    assert "nvidia-cublas-cu12" in gpu
