"""SentEval's STS files: ``STS.input.<name>.txt`` (``s1 \\t s2`` a line) with its gold scores
in ``STS.gs.<name>.txt`` beside it, line for line (a gold line may be empty: no score)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from paramill.text.numbers import gold_score
from paramill.formats.rows import Scored
from paramill.formats.reading import text_lines
from paramill.errors import InputError, check_name

NAME = "senteval"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "SentEval's `STS.input.<name>.txt` with `STS.gs.<name>.txt` beside it"
SCALE = (0.0, 5.0)  # STS 2012-2016


def gold_file(path: str | Path) -> Path:
    check_name(path)
    path = Path(path)
    return path.with_name(path.name.replace("STS.input.", "STS.gs."))


def files(path: str) -> list[str]:
    return [str(path), str(gold_file(path))]


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored]:
    gold_path = gold_file(path)
    inputs, gold = text_lines(path, max_line_bytes), text_lines(gold_path, max_line_bytes)
    if len(inputs) != len(gold):
        raise InputError(gold_path, None, f"{len(gold)} scores for the {len(inputs)} pairs of "
                                          f"{path}: one line a pair")
    for line_no, (line, score) in enumerate(zip(inputs, gold), 1):
        f = line.split("\t")
        yield Scored(f[0], f[1] if len(f) > 1 else None,
                     gold_score(str(gold_path), line_no, [score], 0, NAME, SCALE))
