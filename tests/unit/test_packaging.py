"""paramill as a Python package: `pip install .` into a fresh environment gives a working
`paramill` command; the metadata says what the pins support."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_metadata_matches_what_the_project_uses():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    # `license = "MIT"` (an SPDX string, PEP 639) needs setuptools >= 77
    assert isinstance(meta["project"]["license"], str)
    floor = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert tuple(map(int, re.search(r">=\s*([\d.]+)", floor).group(1).split(".")))[:1] >= (77,)
    # every binary pin has wheels for 3.11 and 3.12 (pyonmttok has none
    # for 3.13), so the range is 3.11-3.12 and the running Python is inside it
    spec = meta["project"]["requires-python"]
    assert spec == ">=3.11,<3.13"
    assert (3, 11) <= sys.version_info[:2] < (3, 13)


def test_constraints_pin_every_dependency_inside_its_range():
    """make install installs with constraints.txt (`make lock`): each dependency of
    pyproject.toml, the test extra's too, is pinned there to one version its range allows,
    and no pin carries a local label (torch's `+cpu` would refuse the CUDA wheel)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pins = {}
    for number, line in enumerate((REPO / "constraints.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==" and not Version(spec.version).local, f"line {number}: {line}"
        assert canonicalize_name(req.name) not in pins, f"line {number}: {req.name} pinned twice"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in meta["dependencies"] + meta["optional-dependencies"]["test"]]
    wanted.append(Requirement(re.search(r"opennmt-py==[\d.]+", (REPO / "Makefile").read_text())[0]))
    missing = [str(r) for r in wanted if canonicalize_name(r.name) not in pins]
    assert missing == [], f"not in constraints.txt (run make lock): {missing}"
    outside = [f"{r} (pinned {pins[canonicalize_name(r.name)]})" for r in wanted
               if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert outside == [], f"constraints.txt pins outside pyproject.toml's ranges: {outside}"
    # the Makefile installs with it, and a changed constraints.txt reinstalls
    makefile = (REPO / "Makefile").read_text()
    assert makefile.count("install -c $(CONSTRAINTS)") == 3
    assert re.search(r"^\$\(STAMP\):.*\$\(CONSTRAINTS\)", makefile, re.M)


def test_the_conda_environments_pin_what_pyproject_pins():
    """envs/*.yaml are written by hand (conda users' path, not the tested one): every pip
    requirement there is a dependency of pyproject.toml with the very same specifier, so a
    version bump in pyproject.toml that forgets them fails here instead of on a cluster."""
    import yaml
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {canonicalize_name(r.name): r.specifier
              for r in map(Requirement, meta["dependencies"])}
    files = sorted((REPO / "envs").glob("*.yaml"))
    assert files
    for path in files:
        deps = yaml.safe_load(path.read_text())["dependencies"]
        (pip,) = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
        assert pip, path
        python = next(d for d in deps if isinstance(d, str) and d.startswith("python="))
        assert python == "python=3.11", f"{path.name}: {python} (requires-python is 3.11-3.12)"
        assert pip[-1] == "-e ..", f"{path.name}: paramill itself is not installed"
        for line in pip[:-1]:
            req = Requirement(line)
            name = canonicalize_name(req.name)
            assert name in wanted, f"{path.name}: {line} is not a dependency of pyproject.toml"
            assert req.specifier == wanted[name], (
                f"{path.name}: {line}, but pyproject.toml says {req.name}{wanted[name]}")


def test_the_lock_drops_local_labels_and_paramill_itself():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from lock import pins
    finally:
        sys.path.remove(str(REPO / "scripts"))
    freeze = "torch==2.13.0+cpu\npolars==2.1.0\n-e git+file:///x#egg=paramill\nparamill==0.1.0\nZstandard==0.25.0\n"
    assert pins(freeze) == ["polars==2.1.0", "torch==2.13.0", "Zstandard==0.25.0"]


@pytest.mark.slow
def test_pip_install_dot_gives_a_working_paramill_command(tmp_path):
    # built from a copy: setuptools writes build/ and egg-info next to the sources
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src",
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(source)], check=True, capture_output=True, timeout=600)
    wheel = next(dist.glob("paramill-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "paramill/cli.py" in names and any(n.startswith("paramill/data/") and n.endswith(".yaml")
                                              for n in names)
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    # the dependencies come from this environment's site-packages (a path entry: its .pth
    # files, this checkout's editable install among them, are not processed)
    site = Path(subprocess.run([str(env_dir / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"),
                    "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import paramill; print(paramill.__file__)"],
                           check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert where.startswith(str(site))  # the installed copy, not this checkout's src/
    done = subprocess.run([str(env_dir / "bin" / "paramill"), "--help"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and "embed" in done.stdout and "twitter" in done.stdout
    done = subprocess.run([str(env_dir / "bin" / "paramill"), "config", "schema", "--help"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0


def test_the_units_handed_out_first_are_modules_of_the_suite():
    """A renamed or deleted module in tests/conftest.FIRST_GROUPS would silently drop to the
    end of the queue (where a long one leaves the other worker idle)."""
    from ..conftest import FIRST_GROUPS, TINY_GROUP

    assert FIRST_GROUPS.count(TINY_GROUP) == 1
    modules = [m for m in FIRST_GROUPS if m != TINY_GROUP]
    assert len(set(modules)) == len(modules)
    missing = [m for m in modules if not (REPO / m).is_file()]
    assert missing == []
