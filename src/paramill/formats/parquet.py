"""A Parquet file (what Hugging Face ``datasets`` and its Hub's Parquet exports, polars and
pandas write), read a row group at a time, ``line_no`` the row number counted from 1:

- a pair corpus: columns ``s1`` and ``s2`` (or ``en_ref``/``reference`` and
  ``candidate``/``paraphrase``), optionally ``score`` and ``label``;
- a bitext corpus: columns ``cs`` and ``en``;
- an STS set or the identifier's labelled pairs: ``datasets``' names, ``s1`` or
  ``sentence1``, ``s2`` or ``sentence2``, and ``score`` (or, as in STS-B there, ``label``)
  or ``label``.

A corpus's (or a set's) ``fields`` names the column each role is read from (``{s1: sentence1, s2:
sentence2}``), and a name with a dot reads inside a struct column (``translation.cs``: the
layout of WMT's bitext on the Hub), unless a column has that name itself. A sentence's
column must hold text (an error naming the file and column before a row is read); a row
whose sentence is null is ``missing_field``, one holding a NUL character ``not_text``, one
longer than the line limit ``line_too_long``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from paramill.formats.rows import Bad, BitextPair, Candidate, Labelled, Scored
from paramill.formats.reading import collect_labelled
from paramill.formats import jsonl, named
from paramill.io.lines import REJECTED_TEXT_CHARS
from paramill.errors import InputError
from paramill.io.tableread import iter_parquet_batches, open_parquet

NAME = "parquet"
ALIASES: tuple[str, ...] = ()
#: an STS set or labelled pairs may name their columns (``fields``)
SET_FIELDS = True
DESCRIPTION = ("a Parquet file: columns s1, s2 (optional score, label) or cs, en, or those "
               "`fields` names (`a.b` reads inside a struct column)")


#: a corpus's settings: ``path`` and ``fields``, the column each role is read from
Spec = jsonl.Spec
check = jsonl.check


@dataclass(frozen=True)
class Column:
    """Where a role is read: a column, and the fields inside it where it is a struct."""

    top: str
    inner: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return ".".join((self.top, *self.inner))

    def values(self, batch: Any, limit: int | None = None) -> list[Any]:
        """The role's values in a record batch (null where a struct on the way is null); with
        ``limit``, a text value longer than ``limit`` bytes a :class:`Long`."""
        import pyarrow.compute as pc

        array = batch.column(self.top)
        for name in self.inner:
            array = pc.struct_field(array, name)
        return array.to_pylist() if limit is None or not is_text(array.type) else _bounded(array, limit)


class Long(str):
    """A text value over the line limit, as a rejected row shows it: its first characters,
    and its length in bytes (``size``). Never made a whole Python string: 600 MB of one letter
    packs into a 20 KB Parquet file, whose `pairs ingest` peaked at 6.3 GB with its Python
    copies; now 2.0 GB, pyarrow's own decoding of the page 1.9 of it."""

    size: int


def _bounded(array: Any, limit: int) -> list[Any]:
    """``array.to_pylist()`` of a text array, with each value over ``limit`` bytes a
    :class:`Long` (the lengths counted in Arrow; a dictionary array's in its dictionary,
    each of its values made a string once)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    coded = pa.types.is_dictionary(array.type)
    words = array.dictionary if coded else array
    sizes = pc.binary_length(words)
    over = pc.fill_null(pc.greater(sizes, limit), False)
    values: list[Any] = []
    start = 0
    if pc.any(over).as_py():
        heads = pc.utf8_slice_codeunits(words, 0, REJECTED_TEXT_CHARS)
        for k in np.flatnonzero(over.to_numpy(zero_copy_only=False)).tolist():
            values += words.slice(start, k - start).to_pylist()  # the values between, as they are
            values.append(Long(heads[k].as_py()))
            values[-1].size, start = sizes[k].as_py(), k + 1
    values += words.slice(start).to_pylist()
    # a dictionary's rows share its values' strings (a value is made once, not for each row)
    return [None if k is None else values[k] for k in array.indices.to_pylist()] if coded else values


def _column(path: str, schema: Any, role: str, name: str) -> Column:
    """The column ``fields`` names for ``role``: a column of that name, else a struct
    column's field its dots lead to; an error naming the file and what is there."""
    import pyarrow as pa

    if name in schema.names:
        return Column(name)
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        top = ".".join(parts[:cut])
        if top not in schema.names:
            continue
        kind, walked = schema.field(top).type, top
        for part in parts[cut:]:
            if not pa.types.is_struct(kind) or kind.get_field_index(part) < 0:
                inside = (f"fields {', '.join(f.name for f in kind)}"[:200] if pa.types.is_struct(kind)
                          else f"{kind}, not a struct")
                raise InputError(path, None, f"fields.{role}: no column {name} ({walked} holds {inside})")
            kind, walked = kind.field(part).type, f"{walked}.{part}"
        return Column(top, tuple(parts[cut:]))
    raise InputError(path, None, f"fields.{role}: no column {name} (it has "
                                 f"{', '.join(schema.names)[:200]})")


