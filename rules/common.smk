# Shared helpers for the rules: config resolution, paths, resources. Declarative glue only;
# the work is done by the `paramill` command line.
import json
import os
import subprocess
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from paramill.embed.sweep import model_settings, sweep_points  # pure Python, no torch

# The `paramill` command sits beside the Python that runs Snakemake (.venv/bin).
_bin = str(Path(sys.executable).parent)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ.update(PATH=os.pathsep.join([_bin, os.environ.get("PATH", "")]))


def _resolve(cfg):
    """Validate the config with paramill's schema, fill defaults; errors name the key."""
    proc = subprocess.run(
        ["paramill", "config", "resolve", "--with-digest", "-"],
        input=json.dumps(cfg, default=str),  # YAML dates (2026-11-22) as strings
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise WorkflowError(proc.stderr.strip())
    return json.loads(proc.stdout)


_resolved = _resolve(dict(config))
config.clear()
config.update(_resolved["config"])
# recorded in every provenance file
os.environ.update(PARAMILL_CONFIG_DIGEST=_resolved["digest"])

WORK = config["workdir"]
RESULTS = config["results"]
LOGS = config["logdir"]
CORPORA = list(config["bitext"]["corpora"])


wildcard_constraints:
    corpus="[A-Za-z0-9][A-Za-z0-9_-]*",
    shard="shard-[0-9]+",
    direction="cs-en|en-cs",
    lang="cs|en",
    model="[A-Za-z0-9][A-Za-z0-9_-]*",
    selection="[A-Za-z0-9][A-Za-z0-9_-]*",
    date="[0-9]{4}-[0-9]{2}-[0-9]{2}",
    month="[0-9]{4}-[0-9]{2}",


def as_json(value):
    """A config slice as compact JSON, for `params:` (a change re-runs the rule)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def rule_threads(rule_name, default=1):
    """A rule's threads: config `resources.<rule>.threads` over the default."""
    return config["resources"].get(rule_name, {}).get("threads", default)


def rule_resources(rule_name, **defaults):
    """A rule's resources: config `resources.<rule>` over the defaults given here.

    gpu/gpu_model/gres/slurm_partition/slurm_extra pass straight to the SLURM plugin.
    """
    given = {k: v for k, v in config["resources"].get(rule_name, {}).items() if k != "threads"}
    return {**defaults, **given}


def corpus_files(wildcards):
    spec = config["bitext"]["corpora"][wildcards.corpus]
    return [spec["cs"], spec["en"]] if spec["format"] == "moses" else [spec["path"]]


def earlier_keys(wildcards):
    """Key files of the corpora listed before this one: their pairs win duplicates."""
    before = CORPORA[: CORPORA.index(wildcards.corpus)]
    return [f"{WORK}/clean/{c}.keys.parquet" for c in before]


def corpus_shards(corpus):
    """Cleaned shard names of a corpus (known once its clean checkpoint has run)."""
    shards_dir = checkpoints.clean.get(corpus=corpus).output.shards
    return sorted(p.stem for p in Path(shards_dir).glob("shard-*.parquet"))


def nmt_corpora():
    return config["nmt"]["train_corpora"] or CORPORA


def training_shards(wildcards):
    """Every cleaned shard of the corpora that train the subword and NMT models."""
    return [f"{WORK}/shards/{c}/{s}.parquet" for c in nmt_corpora() for s in corpus_shards(c)]


def all_candidates(wildcards):
    """The back-translated candidate table of every shard of every corpus."""
    return [f"{WORK}/candidates/{c}/{s}.parquet" for c in CORPORA for s in corpus_shards(c)]


def heldout_candidates(wildcards):
    """Candidate tables the held-out pairs are drawn from (filters.heldout.corpora)."""
    names = config["filters"]["heldout"]["corpora"] or CORPORA
    return [f"{WORK}/candidates/{c}/{s}.parquet" for c in names for s in corpus_shards(c)]


def own_model(direction):
    return config["nmt"]["models"].get(direction)


def spm_model(direction, side):
    """SentencePiece model of a direction's source or target side (own or trained)."""
    own = own_model(direction)
    if own:
        return ancient(own[f"{side}_spm"])
    lang = direction.split("-")[0 if side == "source" else 1]
    return f"{WORK}/nmt/spm/{lang}.model"


def checkpoint_to_convert(wildcards):
    own = own_model(wildcards.direction)
    if own and own.get("checkpoint"):
        return ancient(own["checkpoint"])
    return f"{WORK}/nmt/{wildcards.direction}/model.pt"


def translation_model(direction):
    """The CTranslate2 model of a direction: the user's own, or converted here."""
    own = own_model(direction)
    if own and own.get("ct2"):
        return ancient(own["ct2"])
    return f"{WORK}/nmt/{direction}/ct2"


FILTERS = config["filters"]["enabled"]


def selection_names():
    return ["default", *config["filters"]["selections"]]


def selection_settings(name):
    """`filters.select` overlaid with the named variant (`default` is `select` itself)."""
    if name == "default":
        return config["filters"]["select"]
    return {**config["filters"]["select"], **config["filters"]["selections"][name]}


def score_files(wildcards):
    """Every enabled filter's score table of every candidate shard."""
    return [
        f"{WORK}/scores/{f}/{c}/{s}.parquet"
        for f in FILTERS
        for c in CORPORA
        for s in corpus_shards(c)
    ]


def parascore_model():
    given = config["filters"]["parascore"]["model"]
    return ancient(given) if given else f"{WORK}/filters/parascore/model.pt"


def filter_models(name):
    """Models a filter scores with, as {cli option: path}."""
    if name == "kenlm":
        return {"model": f"{WORK}/filters/kenlm/lm.binary"}
    if name == "classifier":
        return {"model": f"{WORK}/filters/classifier/model.pt"}
    if name == "parascore":
        return {"model": parascore_model()}
    if name == "dual_xent":
        return {
            "cs_en": translation_model("cs-en"),
            "en_cs": translation_model("en-cs"),
            "cs_spm": spm_model("cs-en", "source"),
            "en_spm": spm_model("cs-en", "target"),
        }
    return {}


def filter_inputs(name):
    """Input function of a score rule: the shard's candidates, models, and (dual_xent) source."""

    def inputs(wildcards):
        files = {"candidates": f"{WORK}/candidates/{wildcards.corpus}/{wildcards.shard}.parquet"}
        if name == "dual_xent":
            files["source"] = f"{WORK}/shards/{wildcards.corpus}/{wildcards.shard}.parquet"
        return {**files, **filter_models(name)}

    return inputs


def filter_model_args(name):
    """params function: the score command's models (and source shard) as JSON."""
    keys = list(filter_models(name)) + (["source"] if name == "dual_xent" else [])

    def args(wildcards, input):
        return as_json({k: str(input[k]) for k in keys})

    return args


def sampling():
    return config["nmt"]["translate"]["method"] == "sample"


def back_translate_inputs(wildcards):
    files = {
        "shard": f"{WORK}/shards/{wildcards.corpus}/{wildcards.shard}.parquet",
        "model": translation_model("cs-en"),
        "src_spm": spm_model("cs-en", "source"),
        "tgt_spm": spm_model("cs-en", "target"),
    }
    if sampling():  # dual scoring needs the reverse model
        files["bwd"] = translation_model("en-cs")
    return files


def default_targets():
    """What `snakemake` builds by default (the provenance table, which follows them all,
    aside): the diversity table when sampling, the lexicon (with SimLex when given), the
    Twitter branch when enabled."""
    targets = [f"{RESULTS}/bitext/stats.json", f"{RESULTS}/nmt/backtranslation.json",
               f"{WORK}/nmt/en-cs/ct2", f"{RESULTS}/report/bitext_outcomes.png"]
    targets += [f"{RESULTS}/corpus/{s}/datasheet.md" for s in selection_names()]
    targets += [f"{RESULTS}/embed/{m}/sts.tsv" for m in config["embed"]["models"]]
    targets += [f"{RESULTS}/nmt/diversity.tsv"] if sampling() else []
    targets.append(f"{RESULTS}/lexicon/simlex.tsv" if config["lexicon"]["simlex"]
                   else f"{RESULTS}/lexicon/lexicon.tsv")
    if config["twitter"]["enabled"]:
        targets += [f"{RESULTS}/twitter/growth.tsv", f"{RESULTS}/twitter/paraid.json"]
    return targets


def twitter_months():
    """Months of the configured dates and of the days already harvested."""
    days = set(config["twitter"]["dates"])
    days |= {p.stem for p in Path(f"{WORK}/twitter/harvest").glob("*.parquet")}
    return sorted({d[:7] for d in days})


def month_days(wildcards):
    """The month's configured dates and its days already harvested (periodic runs)."""
    days = {d for d in config["twitter"]["dates"] if d.startswith(wildcards.month)}
    days |= {p.stem for p in Path(f"{WORK}/twitter/harvest").glob(f"{wildcards.month}-*.parquet")}
    return [f"{WORK}/twitter/harvest/{d}.parquet" for d in sorted(days)]


def paraid_embed_model():
    """The identifier's embedding model: a name in embed.models, a path, or none."""
    name = config["twitter"]["identify"]["embed_model"]
    if not name:
        return []
    if name in config["embed"]["models"]:
        return f"{WORK}/embed/{name}/model.pt"
    return ancient(name)


def embed_settings(name):
    """(model spec, training settings, selection) of a named model or a sweep point."""
    return model_settings(config["embed"], name)


def embed_pairs(wildcards):
    """The released corpus a model trains on."""
    return f"{RESULTS}/corpus/{embed_settings(wildcards.model)[2]}/corpus.parquet"


def sts_paths():
    return [d["path"] for d in config["evaluate"]["sts"]]
