"""The same inputs, config and seed give byte-identical outputs, and no config string ever
runs as a command.

Two copies of the project run the same DAG from nothing in two directories: the default
DAG with the tiny NMT overlay (the session's tiny run, see conftest.py, is the first). Every
file under the results and work folders must have the same sha256 in both (provenance
records and the report's table of them excepted: they hold times and hosts by design).

A third copy runs the same DAG under a hostile overlay: every free-text config value that
reaches a rule (the folders, every input path, the Twitter state, raw folder and archive,
the STS sets' names and years) carries ``$(touch …)`` and backticks; it also runs the
Twitter rules that take those keys (a day's harvest and the identifier), and no marker
file may appear. (Its outputs are not compared: data files name their inputs by design,
the shards' ``source_file`` for one.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from .conftest import TINY_NMT, copy_tiny_project, digests, snakemake

pytestmark = pytest.mark.slow

#: a shell would run both commands if a value reached it unquoted
HOSTILE = "x $(touch INJECTED-dollar) `touch INJECTED-tick`"
MARKERS = ("INJECTED-dollar", "INJECTED-tick")

#: string-valued config keys (after defaults) left out of the hostile overlay, and why
NOT_INJECTED = {
    "twitter.identify.sentence_encoder": "a module name or model directory, passed inside --settings JSON (the shell-line scan covers it); loaded only with model encoder",
    "container": "read by Snakemake's container directive (with --sdm apptainer only); no shell line has it",
    "bitext.corpora.*.format": "enum",
    "nmt.train_corpora.*": "name pattern",
    "nmt.spm.model_type": "enum",
    "nmt.train.batch_type": "enum",
    "nmt.train.decay_method": "enum",
    "nmt.train.optim": "enum",
    "nmt.train.precision": "enum",
    "nmt.translate.engine": "enum",
    "nmt.translate.batch_type": "enum",
    "nmt.sample.engine": "enum",
    "nmt.translate.method": "enum",
    "nmt.translate.device": "enum",
    "nmt.translate.compute_type": "enum",
    "nmt.sample.strategy": "enum",
    "nmt.sample.device": "enum",
    "filters.heldout.corpora.*": "name pattern",
    "filters.classifier.encoder": "enum",
    "filters.classifier.device": "enum",
    "filters.releases.*.rank_by": "column-name pattern",
    "filters.select.paranmt_score": "column-name pattern",
    "filters.enabled.*": "enum",
    "filters.bleu.method": "enum",
    "filters.kenlm.memory": "pattern (a size)",
    "filters.parascore.components.*": "enum",
    "filters.dual_xent.device": "enum",
    "filters.dual_xent.batch_type": "enum",
    "embed.model.components.*": "enum",
    "embed.model.combine": "enum",
    "embed.model.units": "enum",
    "embed.model.sp_model_type": "enum",
    "embed.models.*.units": "enum",
    "embed.sweep.grid.units.*": "enum",
    "embed.models.*.components.*": "enum",
    "embed.train.device": "enum",
    "embed.train.linked_negatives": "enum",
    "embed.sweep.grid.components.*.*": "enum",
    "embed.sweep.grid.release.*": "name pattern",
    "embed.release": "name pattern",
    "twitter.source": "enum",
    "twitter.dates.*": "date pattern",
    "twitter.harvest.accounts.*": "screen-name pattern",
    "twitter.harvest.*_env": "variable-name pattern",
    "twitter.harvest.api_url": "URL pattern (letters, digits and . _ ~ % / + = - : [ ] only)",
    "twitter.harvest.search_languages.*": "language-code pattern (2-3 lower-case letters)",
    "twitter.pairs.languages.*": "language-code pattern (2-3 lower-case letters)",
    "twitter.identify.train.*.format": "enum",
    "twitter.identify.embed_model": "a model name here (a path is injected as twitter.identify.train.*.path is)",
    "twitter.identify.model": "enum",
    "twitter.identify.encoder_precision": "enum",
    "lexicon.release": "name pattern",
    "lexicon.token_pattern": "a regular expression, passed inside --settings JSON (the shell-line scan covers it)",
    "lexicon.word_pattern": "a regular expression, passed inside --settings JSON (the shell-line scan covers it)",
    "evaluate.sts.*.format": "enum",
}


def _matches(key: str, pattern: str) -> bool:
    parts, want = key.split("."), pattern.split(".")
    return len(parts) == len(want) and all(
        w == "*" or w == p or (w.startswith("*") and p.endswith(w[1:])) for p, w in zip(parts, want))


def string_keys(cfg, path=()):
    if isinstance(cfg, dict):
        for k, v in cfg.items():
            yield from string_keys(v, (*path, str(k)))
    elif isinstance(cfg, list):
        for i, v in enumerate(cfg):
            yield from string_keys(v, (*path, str(i)))
    elif isinstance(cfg, str):
        yield ".".join(path)


def hostile_overlay(root: Path) -> Path:
    """Copy the sample's inputs under a hostile folder name; an overlay pointing at them."""
    from paramill import config as paramill_config
    from paramill.config.checks import WRITTEN_PATHS as written_paths

    base = yaml.safe_load((root / "config.yaml").read_text())
    for extra in TINY_NMT[2:]:
        tiny = yaml.safe_load(Path(extra).read_text())
        for key, value in tiny.items():
            base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    data = root / "data" / HOSTILE
    shutil.copytree(root / "data" / "sample", data)

    def moved(path: str) -> str:
        return path.replace("data/sample/", f"data/{HOSTILE}/", 1)

    corpora = {name: {k: moved(v) if k in ("path", "cs", "en") else v for k, v in spec.items()}
               for name, spec in base["bitext"]["corpora"].items()}
    sts = [{**s, "name": f"{s['name']} {HOSTILE}", "year": f"{s['year']} {HOSTILE}", "path": moved(s["path"])}
           for s in base["evaluate"]["sts"]]
    identify = base["twitter"]["identify"]
    overlay = {
        "work_dir": f"work {HOSTILE}", "results": f"results {HOSTILE}", "log_dir": f"logs {HOSTILE}",
        "bitext": {"corpora": corpora},
        "twitter": {"archive": [moved(p) for p in base["twitter"]["archive"]],
                    "raw_dir": f"data/{HOSTILE}/raw", "state": f"data/{HOSTILE}/state.json",
                    "identify": {"train": [{**t, "path": moved(t["path"])} for t in identify["train"]]}},
        "lexicon": {"simlex": moved(base["lexicon"]["simlex"])},
        "evaluate": {"sts": sts, "download_dir": f"data/{HOSTILE}/sts"},
    }
    path = root / "hostile.yaml"
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))
    # every string key is injected or listed with the reason it is not
    merged = yaml.safe_load((root / "config.yaml").read_text())
    for layer in [yaml.safe_load(Path(p).read_text()) for p in TINY_NMT[2:]] + [overlay]:
        merged = _merge(merged, layer)
    resolved = paramill_config.resolve(merged)
    for key in string_keys(resolved):
        value = _get(resolved, key)
        assert HOSTILE in value or any(_matches(key, p) for p in NOT_INJECTED), (
            f"config key {key} is a string that reaches the rules: inject it here or say why not")
    # an injected path that is not there before the run is one the workflow writes: the
    # config check must know it (a brace in it is refused before it exists)
    written = {tuple(key.split(".")) for key in string_keys(resolved)
               if HOSTILE in _get(resolved, key) and not key.endswith((".name", ".year"))
               and not (root / _get(resolved, key)).exists()}
    assert written and written <= set(written_paths), written
    return path


