"""Word vectors as text, GloVe's layout: ``word v1 ... vd`` a line, separated by single
spaces, with an optional word2vec header line (``count dim``). Read by the embedding models'
``word_vectors`` (initialising word units); any bad line is an error naming file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from paramill.text.numbers import number
from paramill.formats.reading import strict_lines
from paramill.errors import InputError

NAME = "glove"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "word vectors as text: `word v1 ... vd` a line (GloVe; a word2vec header allowed)"
#: a line of 300 float32 values in text is a few KB; 1 MiB leaves room for any dimension
MAX_LINE_BYTES = 1 << 20


def read(path: str | Path, dim: int, words: set[str] | None = None,
         max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str, list[float]]]:
    """(line, word, vector) of each word (of ``words`` only, when given: the others are not
    parsed); a vector of other than ``dim`` values, or a value that is not a plain finite
    number, is an :class:`~paramill.io.InputError`."""
    for line_no, line in strict_lines(path, max_line_bytes):
        parts = line.rstrip().split(" ")
        if len(parts) == 2 and line_no == 1:  # word2vec-style header
            continue
        word, values = parts[0], parts[1:]
        if words is not None and word not in words:
            continue
        if len(values) != dim:
            raise InputError(path, line_no, f"vector of {len(values)} values, model dim is {dim}")
        vector = [number(v) for v in values]
        if None in vector:
            bad = values[vector.index(None)]
            raise InputError(path, line_no, f"value {bad[:40]!r} is not a finite decimal number")
        yield line_no, word, vector  # type: ignore[misc]
