"""The ``bitext`` config section: input corpora, ingest and cleaning."""

from __future__ import annotations

from dataclasses import dataclass

from paramill.bitext.clean import CleanSettings
from paramill.bitext.ingest import IngestSettings
from paramill.bitext.readers import CorpusSpec
from paramill.config.typed import Name, Settings, section, setting


@dataclass(frozen=True)
class BitextSection(Settings):
    corpora: dict[Name, CorpusSpec] = setting(
        factory=dict, doc="Input corpora by name (the name becomes part of every pair_id and of "
        "file names: letters, digits, '-' and '_'). Order matters: exact duplicates are removed "
        "in favour of the earlier corpus, so append new corpora at the end.")
    ingest: IngestSettings = section(IngestSettings, "Reading raw files into Parquet shards.")
    clean: CleanSettings = section(
        CleanSettings, "ParaBank 2 §3.1 cleaning. Every dropped row goes to a rejected table "
        "with its reason.")
