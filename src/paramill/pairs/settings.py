"""The ``pairs`` config section: paraphrase-pair corpora read as candidates (no NMT)."""

from __future__ import annotations

from dataclasses import dataclass

from paramill.pairs.ingest import PairCleanSettings, PairIngestSettings
from paramill.pairs.readers import PairCorpusSpec
from paramill.config.typed import Name, Settings, section, setting


@dataclass(frozen=True)
class PairsSection(Settings):
    corpora: dict[Name, PairCorpusSpec] = setting(
        factory=dict, doc='Paraphrase-pair corpora by name (ParaNMT-50M, ParaBank 2, the Twitter '
                          'URL corpus, MT outputs beside references, your own files): candidates '
                          'beside the back-translated ones, with no NMT. Names share '
                          "bitext.corpora's namespace; duplicates are kept in the earliest "
                          'corpus.')
    ingest: PairIngestSettings = section(PairIngestSettings, "Reading pair files into "
                                         "candidate shards.")
    clean: PairCleanSettings = section(
        PairCleanSettings, "The English-side cleaning rules of bitext.clean, on both sentences "
        "of a pair; every dropped candidate goes to a rejected table with its reason.")
