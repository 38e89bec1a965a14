"""Helpers for workflow tests: a copy of the project in a temp dir and real snakemake runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from paramill.filters import names as filter_names
from paramill.io.outputs import sha256_file

REPO = Path(__file__).resolve().parents[2]
PROJECT_FILES = ["Snakefile", "config.yaml", "rules", "configs", "envs", "report", "profiles",
                 "slurm", "data/sample"]


def copy_project(dest: Path) -> Path:
    for name in PROJECT_FILES:
        src = REPO / name
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(src.readlink())
        elif src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copy2(src, target)
    return dest


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run the real snakemake (the one installed beside this Python) in ``workdir``."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    env = {**__import__("os").environ, "PARAMILL_PROGRESS": "0"}
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + ":" + env.get("PATH", "")
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


_JOB_LINE = re.compile(r"^(?:localrule|rule|localcheckpoint|checkpoint) (\w+):$", re.M)


def executed(proc: subprocess.CompletedProcess) -> Counter:
    """The jobs Snakemake actually ran, counted per rule (from its log of started jobs)."""
    text = proc.stderr + proc.stdout
    return Counter(m.group(1) for m in _JOB_LINE.finditer(text) if m.group(1) != "all")


TINY_NMT = ["--configfile", "config.yaml", str(Path(__file__).with_name("tiny-nmt.yaml"))]
#: the line of config.yaml that copy_tiny_project removes: the tiny runs train one embedding
#: model, `word` (the default DAG test trains both). Snakemake merges a --configfile into the
#: mappings before it, so an overlay cannot take a model away. A model's two jobs cost about
#: 12 s of CPU a run, mostly importing torch, and the tiny DAG runs about ten times a suite.
TINY_DROPS = "    word-trigram: {components: [word, trigram]}"


def copy_tiny_project(dest: Path) -> Path:
    """A copy of the project for runs with the tiny overlay (TINY_NMT)."""
    root = copy_project(dest)
    config = root / "config.yaml"
    lines = config.read_text().splitlines(keepends=True)
    dropped = [line for line in lines if line.startswith(TINY_DROPS)]
    assert len(dropped) == 1, f"config.yaml no longer has one line {TINY_DROPS!r}"
    config.write_text("".join(line for line in lines if line not in dropped))
    return root

ALL_FILTERS = filter_names()  # as the filter classes declare them (the generated schema)
#: filters.enabled in tiny-nmt.yaml (the DAG tests need fewer score jobs)
TINY_FILTERS = ["langid", "overlap", "parascore"]
#: The jobs that follow any change of the released corpora: the default config's 2 embedding
#: models (the tiny overlay does not export them: sentence-transformers' import alone takes
#: seconds a job), the tiny project's one.
EMBED = {"embed_train": 2, "sts_eval": 2}
EXPORT = {"embed_export": 2}
TINY_EMBED = {"embed_train": 1, "sts_eval": 1}
SELECT = {"select": 2, "corpus_analysis": 2}
#: the lexicon of the default selection and its SimLex evaluation
LEXICON = {"lexicon": 1, "lexicon_simlex": 1}


def _reads_tokens(name: str) -> bool:
    from paramill import config

    return bool(config.schema()["properties"]["filters"]["properties"][name].get("x-reads-tokens"))


def scoring(filters, shards):
    """The score jobs of ``shards`` new or changed candidate shards, and their token stage
    when an enabled filter reads it."""
    jobs = {f"score_{f}": shards for f in filters}
    if any(_reads_tokens(f) for f in filters):
        jobs["tokens"] = shards
    return jobs


def after_candidates(filters, shards, embed=TINY_EMBED, export=False):
    """The jobs that follow a change of every back-translated shard (``embed``: the embedding
    models' jobs; ``export``: they are exported too, as in the default config)."""
    jobs = {"heldout": 1, **scoring(filters, shards), **SELECT, **embed, **LEXICON,
            **(EXPORT if export else {})}
    for name, rule in (("kenlm", "kenlm_train"), ("classifier", "classifier_train"),
                       ("parascore", "parascore_model")):
        if name in filters:
            jobs[rule] = 1
    return jobs


#: the Twitter branch on the sample (5 days, 2 months)
TWITTER = {"harvest": 5, "twitter_identify": 1, "twitter_month": 2, "twitter_growth": 1}
_BITEXT_NMT = {"ingest": 2, "clean": 2, "bitext_stats": 1, "plot_bitext_outcomes": 1,
               "provenance_summary": 1, "spm_train": 2, "nmt_data": 1, "nmt_train": 2,
               "nmt_convert": 2, "backtranslation_stats": 1}
#: Every job of the default DAG on the sample (4 cleaned shards).
FULL_DAG = {**_BITEXT_NMT, "nmt_translate": 4,
            **after_candidates(ALL_FILTERS, 4, embed=EMBED, export=True), **TWITTER}
#: The tiny project's (one shard a corpus, one embedding model, the overlay's filters, no
#: Twitter branch).
TINY_DAG = {**_BITEXT_NMT, "nmt_translate": 2, **after_candidates(TINY_FILTERS, 2)}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("project"))


def digests(root: Path, work: str = "work", results: str = "results") -> dict[str, str]:
    """sha256 of every file under the work and results folders, keyed by its path below
    ``work/`` or ``results/`` (whatever the folders are called), provenance excepted: the
    records, the report's table of them and its summary page hold times and hosts by design."""
    out = {}
    for top, name in ((work, "work"), (results, "results")):
        for path in sorted((root / top).rglob("*")):
            rel = f"{name}/{path.relative_to(root / top)}"
            if not path.is_file() or rel.endswith(".prov.json") or "/report/provenance." in rel \
                    or rel.endswith("/report/glance.html"):
                continue
            out[rel] = sha256_file(path)
    return out


@dataclass(frozen=True)
class TinyRun:
    """The tiny default DAG, run once a session. The incremental tests go on to change
    ``root``; the reproducibility test uses the digests taken right after the run."""

    root: Path
    digests: dict[str, str]


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> TinyRun:
    root = copy_tiny_project(tmp_path_factory.mktemp("tiny"))
    first = snakemake(root, *TINY_NMT)
    assert executed(first) == TINY_DAG
    return TinyRun(root, digests(root))
