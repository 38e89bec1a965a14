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
