"""The config schema, generated from the stages' settings declarations.

Every key of ``config.yaml`` is declared once, in the stage that reads it (a dataclass per
section, :mod:`paramill.settings`); this module assembles them into the JSON Schema that
``paramill config resolve`` validates with. The schema is committed
(``configs/config.schema.yaml``) so that validating a config imports no stage; a test
fails when it differs from :func:`generate`. Regenerate with ``paramill config schema
--write``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import yaml

from paramill.bitext.settings import BitextSection
from paramill.embed.settings import EmbedSection
from paramill.evaluate.settings import EvaluateSection
from paramill.filters import settings as filter_settings
from paramill.lexicon.pmi import LexiconSettings
from paramill.nmt.settings import NmtSection
from paramill.settings import Settings, object_schema, section, setting
from paramill.twitter.settings import TwitterSection

RuleName = Annotated[str, {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}]


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
    slurm_extra: str = setting(
        None, "Extra sbatch flags for this rule. Not for GPUs (use gpu/gres; the SLURM plugin "
        "rejects --gres/--gpus here).", no_default=True, **{"not": {"pattern": "--(gres|gpus)"}})


@dataclass(frozen=True)
class PipelineConfig(Settings):
    workdir: str = setting("work", "Directory for intermediate files (ingested and cleaned "
                           "shards, keys, logs of stages).")
    results: str = setting("results", "Directory for published outputs (stats, corpora, results "
                           "tables).")
    logdir: str = setting("logs", "Directory for rule logs and benchmark files.")
    bitext: BitextSection = section(BitextSection, "Bilingual (Czech-English) input corpora, "
                                    "ingest and cleaning.")
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
        "job's request; locally `--resources gpu=N` limits how many GPU jobs run at once.")


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
