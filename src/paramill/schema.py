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
from paramill.config import layout
from paramill.config.typed import LAUNCH_NOTE, Settings, object_schema, section, setting
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
        None, 'What each retry multiplies mem_mb and runtime by (default 2: 8000 MB, then 16000, '
              'then 32000; 1: the same each time). Trainings that resume from checkpoints grow '
              'mem_mb only. Bounded by max_mem_mb and max_runtime.', no_default=True,
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
        None, "Run this rule's jobs where snakemake runs, never submitted to the cluster: for a "
              'rule that needs the web, which compute nodes often lack. Default: true for harvest'
              ' and sts_download, false for every other rule.',
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
        factory=dict, doc='Per-rule threads and cluster resources, keyed by rule name, over the '
                          "rule's defaults: {clean: {mem_mb: 16000, runtime: 240}}, {nmt_train: "
                          "{gpu: 1}}. Under SLURM they are the job's request; locally "
                          '`--resources gpu=N` bounds GPU jobs at once.',
        **{"x-rules": list(RULES)})


def generate() -> dict[str, Any]:
    """The JSON Schema of a paramill config file, as users write one: each stage's advanced
    keys under its ``advanced`` section (:mod:`paramill.config.layout`)."""
    return layout.unfold_schema(declared())


def declared() -> dict[str, Any]:
    """The JSON Schema of every key where its stage declares it (what the stages read)."""
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


def _type(node: dict[str, Any]) -> str:
    """A key's type as the reference shows it: `integer`, `one of: a, b`, `list of string`."""
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type(sub) for sub in node.get("oneOf", node.get("anyOf", [])))
    kind = node.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = node.get("items", {})
        inner = "object" if "properties" in items else _type(items)
        return f"list of {inner}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map of {_type(node['additionalProperties'])}"
    return kind


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(node: dict[str, Any]) -> str:
    if "default" not in node or node.get("type") == "object" and "properties" in node:
        return ""
    text = json.dumps(node["default"], ensure_ascii=False)
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def _tables(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, node) of every object with declared keys under ``node``, depth first:
    sections, a corpus's or a rule's entry (``NAME``), an item of a list of objects (``[]``)."""
    out = []
    if "properties" in node:
        out.append((path, node))
    for name, sub in node.get("properties", {}).items():
        out += _tables(sub, f"{path}.{name}" if path else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" in extra:
        out += _tables(extra, f"{path}.{'RULE' if path == 'resources' else 'NAME'}")
    items = node.get("items")
    if isinstance(items, dict) and "properties" in items:
        out += _tables(items, f"{path}[]")
    return out


def _nested(sub: dict[str, Any], where: str) -> str | None:
    """The path of the table that describes key ``where``'s own keys, if it has some."""
    extra = sub.get("additionalProperties")
    if "properties" in sub:
        return where
    if isinstance(extra, dict) and "properties" in extra:
        return f"{where}.{'RULE' if where == 'resources' else 'NAME'}"
    if isinstance(sub.get("items"), dict) and "properties" in sub["items"]:
        return f"{where}[]"
    return None


def reference_page(schema: dict[str, Any] | None = None) -> str:
    """The configuration reference (docs/configuration.md, generated at build time): every
    section, its keys with their type, default and description; launch-only keys marked."""
    schema = schema or generate()
    lines = [
        "# Configuration reference", "",
        "Generated from the settings each stage declares (`paramill config schema`), the same "
        "declarations the config is validated against: every key paramill reads, its type, its "
        "default and what it does. A key marked **launch-only** changes how a job runs, not "
        "what it computes: changing it re-runs nothing. How a config file is put together: "
        "[Your own data](own-data.md); what a change re-runs: [Incremental "
        "rebuilds](incremental.md).", ""]
    for path, node in _tables(schema, ""):
        title = path or "Top level"
        lines += [f"## `{title}`" if path else f"## {title}", ""]
        if node.get("description") and path:
            lines += [_cell(node["description"]), ""]
        rows = []
        for key, sub in node["properties"].items():
            table = _nested(sub, f"{path}.{key}" if path else key)
            where = f"[`{table}`](#{_anchor(table)})" if table else ""
            desc = _cell(sub.get("description", ""))
            if sub.get("x-launch"):
                desc = "**launch-only.** " + desc.replace(LAUNCH_NOTE, "").strip()
            if where:
                desc = f"{desc} See {where}."
            rows.append(f"| `{key}` | {_cell(_type(sub))} | {_default(sub)} | {desc} |")
        if rows:
            lines += ["| key | type | default | description |", "| --- | --- | --- | --- |",
                      *rows, ""]
    return "\n".join(lines)


def _anchor(path: str) -> str:
    """The id MkDocs gives the heading ``## `path```."""
    return "".join(c for c in path.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")


def write() -> list[Path]:
    """Write the packaged schema (a link to configs/config.schema.yaml in a checkout)."""
    from importlib import resources

    target = Path(str(resources.files("paramill").joinpath("data/config.schema.yaml")))
    target.write_text(dump(generate()))
    return [target.resolve()]
