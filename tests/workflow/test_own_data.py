"""The README's own-data examples, run as written on corpora of one's own (a thousand
lines: a Moses bitext, a reference with two MT systems' outputs, tweets) to a release: each
config as the README shows it, each command as it is typed, on a fresh copy of the project."""

from __future__ import annotations

import polars as pl
import pytest

from .conftest import REPO, copy_project
from .examples import commands, named_configs, own_corpora, run

pytestmark = pytest.mark.slow

#: what each of the README's own-data commands releases
RELEASED = {"mybitext.yaml": "results/corpus/default/corpus.tsv",
            "mypairs.yaml": "results/corpus/default/corpus.tsv",
            "mytweets.yaml": "results/twitter/2026-10/paraphrases.tsv"}


def test_the_readmes_own_data_examples_run_as_written_to_a_release(tmp_path):
    readme = (REPO / "README.md").read_text()
    configs = named_configs(readme)
    assert sorted(configs) == sorted(RELEASED)
    runs = [(line, words) for line, words in commands(readme)
            if any(name in words for name in configs) and "--profile" not in words]
    assert len(runs) == 3
    for line, words in runs:
        (name,) = [w for w in words if w in configs]
        project = copy_project(tmp_path / name.removesuffix(".yaml"))
        own_corpora(project)
        (project / name).write_text(configs[name])
        proc = run(project, words, dry=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"{line}\n{out[-6000:]}"
        assert (project / RELEASED[name]).stat().st_size > 0, line
        # the run says which config it read and ends by naming where its results are
        (said,) = [x for x in out.splitlines() if x.startswith("paramill: config from")]
        assert name in said and "config.yaml is not used" in said
        assert any(x.startswith("paramill: results in results/:") for x in out.splitlines())
        if name != "mytweets.yaml":  # the released pairs lead back to the own corpus's lines
            # and the run says what the release kept of the candidates
            (kept,) = [x for x in out.splitlines() if x.startswith("paramill: release default kept ")]
            assert kept.endswith("every step: results/corpus/default/selection.json"), kept
            release = pl.read_parquet(project / "results/corpus/default/corpus.parquet")
            assert release.height > 100
            corpus = "europarl" if name == "mybitext.yaml" else "wmt21"
            assert release["pair_id"].str.starts_with(f"{corpus}-").all()
        else:
            accepted = (project / RELEASED[name]).read_text().splitlines()
            assert len(accepted) > 100