def _corpus_columns(path: str, schema: Any, use: str, given: dict[str, str]) -> dict[str, Column]:
    """{role: column} of a corpus (:func:`paramill.formats.named.corpus_roles`)."""
    return named.corpus_roles(path, schema.names, use, given,
                              lambda role, name: _column(path, schema, role, name), Column)


def _named_columns(path: str, schema: Any, needed: tuple[str, ...], optional: tuple[str, ...],
                   given: dict[str, str] | None = None) -> dict[str, Column]:
    """{role: column} of a set given by its path (:func:`paramill.formats.named.set_roles`)."""
    return named.set_roles(path, schema.names, needed, optional, Column,
                           lambda role, name: _column(path, schema, role, name), given)


def _rows(path: str, schema: Any, columns: dict[str, Column], sentences: tuple[str, ...],
          batch_rows: int, limit: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row number, {role: value})`` of each row, a record batch at a time; the
    ``sentences`` roles' columns checked to hold text first (in ``schema``, the file's), a
    sentence over ``limit`` bytes a :class:`Long`."""
    for role in sentences:
        kind = _kind(schema, columns[role])
        if not is_text(kind):
            raise InputError(path, None, f"column {columns[role].name} holds {kind}, not text")
    tops = list(dict.fromkeys(c.top for c in columns.values()))
    row = 0  # a dictionary's entry over the limit is read once, not for each row naming it
    for batch in iter_parquet_batches([path], batch_rows or 50000, tops, guard=True,
                                      decode_once=([columns[role].name for role in sentences], limit)):
        values = {role: column.values(batch, limit if role in sentences else None)
                  for role, column in columns.items()}
        for i in range(batch.num_rows):
            row += 1
            yield row, {role: v[i] for role, v in values.items()}
    if row == 0:
        raise InputError(path, None, "file has no rows")


def _kind(schema: Any, column: Column) -> Any:
    kind = schema.field(column.top).type
    for name in column.inner:
        kind = kind.field(name).type
    return kind


def _parsed(v: dict[str, Any], columns: dict[str, Column], role: str) -> tuple[Any, str | None]:
    """A row's score or label read (None where there is no column or it is null), and the
    detail of one that cannot be read."""
    return named.parsed(v.get(role), role, columns[role].name if role in columns else role)


def _sentences(row: int, v: dict[str, Any], columns: dict[str, Column], roles: tuple[str, ...],
               limit: int) -> Bad | None:
    """A row's sentences that cannot be read: one null (``missing_field``), holding a NUL
    character (``not_text``) or longer than ``limit`` bytes (``line_too_long``, as a text
    layout's line over the limit); None where they can."""
    for role in roles:
        value = v[role]
        if value is None:
            return Bad(row, "missing_field", f"column {columns[role].name} is null", None)
        if isinstance(value, Long):
            return Bad(row, "line_too_long", f"column {columns[role].name}: "
                       f"{value.size} bytes, longer than {limit}", str(value))
        if nul := _nul(columns[role].name, value):
            return Bad(row, "not_text", nul, None)
    return None


def is_text(kind: Any) -> bool:
    """Whether a column of Arrow type ``kind`` holds text: a string, large string or string
    view, or a dictionary of them (pandas' ``category``, polars' ``Categorical``/``Enum``)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    is_view = getattr(pa.types, "is_string_view", lambda _: False)
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_view(kind))


def pair_columns(path: str) -> list[str]:
    """The columns a file of training pairs is read by: ``s1``, ``s2``; or a candidate
    table's ``en_ref``, ``candidate`` and, where it has one, ``rank`` (its pairs are the rows
    at rank 1). An :class:`~paramill.io.InputError` names the file where they are missing,
    the sentences are not text or the rank is not a number."""
    import pyarrow as pa

    names = (schema := open_parquet(path).schema_arrow).names
    if {"en_ref", "candidate"} <= set(names):
        columns = ["en_ref", "candidate", *(["rank"] if "rank" in names else [])]
    elif {"s1", "s2"} <= set(names):
        columns = ["s1", "s2"]
    else:
        raise InputError(path, None, f"needs columns s1/s2 or en_ref/candidate, has {names}")
    check_text(path, schema, columns[:2])
    kind = schema.field("rank").type if "rank" in columns else pa.int32()
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):  # floats: pandas'
        raise InputError(path, None, f"column rank holds {kind}, not numbers")  # ints with nulls
    return columns


def pair_rows(path: str) -> int:
    """The pairs in a Parquet file of them (:func:`pair_columns`), from its metadata: every
    row, or a candidate table's rows at ``rank`` 1, counted from that column alone."""
    import pyarrow.compute as pc

    if "rank" not in pair_columns(path):
        return open_parquet(path).metadata.num_rows
    return sum(pc.sum(pc.equal(batch.column(0), 1)).as_py() or 0
               for batch in iter_parquet_batches([path], 1 << 20, ["rank"]))


