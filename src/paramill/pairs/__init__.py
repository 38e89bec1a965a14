"""Pair corpora: released paraphrase corpora and MT outputs read as candidate tables."""
