"""The ``embed`` config section: named models, training and the sweep."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings
from paramill.config.typed import Component, Name, Settings, overrides_schema, section, setting


@dataclass(frozen=True)
class SweepGrid(Settings):
    components: tuple[tuple[Component, ...], ...] = setting(
        None, "Component lists to try.", no_default=True, type="array")
    megabatch: tuple[Annotated[int, {"minimum": 1}], ...] = setting(
        None, "Mega-batch sizes M.", no_default=True)
    pairs: tuple[Annotated[int, {"minimum": 1}], ...] = setting(
        None, "Training-set sizes.", no_default=True)
    release: tuple[Name, ...] = setting(
        None, "Released corpora to train on (default, or names under filters.releases).",
        no_default=True)
    units: tuple[Literal["word", "sp"], ...] = setting(
        None, "Units of the word/recurrent components: word, sp (SentencePiece).",
        no_default=True)
    sp_vocab_size: tuple[Annotated[int, {"minimum": 8}], ...] = setting(
        None, "Vocabulary sizes of the SentencePiece model paramill trains (units sp).",
        no_default=True)


@dataclass(frozen=True)
class SweepSettings(Settings):
    pairs: int = setting(0, "Pairs per model (0 = all).", minimum=0)
    grid: SweepGrid = section(
        SweepGrid, "Values to cross; keys left out keep the `embed.model`/`embed.train` value.")


@dataclass(frozen=True)
class EmbedSection(Settings):
    model: ModelSpec = section(ModelSpec, "Defaults every named model starts from (ParaNMT's "
                                          'settings, with SentencePiece units).')
    release: Name = setting(
        "default", "The released corpus (a name under filters.releases, or default) the models "
        "train on.")
    export: bool = setting(
        False, "Also write each trained model as a sentence-transformers directory "
        "(results/embed/<model>/sentence-transformers/; `paramill embed export`).")
    models: dict[Name, ModelSpec] = setting(
        factory=lambda: {"word": {}}, doc="Named models to train and evaluate; each entry "
        "overrides `embed.model` (e.g. word-trigram: {components: [word, trigram]}).",
        additionalProperties=overrides_schema(ModelSpec))
    train: EmbedTrainSettings = section(
        EmbedTrainSettings, "Training (ParaNMT defaults). GPUs come from `resources.embed_train.gpu`.")
    sweep: SweepSettings = section(
        SweepSettings, "The experimental loop of Wieting 2017 §5 as one target (`snakemake "
        "sweep`): one model per point of the grid, each trained on `pairs` pairs, collected into "
        "one STS table.")
