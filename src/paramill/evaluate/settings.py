"""The ``evaluate`` config section: STS datasets."""

from __future__ import annotations

from dataclasses import dataclass

from paramill import formats
from paramill.settings import Settings, setting


@dataclass(frozen=True)
class StsDataset(Settings):
    name: str = setting(doc="Dataset name in the results.")
    year: str | int = setting(doc="Year (or group) its mean is reported under.")
    format: str = setting(doc="Layout of the file: " + formats.format_doc("sts") + ".",
                          enum=formats.enum("sts"))
    path: str = setting(doc="File (for senteval: the STS.input.* file; for toks: the directory).")


@dataclass(frozen=True)
class EvaluateSection(Settings):
    download_dir: str = setting(
        "data/sts", "Where `snakemake sts_data` unpacks the official STS archives.")
    sts: tuple[StsDataset, ...] = setting(
        (), "STS datasets scored for every embedding model: {name, year, format, path}; format is "
        "one of " + ", ".join(m.NAME for m in formats.modules("sts")) + ".")
