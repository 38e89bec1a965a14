"""The token stage: one tokenisation per shard, read by length, overlap and BLEU, with the
same scores as counting from the text."""

from __future__ import annotations

import json
import random

import polars as pl
import pyarrow.parquet as pq
import pytest

from paramill import filters
from paramill.filters.base import score_shard
from paramill.filters.ngrams import matches, ngram_counts
from paramill.filters.tokens import ORDERS, count, count_shard
from paramill.provenance import verify
from paramill.text import tokenize

from .test_filters import ROWS, write_candidates


def _long(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(["a", "b", "c", "d", "The", "the", "."]) for _ in range(n))


@pytest.fixture
def shard(tmp_path):
    """Hand-made pairs, cased pairs, empty sides, and pairs over 64 tokens (the hashed path)."""
    rng = random.Random(3)
    rows = list(ROWS) + [("p5", "THE Cat, the cat!", "the CAT the cat", 0.2), ("p6", "", "Nothing here.", 0.2)]
    rows += [(f"q{i}", _long(rng, rng.randint(1, 120)), _long(rng, rng.randint(1, 120)), 0.1) for i in range(60)]
    return write_candidates(tmp_path / "candidates" / "c" / "shard-00000.parquet", rows)


def test_counts_are_the_pair_by_pair_definitions():
    frame = pl.DataFrame({"pair_id": ["p1", "p2"], "candidate_id": ["p1:1", "p2:1"],
                          "en_ref": ["The cat sat on the mat.", "THE Cat, the cat!"],
                          "candidate": ["the cat is on the mat .", "the CAT the cat"]})
    table = pl.from_arrow(count(frame))
    assert table["length_ref"].to_list() == [7, 6] and table["length_cand"].to_list() == [7, 4]
    for i, (ref, cand) in enumerate(zip(frame["en_ref"], frame["candidate"])):
        a, b = tokenize(ref.lower()), tokenize(cand.lower())
        assert table["tokens_ref"][i] == len(a) and table["tokens_cand"][i] == len(b)
        for n in ORDERS:
            assert table[f"match_{n}"][i] == matches(ngram_counts(a, n), ngram_counts(b, n)), (i, n)
    assert table["match_1"].to_list() == [6, 4] and table["match_2"].to_list() == [4, 2]


@pytest.mark.parametrize("name,settings", [
    ("length", {}), ("overlap", {}), ("bleu", {}), ("bleu", {"method": "exp"}),
    ("overlap", {"lowercase": False}),  # not covered by the counts: counted from the text
    ("overlap", {"orders": [1, 5]}),  # an order past the stored ones: from the text
])
def test_scores_from_the_token_table_equal_scores_from_the_text(shard, tmp_path, name, settings):
    tokens = tmp_path / "tokens" / "c" / "shard-00000.parquet"
    stats = count_shard(shard, tokens, batch_size=7)
    assert stats["rows"] == 66 and verify(tokens) == []
    filt = filters.make(name, **settings)
    assert filt.reads_tokens
    plain, read = tmp_path / "plain.parquet", tmp_path / "read.parquet"
    score_shard(filt, shard, plain, batch_size=9)
    score_shard(filt, shard, read, batch_size=9, tokens=tokens)  # batches cut across row groups
    assert pl.read_parquet(read).equals(pl.read_parquet(plain))
    inputs = {i["path"] for i in json.loads(read.with_name(read.name + ".prov.json").read_text())["inputs"]}
    covered = settings.get("lowercase", True) and max(settings.get("orders", [1])) <= ORDERS[-1]
    assert filt.covered_by_tokens() == covered and (str(tokens) in inputs) == covered


def test_filters_that_do_not_read_tokens_ignore_the_table(shard, tmp_path):
    tokens = tmp_path / "tokens.parquet"
    count_shard(shard, tokens)
    assert not filters.make("cost").reads_tokens
    score_shard(filters.make("cost"), shard, tmp_path / "a.parquet", tokens=tokens)
    record = (tmp_path / "a.parquet.prov.json").read_text()
    assert "tokens.parquet" not in record


def test_a_token_table_of_another_shard_is_an_error_naming_both(shard, tmp_path):
    other = write_candidates(tmp_path / "other.parquet", ROWS[:3])
    tokens = tmp_path / "tokens.parquet"
    count_shard(other, tokens)
    out = tmp_path / "scores.parquet"
    with pytest.raises(ValueError, match=f"{tokens}: not the token counts of {shard}"):
        score_shard(filters.make("length"), shard, out, tokens=tokens)
    assert not out.exists()
    count_shard(write_candidates(tmp_path / "more.parquet", ROWS + ROWS[:1]), tokens)
    with pytest.raises(ValueError, match="more rows than"):
        score_shard(filters.make("length"), write_candidates(tmp_path / "c4.parquet", ROWS), out,
                    tokens=tokens)
    assert not out.exists()


def test_the_token_table_is_row_for_row_the_shard(shard, tmp_path):
    tokens = tmp_path / "tokens.parquet"
    count_shard(shard, tokens, batch_size=5)
    table = pq.read_table(tokens)
    assert table.column("candidate_id").to_pylist() == pq.read_table(shard).column("candidate_id").to_pylist()