def check_text(path: str, schema: Any, columns: list[str]) -> None:
    """An :class:`~paramill.io.InputError` naming ``path`` and the first of ``columns``
    whose type in ``schema`` (an Arrow schema) is not text."""
    for name in columns:
        kind = schema.field(name).type
        if not is_text(kind):
            raise InputError(path, None, f"column {name} holds {kind}, not text")


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 50000
          ) -> Iterator[Candidate]:
    """One candidate a row: the ``s1`` and ``s2`` columns, the score and label where given."""
    path, schema = spec.path, open_parquet(spec.path).schema_arrow
    columns = _corpus_columns(path, schema, "pairs", spec.fields or {})
    for row, v in _rows(path, schema, columns, ("s1", "s2"), batch_rows, max_line_bytes):
        ref, cand = v["s1"], v["s2"]
        bad = _sentences(row, v, columns, ("s1", "s2"), max_line_bytes)
        if bad:
            yield Candidate(row, ref, cand, method, source_file=path, reason=bad.reason, detail=bad.detail)
            continue
        (score, bad_score), (label, bad_label) = _parsed(v, columns, "score"), _parsed(v, columns, "label")
        if bad_score or bad_label:
            yield Candidate(row, ref, cand, method, source_file=path, reason=f"bad_{'score' if bad_score else 'label'}",
                            detail=bad_score or bad_label)
            continue
        yield Candidate(row, ref, cand, method, 1, score, label, source_file=path)


def bitext(spec: Spec, max_line_bytes: int = 65536, batch_rows: int = 50000) -> Iterator[BitextPair]:
    """One Czech-English pair a row: the ``cs`` and ``en`` columns (or those ``fields``
    names)."""
    path, schema = spec.path, open_parquet(spec.path).schema_arrow
    columns = _corpus_columns(path, schema, "bitext", spec.fields or {})
    for row, v in _rows(path, schema, columns, ("cs", "en"), batch_rows, max_line_bytes):
        bad = _sentences(row, v, columns, ("cs", "en"), max_line_bytes)
        if bad:
            yield BitextPair(row, v["cs"], v["en"], bad.reason, bad.detail)
        else:
            yield BitextPair(row, v["cs"], v["en"])


def sts(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None,
        batch_rows: int = 50000) -> Iterator[Scored | Bad]:
    """Each pair and its gold score as given (``s1``/``sentence1``, ``s2``/``sentence2``,
    ``score`` or else ``label``, or the columns ``fields`` names; a pair without a score is
    skipped and counted). A null sentence is a pair skipped; one holding a NUL character
    breaks the set."""
    schema = open_parquet(path).schema_arrow
    columns = _named_columns(path, schema, ("s1", "s2"), ("score",), fields)
    for row, v in _rows(path, schema, columns, ("s1", "s2"), batch_rows, max_line_bytes):
        bad = _sentences(row, v, columns, ("s1", "s2"), max_line_bytes)
        yield bad or Scored(v["s1"], v["s2"], v.get("score"))


def labelled(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None,
             batch_rows: int = 50000) -> tuple[list[tuple[str, str]], list[int], int]:
    """The pairs and their ``label`` (0/1/true/false; null: debatable, dropped), from the
    columns ``fields`` names or ``datasets``' names; a row that gives no pair is an error
    naming the file and row."""
    schema = open_parquet(path).schema_arrow
    columns = _named_columns(path, schema, ("s1", "s2", "label"), (), fields)

    def one(row: int, v: dict[str, Any]) -> Labelled | Bad:
        bad = _sentences(row, v, columns, ("s1", "s2"), max_line_bytes)
        if bad:
            return bad
        label, bad_label = _parsed(v, columns, "label")
        return Bad(row, "bad_label", bad_label, None) if bad_label else Labelled(row, v["s1"], v["s2"], label)

    return collect_labelled((one(row, v) for row, v in _rows(path, schema, columns, ("s1", "s2"), batch_rows,
                                                                    max_line_bytes)), path)


def _nul(column: str, value: str | None) -> str | None:
    """Where ``value`` holds a NUL character, the rejected row's detail naming the column and
    the character's offset (cleaning would drop the NUL and glue the words around it)."""
    at = value.find("\x00") if value else -1
    return (f"column {column}: NUL at character {at}: not text (a binary value, or zeros a "
            "crash left)") if at >= 0 else None


def refuse_unreadable(path: str, frame: Any, columns: list[str], before: int,
                      limit: int = 65536) -> Any:
    """``frame`` (a polars frame of rows ``before`` + 1 on of ``path``) as it is; an
    :class:`~paramill.io.InputError` naming the first row whose text in ``columns`` holds a
    NUL character or is longer than ``limit`` bytes, as a pair TSV's line is, where one
    broken row spoils a set."""
    import polars as pl

    for column in columns:
        text = frame.get_column(column).cast(pl.String)
        if len(hits := (text.str.len_bytes() > limit).arg_true()):
            raise InputError(path, before + int(hits[0]) + 1, f"column {column}: "
                             f"{text.str.len_bytes()[int(hits[0])]} bytes, longer than {limit}")
        if len(hits := text.str.contains("\x00", literal=True).arg_true()):
            raise InputError(path, before + int(hits[0]) + 1, _nul(column, frame[int(hits[0]), column]))
    return frame