def _merge(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **{k: _merge(a.get(k), v) for k, v in b.items()}}
    return b


def _get(cfg, key):
    for part in key.split("."):
        cfg = cfg[int(part)] if isinstance(cfg, list) else cfg[part]
    return cfg


def run(root: Path, *targets: str):
    overlay = root / "hostile.yaml"
    if not overlay.exists():
        overlay = hostile_overlay(root)
    return snakemake(root, *targets, "--configfile", "config.yaml", TINY_NMT[2], str(overlay))


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    root = copy_tiny_project(tmp_path_factory.mktemp("hostile"))
    run(root)
    # the Twitter rules that read the hostile archive, raw folder, state and training file
    run(root, f"work {HOSTILE}/twitter/harvest/2026-10-05.parquet", f"results {HOSTILE}/twitter/paraid.json")
    return root


def test_no_config_value_ever_runs_as_a_command(hostile_run):
    root = hostile_run
    found = [p for m in MARKERS for p in root.rglob(m)]
    assert found == [], found
    assert (root / f"results {HOSTILE}" / "lexicon" / "simlex.tsv").exists()
    assert (root / f"results {HOSTILE}" / "twitter" / "paraid.json").exists()
    assert (root / f"work {HOSTILE}" / "twitter" / "harvest" / "2026-10-05.parquet").exists()


def test_the_same_inputs_give_byte_identical_outputs(tiny_run, tmp_path):
    root = copy_tiny_project(tmp_path)
    snakemake(root, *TINY_NMT)
    first, second = tiny_run.digests, digests(root)
    assert len(first) > 100 and set(first) == set(second)
    differ = sorted(k for k in first if first[k] != second[k])
    assert differ == [], f"{len(differ)} of {len(first)} files differ: {differ[:20]}"
