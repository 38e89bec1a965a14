"""Evaluation: STS correlations of sentence embeddings."""
