"""The ``nmt`` config section: subwords, translation models and back-translation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from paramill.nmt.sampling import SampleSettings
from paramill.nmt.subwords import SubwordSettings
from paramill.nmt.train import ModelSettings, NmtTrainSettings
from paramill.nmt.translate import TranslateSettings
from paramill.config.typed import Name, Settings, object_schema, section, setting


@dataclass(frozen=True, kw_only=True)
class OwnModel(Settings):
    ct2: str = setting(None, "CTranslate2 model directory.", no_default=True)
    checkpoint: str = setting(
        None, "OpenNMT-py checkpoint (.pt), converted to CTranslate2.", no_default=True)
    source_spm: str = setting(doc="SentencePiece model of the source language.")
    target_spm: str = setting(doc="SentencePiece model of the target language.")

    schema_extra = {"oneOf": [{"required": ["ct2"]}, {"required": ["checkpoint"]}],
                    "description": "An existing model for one direction."}


def _own(doc: str) -> dict:
    return {**object_schema(OwnModel), "description": doc}


@dataclass(frozen=True)
class NmtSection(Settings):
    train_corpora: tuple[Name, ...] = setting(
        (), "Corpora whose cleaned shards train the subword and translation models; empty means "
        "all. Name them explicitly so that adding a corpus later translates only its own shards "
        "instead of retraining the models.")
    valid_size: int = setting(
        2000, "Pairs held out (seeded hash of pair_id) to validate NMT training.", minimum=0)
    seed: int = setting(13, "Seed of the hash that holds the validation pairs out.")
    spm: SubwordSettings = section(SubwordSettings, "SentencePiece models, one per language "
                                   "(ParaBank 2 §3.2).")
    model: ModelSettings = section(ModelSettings, "Transformer size (defaults are Transformer base).")
    train: NmtTrainSettings = section(
        NmtTrainSettings, "OpenNMT-py training. GPUs come from `resources.nmt_train.gpu`; without "
        "GPUs it trains on CPU.")
    models: dict[str, OwnModel] = setting(
        factory=dict, doc="Bring your own model for a direction: a CTranslate2 directory (`ct2`) "
        "or an OpenNMT-py checkpoint (`checkpoint`, converted here), with its SentencePiece "
        "models. Then no training runs for that direction.",
        additionalProperties=False,
        properties={"cs-en": _own("Czech->English model (back-translation)."),
                    "en-cs": _own("English->Czech model (dual scoring).")})
    quantization: Literal["int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
                          "float16", "bfloat16", "float32"] | None = setting(
        None, "Weight quantization when converting to CTranslate2 (none by default).")
    translate: TranslateSettings = section(
        TranslateSettings, "Decoding of each shard's Czech side (CTranslate2; OpenNMT-py's model in torch "
        "on a GPU CTranslate2 cannot use: engine).")
    sample: SampleSettings = section(
        SampleSettings, "ParaBank 2 (§2, §3.3) diverse paraphrases, used when "
        "nmt.translate.method is sample.")
