"""The ``pairs`` config section: paraphrase-pair corpora read as candidates (no NMT)."""

from __future__ import annotations

from dataclasses import dataclass

from paramill.pairs.ingest import PairCleanSettings, PairIngestSettings
from paramill.pairs.readers import PairCorpusSpec
from paramill.settings import Name, Settings, section, setting


@dataclass(frozen=True)
class PairsSection(Settings):
    corpora: dict[Name, PairCorpusSpec] = setting(
        factory=dict, doc="Paraphrase-pair corpora by name (ParaNMT-50M, ParaBank 2, the Twitter "
        "URL corpus, MT outputs beside references, your own TSV/Parquet): their pairs become "
        "candidates beside the back-translated ones and go through the same filters, selection, "
        "embeddings and lexicon, with no NMT model and no Czech. Names share one namespace with "
        "bitext.corpora. Order matters: exact duplicates are removed in favour of the earlier "
        "corpus, so append new corpora at the end.")
    ingest: PairIngestSettings = section(PairIngestSettings, "Reading pair files into "
                                         "candidate shards.")
    clean: PairCleanSettings = section(
        PairCleanSettings, "The English-side cleaning rules of bitext.clean, on both sentences "
        "of a pair; every dropped candidate goes to a rejected table with its reason.")
