"""paramill: paraphrase corpora from bitext and news tweets, with provenance."""

__version__ = "0.2.0"
