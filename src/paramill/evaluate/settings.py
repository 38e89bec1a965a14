"""The ``evaluate`` config section: STS datasets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from paramill.formats import registry
from paramill.formats import named
from paramill.config.typed import Settings, setting


@dataclass(frozen=True)
class StsDataset(Settings):
    name: str = setting(doc="Dataset name in the results.")
    year: str | int = setting(doc="Year (or group) its mean is reported under.")
    format: str = setting(doc="Layout of the file: one of the layouts `paramill formats list --use sts` names.",
                          enum=registry.enum("sts"))
    path: str = setting(doc="File (for senteval: the STS.input.* file; for toks: the directory).")
    fields: dict[Annotated[str, {"enum": ["s1", "s2", "score"]}], Annotated[str, {"minLength": 1}]] | None = setting(
        None, "csv, json, jsonl, parquet: the column (field) each of s1, s2 and score is read from, "
        "`{s1: text_a, s2: text_b, score: similarity}`; a role left out is read from `datasets`' "
        "names (s1 or sentence1, s2 or sentence2, score or label).", no_default=True)

    def __post_init__(self) -> None:
        named.check_set_fields("sts", self.format, self.fields, f"evaluate.sts[{self.name}]")


@dataclass(frozen=True)
class EvaluateSection(Settings):
    download_dir: str = setting(
        "data/sts", "Where `snakemake sts_data` unpacks the official STS archives.")
    sts: tuple[StsDataset, ...] = setting(
        (), "STS datasets scored for every embedding model: {name, year, format, path} (and for csv, "
        "json, jsonl, parquet optionally fields); format is "
        "one of " + ", ".join(m.NAME for m in registry.modules("sts")) + ".")
