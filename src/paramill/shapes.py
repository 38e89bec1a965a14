"""JSON files one stage writes and another reads (stats, results), checked against a JSON
Schema of what the reader uses: a file of another shape is an error naming the file and the
field, not a ``KeyError`` or ``TypeError`` deep in a job."""

from __future__ import annotations

import os
from typing import Any

from paramill.io import InputError, read_json

#: a count: a whole number from 0 to what a Parquet/polars Int64 holds
COUNT = {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
#: counts by name (reasons, outcomes)
COUNTS = {"type": "object", "additionalProperties": COUNT}
TEXT = {"type": "string"}


def read_json_as(path: str | os.PathLike, shape: dict[str, Any], what: str) -> Any:
    """:func:`paramill.io.read_json`, then checked against the JSON Schema ``shape``: a file
    of another shape (another JSON file, a field of another type, edited by hand) is an
    :class:`InputError` naming the file, the field and ``what`` the file should be (``a
    corpus's clean stats``)."""
    value = read_json(path)
    wrong = problem(value, shape)
    if wrong:
        raise InputError(path, None, f"not {what}: {wrong}")
    return value


def problem(value: Any, shape: dict[str, Any]) -> str | None:
    """What is wrong with ``value`` against the JSON Schema ``shape`` (``field.path: message``),
    or None."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(shape).iter_errors(value))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where.lstrip('.') or 'the top level'}: {error.message[:200]}"
