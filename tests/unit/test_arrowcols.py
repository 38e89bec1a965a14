"""Arrow columns from numpy without pyarrow's pandas check: the same arrays as ``pa.array``,
and the cheap filter jobs never import pandas."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from paramill.io.arrowcols import column, empty_table

from .test_filters import ROWS, write_candidates


@pytest.mark.parametrize("values,kind", [
    (np.array([1, 2, 3], np.int64), pa.int64()),
    (np.array([1, 2, 3], np.int64), pa.int32()),  # narrowed: every value fits
    (np.array([1, 2, 3], np.uint32), pa.int32()),
    (np.array([0, 7], np.int32), pa.float64()),
    (np.array([0.5, np.nan, 2.0], np.float64), pa.float64()),
    (np.array([0.5, 1.5], np.float32), pa.float64()),
    (np.array([], np.float64), pa.float64()),
    (np.arange(10, dtype=np.int64)[::3], pa.int64()),  # not contiguous
])
@pytest.mark.parametrize("nan_is_null", [False, True])
def test_a_column_is_what_pa_array_gives(values, kind, nan_is_null):
    got = column(values, kind, nan_is_null)
    want = pa.array(values, type=kind, from_pandas=nan_is_null)
    assert got.type == kind and got.null_count == want.null_count
    assert str(got.to_pylist()) == str(want.to_pylist())  # (a NaN is "nan" on both sides)
    got.validate(full=True)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 64, 1001])
def test_a_boolean_column_is_what_pa_array_gives(n):
    values = np.random.default_rng(n).random(n) < 0.4
    got = column(values, pa.bool_())
    got.validate(full=True)
    assert got.equals(pa.array(values, type=pa.bool_())) and got.to_pylist() == values.tolist()
    if n > 1:  # a view that starts inside a byte
        assert column(values[1:], pa.bool_()).to_pylist() == values[1:].tolist()


def test_a_nan_is_a_null_only_when_asked():
    values = np.array([np.nan, 1.0, np.nan, 3.0] * 5)
    assert column(values, pa.float64(), nan_is_null=True).to_pylist() == [None, 1.0, None, 3.0] * 5
    assert column(values, pa.float64()).null_count == 0


def test_what_would_change_a_value_goes_to_pa_array_and_fails_there():
    with pytest.raises(pa.ArrowInvalid):
        column(np.array([2**40], np.int64), pa.int32())
    with pytest.raises(pa.ArrowInvalid):
        column(np.array([1.5]), pa.int64())
    assert column([1, None], pa.int64()).to_pylist() == [1, None]  # a list: pa.array's own path


def test_an_empty_table_has_the_schema():
    schema = pa.schema([pa.field("a", pa.string(), nullable=False), pa.field("b", pa.float64())])
    table = empty_table(schema)
    assert table.num_rows == 0 and table.schema == schema


def test_the_token_stage_the_filters_and_select_never_import_pandas(tmp_path):
    """pandas is installed (the SLURM plugin needs it); importing it cost every job 0.2 s.
    Two corpora holding the same shard: select drops the second's pairs as duplicates."""
    pytest.importorskip("pandas")
    shard = write_candidates(tmp_path / "candidates" / "c" / "shard-00000.parquet", ROWS)
    again = tmp_path / "candidates" / "d" / "shard-00000.parquet"
    again.parent.mkdir(parents=True)
    shutil.copy(shard, again)
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from paramill import filters
        from paramill.filters.base import score_shard
        from paramill.filters.select import SelectSettings, select
        from paramill.filters.tokens import count_shard
        root, scores = Path({str(tmp_path)!r}), []
        for corpus in ("c", "d"):
            shard = root / "candidates" / corpus / "shard-00000.parquet"
            tokens = root / "tokens" / corpus / shard.name
            tokens.parent.mkdir(parents=True)
            count_shard(shard, tokens)
            for name in ("length", "overlap", "bleu"):
                scores.append(root / "scores" / name / corpus / shard.name)
                score_shard(filters.make(name), shard, scores[-1], tokens=tokens)
        out = root / "sel"
        summary = select([root / "candidates" / c / "shard-00000.parquet" for c in "cd"], scores,
                         out / "c.parquet", out / "c.tsv", out / "s.json", SelectSettings(max_tokens=0))
        print(summary["steps"][-2], "pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PARAMILL_PROGRESS": "0"})
    assert out.stdout.split()[-1] == "False"
    assert "'duplicates', 'pairs': 3}" in out.stdout  # ROWS less its identical pair, once
