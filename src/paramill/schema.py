"""The config schema, generated from the stages' settings declarations.

Every key of ``config.yaml`` is declared once, in the stage that reads it (a dataclass per
section, :mod:`paramill.settings`); this module assembles them into the JSON Schema that
``paramill config resolve`` validates with. The schema is committed
(``configs/config.schema.yaml``) so that validating a config imports no stage; a test
fails when it differs from :func:`generate`. Regenerate with ``paramill config schema
--write``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml

from paramill.bitext.settings import BitextSection
from paramill.pairs.settings import PairsSection
from paramill.embed.settings import EmbedSection
from paramill.evaluate.settings import EvaluateSection
from paramill.filters import settings as filter_settings
from paramill.lexicon.pmi import LexiconSettings
from paramill.nmt.settings import NmtSection
from paramill.settings import Settings, object_schema, section, setting
from paramill.twitter.settings import TwitterSection

RuleName = Annotated[str, {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}]
#: sbatch options: each -X or --name, with an optional value (=value or a separate word)
#: made of characters no shell gives a meaning to
_VALUE = "[A-Za-z0-9_.,:/@%+=-]+"
_OPTION = f"(-[A-Za-z]|--[A-Za-z][A-Za-z0-9-]*)(={_VALUE}|[ \t]+(?!-){_VALUE})?"
SBATCH_OPTIONS = f"^[ \t]*{_OPTION}([ \t]+{_OPTION})*[ \t]*$"
#: a directory the pipeline writes under: not empty, not only slashes (the file system root)
DIRECTORY = "^(?![ \t]*/*[ \t]*$)"
DIRECTORY_EXPLAIN = {"x-explain": "must name a directory: not empty, not / (outputs would be "
                                  "written under the file system root)"}
#: every rule of rules/*.smk (a test keeps it equal to them): resources for another name
#: would be dropped in silence
RULES = (
    "all",
    "backtranslation_stats",
    "bitext_stats",
    "classifier_train",
    "clean",
    "corpus_analysis",
    "diversity_stats",
    "embed_export",
    "embed_train",
    "harvest",
    "heldout",
    "ingest",
    "kenlm_train",
    "lexicon",
    "lexicon_simlex",
    "nmt_convert",
    "nmt_data",
    "nmt_train",
    "nmt_translate",
    "pairs_ingest",
    "pairs_stats",
    "parascore_model",
    "plot_bitext_outcomes",
    "provenance_summary",
    "score_by_method",
    "select",
    "spm_train",
    "sts_data",
    "sts_download",
    "sts_eval",
    "sweep",
    "tokens",
    "twitter_growth",
    "twitter_identify",
    "twitter_month",
)  # and score_<filter> for every filter


@dataclass(frozen=True)
class RuleResources(Settings):
    threads: int = setting(None, "Threads (cores) for the rule; SLURM cpus_per_task.",
                           no_default=True, minimum=1)
    mem_mb: int = setting(None, "Memory in MB.", no_default=True, minimum=1)
    runtime: int = setting(None, "Wall time in minutes.", no_default=True, minimum=1)
    gpu: int = setting(None, "GPUs per job (the SLURM plugin's gpu resource; --gpus).",
                       no_default=True, minimum=0)
    gpu_model: str = setting(None, "GPU model for the request (e.g. a100), with gpu.",
                             no_default=True, pattern="^[A-Za-z0-9_.-]+$")
    gres: str = setting(None, "Raw generic resource (e.g. gpu:a100:1) for sites that want --gres "
                        "instead of --gpus.", no_default=True,
                        pattern="^[a-z]+(:[A-Za-z0-9_-]+)?:[0-9]+$")
    slurm_partition: str = setting(
        None, "Partition for this rule's jobs (over the profile's default).", no_default=True,
        pattern="^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
    retry_growth: float = setting(
        None, "What a retry multiplies mem_mb and runtime by, once an attempt: a job the "
        "cluster killed at its memory or time limit (or out of host memory, exit status 3) asks "
        "for more when Snakemake resubmits it (the SLURM profile's retries: 2). Default 2 (8000 "
        "MB, then 16000, then 32000); 1 asks for the same each time. A first attempt asks for "
        "mem_mb and runtime as given; the trainings that resume from their checkpoints "
        "(nmt_train, embed_train, parascore_model) grow mem_mb only.", no_default=True,
        minimum=1, maximum=16)
    max_mem_mb: int = setting(
        None, "The most memory in MB any attempt asks for (the partition's MaxMemPerNode): a "
        "retry whose grown mem_mb would pass it asks for this instead: a request over the "
        "partition's limit pends for ever under SLURM's default EnforcePartLimits=NO (or is "
        "refused by sbatch). Not below mem_mb. Unset: no bound.", no_default=True, minimum=1)
    max_runtime: int = setting(
        None, "The most wall time in minutes any attempt asks for (the partition's MaxTime), as "
        "max_mem_mb for runtime. Not below runtime. Unset: no bound.", no_default=True,
        minimum=1)
    local: bool = setting(
        None, "Run this rule's jobs where snakemake runs (Snakemake's localrule), never "
        "submitted through an executor such as SLURM's: for a rule that needs the web, which "
        "many clusters' compute nodes lack. Default: true for harvest and sts_download (the X "
        "API, news pages' cards, the STS archives), false for every other rule.",
        no_default=True)
    slurm_extra: str = setting(
        None, "Extra sbatch flags for this rule, as options (--name=value, --name value, -X "
        "value) whose values hold letters, digits and _ . , : / @ % + = - only: the SLURM plugin "
        "submits through a shell, so nothing else reaches it. Not for GPUs (use gpu/gres; the "
        "plugin rejects --gres/--gpus here).", no_default=True, pattern=SBATCH_OPTIONS,
        **{"not": {"pattern": "--(gres|gpus)"}, "x-explain":
           "not sbatch options of a safe form: each -X or --name with an optional value "
           "(=value or one word) of letters, digits and _ . , : / @ % + = - (nothing a shell "
           "would read: no $, `, ;, |, &, quotes, brackets or spaces inside a value)"})


@dataclass(frozen=True)
class PipelineConfig(Settings):
    work_dir: str = setting("work", "Directory for intermediate files (ingested and cleaned "
                           "shards, keys, logs of stages).", pattern=DIRECTORY,
                           **DIRECTORY_EXPLAIN)
    results: str = setting("results", "Directory for published outputs (stats, corpora, results "
                           "tables).", pattern=DIRECTORY,
                           **DIRECTORY_EXPLAIN)
    log_dir: str = setting("logs", "Directory for rule logs and benchmark files.", pattern=DIRECTORY,
                           **DIRECTORY_EXPLAIN)
    container: str = setting(
        "paramill.sif", "Image every job runs in when Snakemake is given --sdm apptainer: a "
        ".sif file (scripts/build-container.sh apptainer) or a docker:// URI; ignored otherwise. "
        "Letters, digits and _ . / : @ + - only (no spaces: the path reaches a shell).",
        pattern="^[A-Za-z0-9_./:@+-]+$",
        **{"x-explain": "an image path or URI of letters, digits and _ . / : @ + - only (no "
                        "spaces or shell characters: it reaches a shell)"})
    bitext: BitextSection = section(BitextSection, "Bilingual (Czech-English) input corpora, "
                                    "ingest and cleaning.")
    pairs: PairsSection = section(
        PairsSection, "Paraphrase-pair corpora (released corpora, MT outputs with references) "
        "read straight into candidates: filters, selection, embeddings and the lexicon without "
        "NMT. A config with only pair corpora trains no translation model.")
    nmt: NmtSection = section(
        NmtSection, "Back-translation (ParaNMT §3.1, Wieting 2017 §3): SentencePiece subwords, "
        "CS->EN and EN->CS transformers trained with OpenNMT-py (or your own models), converted "
        "to and decoded with CTranslate2, one job per bitext shard.")
    embed: EmbedSection = section(
        EmbedSection, "Paraphrastic sentence embeddings (ParaNMT §4-5, Wieting 2017 §4), trained "
        "on the back-translated pairs (1-best candidates that differ from their reference).")
    filters: filter_settings.FiltersSection = section(
        filter_settings.FiltersSection, "Filter scores over every candidate (Wieting 2017 "
        "§5.4-5.7, ParaNMT §3.2, ParaBank 2 §3.1), then selection into the released corpus. "
        "Scoring never drops rows; selection does.")
    twitter: TwitterSection = section(
        TwitterSection, "Twitter URL paraphrases (Lan et al. 2017): news accounts' tweets paired "
        "with other tweets sharing their URLs, filtered, scored by a paraphrase identifier, grown "
        "month by month.")
    lexicon: LexiconSettings = section(
        LexiconSettings, "Paraphrase lexicon from the released corpus (ParaNMT appendix A.1).")
    evaluate: EvaluateSection = section(EvaluateSection, "Evaluation data.")
    resources: dict[RuleName, RuleResources] = setting(
        factory=dict, doc="Per-rule threads and cluster resources, keyed by rule name; a rule "
        "takes its entry here over its built-in defaults. Example: {clean: {mem_mb: 16000, "
        "runtime: 240}}, {nmt_train: {gpu: 1, gpu_model: a100}}. Under SLURM these become the "
        "job's request; locally `--resources gpu=N` limits how many GPU jobs run at once.",
        **{"x-rules": list(RULES)})


def generate() -> dict[str, Any]:
    """The JSON Schema of a paramill config."""
    root = object_schema(PipelineConfig)
    filters = root["properties"]["filters"]
    root["properties"]["filters"] = {**filter_settings.section_schema(), "default": {},
                                     "description": filters["description"]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "paramill configuration",
            "description": "Every key of a paramill config file. The Snakefile validates the "
                           "config against this schema before any job runs (unknown keys are "
                           "errors) and fills in the defaults below. Generated from the stages' "
                           "settings declarations by `paramill config schema`: do not edit.",
            **root}


def dump(schema: dict[str, Any]) -> str:
    """The committed file's text: YAML, keys in declaration order."""
    header = ("# Generated by `paramill config schema --write` from the settings declared in\n"
              "# src/paramill/*/settings.py and the stage modules. Do not edit by hand.\n")
    return header + yaml.safe_dump(schema, sort_keys=False, allow_unicode=True, width=100)


