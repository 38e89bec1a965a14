"""A Parquet file of pairs: columns ``s1`` and ``s2`` (or ``en_ref``/``reference`` and
``candidate``/``paraphrase``), optionally ``score`` and ``label``, or the columns ``fields``
names for them (``{s1: sentence1, s2: sentence2}``: a file ``datasets`` wrote); read a row
group at a time, ``line_no`` the row number counted from 1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from paramill import fields as strict
from paramill.formats import Candidate, jsonl, tsv
from paramill.io import InputError
from paramill.tables import iter_parquet_batches, open_parquet

NAME = "parquet"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "a Parquet file with columns s1, s2 (optional score, label), or those `fields` names"


#: a pair corpus's settings: ``path`` and ``fields``, the column each role is read from
Spec = jsonl.Spec
check = jsonl.check
#: the columns a role is found by without ``fields`` (:func:`paramill.formats.tsv.roles`)
_FOUND_BY = {"s1": tsv.REF_NAMES, "s2": tsv.CAND_NAMES, "score": ("score",), "label": ("label",)}


def _roles(path: str, names: tuple[str, ...], given: dict[str, str]) -> dict[str, int]:
    """{role: column index}: the columns ``given`` names for their roles (a column of that
    name must be there), the others found as without them."""
    for role, column in given.items():
        if column not in names:
            raise InputError(path, None, f"fields.{role}: no column {column} (it has "
                                         f"{', '.join(names)[:200]})")
    shadowed = {n for role in given for n in _FOUND_BY[role]}
    as_found = tuple(next((r for r, c in given.items() if c == n), None)
                     or (f"({n}: not read)" if n in shadowed else n) for n in names)
    return tsv.roles("pairs", as_found, path, None)


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
    path = spec.path
    handle = open_parquet(path)
    schema = handle.schema_arrow
    names = tuple(schema.names)
    roles = _roles(path, names, spec.fields or {})
    check_text(path, schema, [names[roles[r]] for r in ("en_ref", "candidate")])
    wanted = [names[roles[r]] for r in ("en_ref", "candidate", "score", "label") if r in roles]
    row = 0
    for batch in iter_parquet_batches([path], batch_rows or 50000, wanted):
        data = batch.to_pydict()
        refs, cands = data[names[roles["en_ref"]]], data[names[roles["candidate"]]]
        scores = data[names[roles["score"]]] if "score" in roles else [None] * len(refs)
        labels = data[names[roles["label"]]] if "label" in roles else [None] * len(refs)
        for ref, cand, given_score, given_label in zip(refs, cands, scores, labels):
            row += 1
            nul = _nul(names[roles["en_ref"]], ref) or _nul(names[roles["candidate"]], cand)
            if nul:  # as a text line holding one (paramill.io.decode_line): never text
                yield Candidate(row, ref, cand, method, source_file=path, reason="not_text",
                                detail=nul)
                continue
            score = None if given_score is None else strict.number(given_score)
            if given_score is not None and score is None:
                yield Candidate(row, ref, cand, method, source_file=path, reason="bad_score",
                                detail=f"column {names[roles['score']]}: score "
                                       f"{str(given_score)[:40]!r} is not a finite number")
                continue
            label = None if given_label is None else strict.label(given_label)
            if given_label is not None and label is None:
                yield Candidate(row, ref, cand, method, source_file=path, reason="bad_label",
                                detail=f"column {names[roles['label']]}: label "
                                       f"{str(given_label)[:40]!r} is not 0/1/true/false")
                continue
            yield Candidate(row, ref, cand, method, 1, score, label, source_file=path)
    if row == 0:
        raise InputError(path, None, "file has no rows")


def _nul(column: str, value: str | None) -> str | None:
    """Where ``value`` holds a NUL character, the rejected row's detail naming the column and
    the character's offset (cleaning would drop the NUL and glue the words around it)."""
    at = value.find("\x00") if value else -1
    return (f"column {column}: NUL at character {at}: not text (a binary value, or zeros a "
            "crash left)") if at >= 0 else None


def refuse_nul(path: str, frame: Any, columns: list[str], before: int) -> Any:
    """``frame`` (a polars frame of rows ``before`` + 1 on of ``path``) as it is; an
    :class:`~paramill.io.InputError` naming the first row whose text in ``columns`` holds a
    NUL character, as a pair TSV's line holding one is, where one broken row spoils a set."""
    import polars as pl

    for column in columns:
        hits = frame.get_column(column).cast(pl.String).str.contains("\x00", literal=True).arg_true()
        if len(hits):
            raise InputError(path, before + int(hits[0]) + 1, _nul(column, frame[int(hits[0]), column]))
    return frame
