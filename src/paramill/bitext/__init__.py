"""Bitext stage: read CzEng/Moses/TSV corpora into Parquet shards and clean them."""