#: the README's configuration table is generated between these lines
README_MARKERS = ("<!-- config-reference: generated by `paramill config schema --write` -->",
                  "<!-- config-reference: end -->")


def _sections(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, node) of every section (object with declared keys), depth first."""
    out = []
    for name, sub in node.get("properties", {}).items():
        where = f"{path}.{name}" if path else name
        if sub.get("type") == "object" and "properties" in sub:
            out.append((where, sub))
            out += _sections(sub, where)
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def reference(schema: dict[str, Any] | None = None) -> str:
    """The README's configuration table: one row per section, its keys and their defaults
    (a launch-only key marked †, with a line under the table saying what that means)."""
    schema = schema or generate()
    props = schema["properties"]
    rows = ["| section | keys (default) | what it is |", "| --- | --- | --- |"]
    top = [f"`{k}` ({_short(v['default'])})" for k, v in props.items() if v.get("type") != "object"]
    rows.append(f"| (top level) | {', '.join(top)} | where intermediate files, published outputs "
                "and logs go |")
    for where, node in _sections(schema):
        keys = []
        for key, sub in node["properties"].items():
            nested = sub.get("type") == "object" and "properties" in sub
            keys.append(f"`{key}`" + ("†" if sub.get("x-launch") else "")
                        + ("" if nested or "default" not in sub else f" ({_short(sub['default'])})"))
        rows.append(f"| `{where}` | {_cell(', '.join(keys))} | {_cell(node.get('description', ''))} |")
    for where, node in [("bitext.corpora.NAME", props["bitext"]["properties"]["corpora"]),
                        ("pairs.corpora.NAME", props["pairs"]["properties"]["corpora"]),
                        ("resources.RULE", props["resources"])]:
        keys = ", ".join(f"`{k}`" for k in node["additionalProperties"]["properties"])
        rows.append(f"| `{where}` | {keys} | {_cell(node['description'])} |")
    rows += ["", "† launch-only: how a job runs, not what it computes; the rules pass it outside "
             "their params, so changing it re-runs nothing (the next job that runs takes it)."]
    return "\n".join(rows) + "\n"


def readme_with_reference(readme: str, table: str) -> str:
    """``readme`` with the text between README_MARKERS replaced by ``table``."""
    start, end = README_MARKERS
    if start not in readme or end not in readme:
        raise ValueError(f"README.md has no configuration reference markers {start!r} ... {end!r}")
    head, rest = readme.split(start, 1)
    return f"{head}{start}\n{table}{end}{rest.split(end, 1)[1]}"


def write() -> list[Path]:
    """Write the packaged schema and, in a checkout, README.md's configuration table."""
    from importlib import resources

    generated = generate()
    target = Path(str(resources.files("paramill").joinpath("data/config.schema.yaml")))
    target.write_text(dump(generated))  # a symlink to configs/config.schema.yaml in a checkout
    written = [target.resolve()]
    readme = Path(__file__).resolve().parents[2] / "README.md"
    if readme.exists():
        readme.write_text(readme_with_reference(readme.read_text(), reference(generated)))
        written.append(readme)
    return written
