"""Bounded-memory exact deduplication: marks, buckets and earlier corpora's keys."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.text.dedup import DUP_EARLIER, DUP_HERE, KEEP, KEYS, KeySpill, bucket_bits, pair_keys
from paramill.io.tablewrite import TableWriter


def test_bucket_bits():
    assert bucket_bits(0, 10) == 0 and bucket_bits(10, 10) == 0
    assert bucket_bits(11, 10) == 1 and bucket_bits(40, 10) == 2 and bucket_bits(41, 10) == 3


@pytest.mark.parametrize("bucket_rows", [1000, 3])
def test_key_spill_marks_first_occurrences_and_earlier_corpora(tmp_path, bucket_rows):
    earlier = pair_keys(["a", "z"], ["b", "y"])  # ("a", "b") was kept by an earlier corpus
    prior = tmp_path / "prior.parquet"
    writer = TableWriter(prior, KEYS)
    writer.write(pa.table({"key": np.sort(earlier)}, schema=KEYS))
    writer.close()
    left = ["x", "a", "x", "c", "x", "c", "d"]
    right = ["y", "b", "y", "d", "y", "d", "e"]
    spill = KeySpill(tmp_path / "spill", bucket_rows)
    spill.add(pair_keys(left[:3], right[:3]))
    spill.add(pair_keys([], []))
    spill.add(pair_keys(left[3:], right[3:]))
    out = TableWriter(tmp_path / "kept.parquet", KEYS)
    marks = spill.marks([prior], out, prior_rows=2)
    out.close()
    assert marks.tolist() == [KEEP, DUP_EARLIER, DUP_HERE, KEEP, DUP_HERE, DUP_HERE, KEEP]
    kept = pq.read_table(tmp_path / "kept.parquet")["key"].to_numpy()
    assert sorted(kept.tolist()) == sorted(pair_keys(["x", "c", "d"], ["y", "d", "e"]).tolist())
    assert not list((tmp_path / "spill").iterdir())  # buckets removed


def test_key_spill_without_rows(tmp_path):
    assert KeySpill(tmp_path / "s", 10).marks().tolist() == []
