"""Paraphrase lexicon with cross-sentence and adjusted PMI (ParaNMT appendix A.1)."""
