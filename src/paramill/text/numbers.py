"""Strict parsers for the values that input files hold: scores, labels, vote counts and
header names, one rule for every reader.

A value is read only when it has the plain form: ASCII digits, an optional sign, point and
exponent (``float`` would also take ``1_0``, ``١٢``, ``５``, ``nan`` and ``inf``); a label is
0/1, true/false or a boolean (``bool("0")`` is True); votes are ``(n, total)`` with
``0 <= n <= total`` and ``total >= 1``. Anything else is None, and the reader makes the row a
rejected row naming the file, line, column and value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from paramill.errors import InputError

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_VOTES = re.compile(r"\([ \t]*([0-9]+)[ \t]*,[ \t]*([0-9]+)[ \t]*\)")
_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0}
_BLANK = " \t\r\n"


def number(value: Any) -> float | None:
    """A finite number: an int or float as it is, or a string in plain decimal form
    (surrounding blanks allowed); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip(_BLANK)
    if not _NUMBER.fullmatch(text):
        return None
    result = float(text)
    return result if math.isfinite(result) else None


def integer(value: Any) -> int | None:
    """An integer: an int (not a bool) or a string of ASCII digits with an optional sign."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip(_BLANK)):
        return int(value.strip(_BLANK))
    return None


def label(value: Any) -> int | None:
    """A binary label: 1/0, true/false (any case), a boolean, the integers 0 and 1, or the
    floats 0.0 and 1.0 (a label column pandas turned to float64 for its missing values)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value) if value in (0, 1) else None
    if isinstance(value, str):
        return _LABELS.get(value.strip(_BLANK).lower())
    return None


def counts(value: Any) -> tuple[int, int] | None:
    """Two counts written ``(a, b)`` in ASCII digits (PIT-2015's ``(yes, no)`` crowd votes)."""
    if not isinstance(value, str):
        return None
    match = _VOTES.fullmatch(value.strip(_BLANK))
    return (int(match.group(1)), int(match.group(2))) if match else None


def votes(value: Any) -> tuple[int, int] | None:
    """``(n, total)`` of a Twitter URL corpus vote column: 0 <= n <= total, total >= 1."""
    found = counts(value)
    return found if found is not None and 1 <= found[1] and found[0] <= found[1] else None


def repeated(names: Iterable[str]) -> list[str]:
    """The column names that occur more than once (a header must name each column once)."""
    return sorted(name for name, count in Counter(names).items() if count > 1)


def gold_score(path: str, line_no: int, fields: list[str], score: int, layout: str,
               scale: tuple[float, float]) -> str | None:
    """The gold score of a line of an STS layout whose files are written one way (the STS
    Benchmark, SentEval's gold files, SICK), as written: ``fields[score]``; None where the
    line has no such field or is blank. An :class:`~paramill.errors.InputError` naming file and
    line where a field up to the score is empty (two tabs in a row: every field after it is
    shifted, and an id or a sentence is read as the score) or the score is a number off the
    layout's ``scale``: an evaluation read a shifted line's numbers as a pair and its gold
    (the sample STS-B dev set: Pearson 95.1 -> 7.3 from one line). Anything else that is not
    a number is a pair without a score, skipped and counted by the evaluation."""
    if not any(text.strip(_BLANK) for text in fields):
        return None  # a blank line: no pair, no score
    for i, text in enumerate(fields[:score + 1]):
        if not text.strip(_BLANK):
            raise InputError(path, line_no, f"field {i + 1} is empty: the fields after it are "
                             f"shifted (two tabs in a row?), and {layout}'s score is field "
                             f"{score + 1}")
    if len(fields) <= score:
        return None
    value = number(fields[score])
    if value is not None and not scale[0] <= value <= scale[1]:
        raise InputError(path, line_no, f"gold score {fields[score].strip(_BLANK)} is off "
                         f"{layout}'s scale {scale[0]:g}-{scale[1]:g}: the line's fields are "
                         f"shifted, or the file is not {layout}")
    return fields[score]
