"""Arrow columns from numpy arrays without pyarrow's pandas check.

``pa.array`` asks its pandas shim whether the values are a pandas object, and the shim
imports pandas to answer when pandas is installed (it is: the SLURM executor plugin and
``datasets`` need it). That import took about 0.2 s of every job that made a column, on this
project's 2-core machine (a filter reading the token table scores 1M pairs in 0.65–0.76 s).
:func:`column` builds a numeric or boolean column on the array's own buffer instead;
anything else (Python lists, other types) goes to ``pa.array`` as before. :func:`empty_table` is a schema's
empty table, which ``Schema.empty_table()`` builds through ``pa.array`` too, and
:func:`int64s` the way back (pyarrow's ``to_numpy``, even zero-copy, imports pandas).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _fits(values: np.ndarray, target: np.dtype) -> bool:
    """Whether ``values`` become ``target`` without a value changed (what ``pa.array``'s
    safe conversion allows): the same type, a wider one, or integers inside its range."""
    if values.dtype.kind in "iu" and target.kind == "f":  # exact while the float holds it
        return values.dtype.itemsize < target.itemsize
    if np.can_cast(values.dtype, target, "safe"):
        return True
    if values.dtype.kind in "iu" and target.kind in "iu":
        info = np.iinfo(target)
        return not len(values) or (int(values.min()) >= info.min and int(values.max()) <= info.max)
    return False


def column(values: Any, kind: pa.DataType, nan_is_null: bool = False) -> pa.Array:
    """``pa.array(values, type=kind, from_pandas=nan_is_null)``: for a one-dimensional
    numeric numpy array of a numeric ``kind``, or a boolean one of ``pa.bool_()``, without
    pandas (a NaN a null with ``nan_is_null``); otherwise through ``pa.array``."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind == "b" \
            and pa.types.is_boolean(kind):  # Arrow's booleans are bits, least significant first
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(bits)], null_count=0)
    if not (isinstance(values, np.ndarray) and values.ndim == 1 and _numeric(kind)
            and values.dtype.kind in "iuf"):
        return pa.array(values, type=kind, from_pandas=nan_is_null)
    target = np.dtype(kind.to_pandas_dtype())
    if not _fits(values, target):
        return pa.array(values, type=kind, from_pandas=nan_is_null)
    data = np.ascontiguousarray(values, dtype=target)
    validity, nulls = None, 0
    if nan_is_null and data.dtype.kind == "f":
        missing = np.isnan(data)
        nulls = int(missing.sum())
        if nulls:
            validity = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(kind, len(data), [validity, pa.py_buffer(data)], null_count=nulls)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows with ``schema``."""
    return pa.Table.from_batches([], schema=schema)


def int64s(array: pa.Array) -> np.ndarray:
    """An Arrow integer array without nulls as int64, read from its data buffer."""
    data = np.frombuffer(array.buffers()[1], np.dtype(str(array.type)), array.offset + len(array))
    return data[array.offset:].astype(np.int64)
