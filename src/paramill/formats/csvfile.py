"""CSV: comma-separated values with a header line naming the columns, fields quoted as RFC
4180 quotes them (a quoted field may hold the delimiter and doubled quotes: what
spreadsheets, pandas' ``to_csv`` and Kaggle's Quora Question Pairs write); plain, .gz, .xz,
.zst or .bz2. ``delimiter`` another one character (``;``, a tab for quoted TSV).

A quoted field ends on its line: a quote not closed there (a stray quote) rejects the line
(``bad_quote``, naming it) and reading goes on at the next, where RFC 4180 would read on to
wherever the next stray quote is, or to the end of the file, as one field.
``multiline_fields: true`` reads fields that hold line breaks (Quora Question Pairs has a
few); a quote never closed is then an error naming the line it opened on.

The columns are taken by their header names: a corpus's ``fields`` names the column of each
role (``{s1: question1, s2: question2, label: is_duplicate}``), a role it leaves out is read
from the column of its usual name (a pair corpus ``s1``/``en_ref``/``reference``,
``s2``/``candidate``/``paraphrase``, ``score``, ``label``; a bitext corpus ``cs``, ``en``);
an STS set or labelled pairs from those their ``fields`` names, else ``datasets``' names (``s1`` or
``sentence1``, ``s2`` or ``sentence2``, ``score`` or ``label``; ``label``). An empty score or
label is none given.

A record of another number of fields than the header is ``column_count``; a quote in the
wrong place (``"a"b``) ``bad_quote``; a carriage return in a field not quoted ``bad_field``;
a record longer than the line limit ``line_too_long``: with ``multiline_fields``, a quoted
field that goes on past it is read through, not kept, to the line where its quote closes (a
long field, skipped whole: none of its lines is read as a record), and where the quote does
not close within :data:`MAX_RECORD_BYTES` reading goes on at the line after the limit;
a line that is not UTF-8 is ``invalid_utf8`` (the record it is in rejected with it).
``line_no`` is the line a record starts on.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from paramill.text import numbers as strict
from paramill.formats.rows import Bad, BitextPair, Candidate, Labelled, Scored
from paramill.formats.reading import collect_labelled, lines
from paramill.formats import jsonl, named
from paramill.io.lines import REJECTED_TEXT_CHARS
from paramill.errors import InputError
from paramill.config.typed import setting

NAME = "csv"
ALIASES: tuple[str, ...] = ()
#: an STS set or labelled pairs may name their columns (``fields``)
SET_FIELDS = True
DESCRIPTION = ("comma-separated values with a header line, RFC 4180 quoting; the columns "
               "`fields` names, else s1, s2 (optional score, label) or cs, en")


@dataclass(frozen=True)
class Spec(jsonl.Spec):
    delimiter: str = setting(",", "The one character between fields (`;`, or a tab for a "
                                  "quoted TSV).", minLength=1, maxLength=1)
    multiline_fields: bool = setting(
        False, "A quoted field may hold line breaks (Quora Question Pairs' train.csv has some). "
        "false: a quote not closed on its line rejects that line, and reading goes on at the "
        "next; true: a quote never closed is an error naming its line.", no_default=True)


def check(spec: Spec, use: str, where: str) -> None:
    jsonl.check(spec, use, where)
    if spec.delimiter in ('"', "\n", "\r"):
        raise ValueError(f"{where}.delimiter: {spec.delimiter!r} cannot separate fields")


#: the longest quoted record read through to its closing quote (a record over the line limit
#: but within this is skipped whole; past it, or with the file ending first, its quote is
#: taken as never closed and the lines after the limit are read as records)
MAX_RECORD_BYTES = 16 << 20


class _Broken(Exception):
    """A line that ends the record being read: ``bad`` says why; ``grown``: the text of the
    line at which the record passed the limit (None: a bad line)."""

    def __init__(self, bad: Bad, grown: str | None = None):
        self.bad, self.grown = bad, grown


class _Lines:
    """The file's lines for :mod:`csv`, each with its line break; a bad line, or a record
    grown past ``limit`` bytes, ends the record (:class:`_Broken`)."""

    def __init__(self, path: str, limit: int, multiline: bool = True):
        self.items = lines(path, limit)
        self.limit = limit
        self.multiline = multiline
        self.last = 0  # the number of the last line handed out
        self.size = 0  # the bytes of the record being read so far
        self.text = ""  # its text so far, as far as a rejected row shows it

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        item = next(self.items)
        if self.size and not self.multiline:  # asked for the next line inside a quoted field
            self.items = itertools.chain([item], self.items)  # the next record's first line
            raise _Broken(Bad(self.last, "bad_quote", f"a quote opened on line {self.last} is not "
                              "closed on its line (multiline_fields: false)", self.text))
        if isinstance(item, Bad):
            self.last = item.line_no
            raise _Broken(item)
        self.last, text = item
        self.size += len(text.encode()) + 1
        if len(self.text) < REJECTED_TEXT_CHARS:
            self.text = (self.text + "\n" + text if self.text else text)[:REJECTED_TEXT_CHARS]
        if self.size > self.limit:
            raise _Broken(Bad(self.last, "line_too_long", f"a record longer than {self.limit} "
                              "bytes (a quote never closed?)", text[:REJECTED_TEXT_CHARS]),
                          grown=text)
        return text + "\n"

    def through_quote(self, text: str) -> int | None:
        """After a record grew past the limit inside a quoted field at the line ``text``: read
        on, counting quotes, to the line where that field's quote closes, and return it (the
        record's last line). None, and the lines read handed out again, where it does not close
        within :data:`MAX_RECORD_BYTES` or before the file ends, or a line cannot be read."""
        held: list[Any] = []
        size, inside = self.size, text.count('"') % 2 == 0  # an odd count closes the quote
        while inside:
            item = next(self.items, None)
            if item is None or isinstance(item, Bad) or size > MAX_RECORD_BYTES:
                self.items = itertools.chain(held, [] if item is None else [item], self.items)
                return None
            held.append(item)
            size += len(item[1].encode()) + 1
            inside ^= item[1].count('"') % 2 == 1
        if held:
            self.last = held[-1][0]
        return self.last


def records(path: str, delimiter: str, max_line_bytes: int, multiline: bool = True
            ) -> Iterator[tuple[int, list[str]] | Bad]:
    """Each non-blank record's fields, with the line it starts on, or a :class:`Bad`.
    ``multiline``: a quoted field may run on to the next lines (a quote never closed is an
    :class:`InputError` naming its line: the rest of the file would be one field); else a
    quote not closed on its line rejects that line, and the next line starts a record."""
    source = _Lines(path, max_line_bytes, multiline)
    # csv's own limit on a field (131,072 characters) under the line limit's: the record's
    if csv.field_size_limit() < max_line_bytes:  # (a field over it read as a bad quote)
        csv.field_size_limit(max_line_bytes)

    def reader() -> Iterator[list[str]]:  # a new one after a broken record: from the next line
        return csv.reader(source, delimiter=delimiter, strict=True)

    parser = reader()
    while True:
        start, source.size, source.text = source.last + 1, 0, ""
        try:
            fields = next(parser)
        except StopIteration:
            return
        except _Broken as broken:
            bad = broken.bad
            end = (source.through_quote(broken.grown)
                   if broken.grown is not None and bad.line_no > start else None)
            if end is not None:  # a long quoted field, read through to its closing quote
                yield Bad(start, bad.reason, f"lines {start}-{end}: a record longer than "
                          f"{max_line_bytes} bytes, skipped whole", source.text)
            else:
                yield Bad(start, bad.reason, bad.detail if bad.line_no == start
                          else f"line {bad.line_no}: {bad.detail}", bad.text)
            parser = reader()
            continue
        except csv.Error as exc:
            if multiline and source.last > start and "unexpected end of data" in str(exc):
                raise InputError(path, start, f"a quote opened on this line is never closed: the "
                                 f"rest of the file (lines {start}-{source.last}) would be one "
                                 "field. Close it, or set the corpus's multiline_fields: false "
                                 "(a quote is then closed on its line or the line is rejected)") from None
            yield _unparsed(start, source.last, str(exc), source.text)
            parser = reader()
            continue
        if fields:
            yield start, fields


def _unparsed(start: int, line: int, message: str, text: str) -> Bad:
    """The rejected record :mod:`csv` could not parse (``text``: its lines as read): a lone
    carriage return in an unquoted field (``bad_field``; its message asks the programmer
    about ``newline=''``), else a quote out of place or never closed (``bad_quote``)."""
    if "new-line character seen in unquoted field" in message:
        return Bad(start, "bad_field", f"a carriage return (\\r) in a field that is not quoted (line {line})", text)
    return Bad(start, "bad_quote", f"{message} (line {line})", text)


def _rows(path: str, delimiter: str, max_line_bytes: int, roles, multiline: bool = False
          ) -> Iterator[tuple[int, dict[str, Any]] | Bad]:
    """``(line, {role: value})`` of each record, or a :class:`Bad`; ``roles(header)`` gives
    each role's column index from the header (an error naming the file when it cannot)."""
    items = records(path, delimiter, max_line_bytes, multiline)
    first = next(items, None)
    if first is None:
        raise InputError(path, None, "file has no header line (nothing but blank lines)")
    if isinstance(first, Bad):
        raise InputError(path, first.line_no, f"the header line cannot be read: {first.detail}")
    header = first[1]
    if twice := strict.repeated(header):
        raise InputError(path, first[0], f"the header names {', '.join(twice)} more than once")
    columns = roles(header)
    for item in items:
        if isinstance(item, Bad):
            yield item
            continue
        line_no, fields = item
        if len(fields) != len(header):
            yield Bad(line_no, "column_count", f"{len(fields)} fields, the header names {len(header)}",
                      delimiter.join(fields)[:REJECTED_TEXT_CHARS])
            continue
        yield line_no, {role: fields[i] for role, i in columns.items()}


def _corpus(spec: Spec, use: str, max_line_bytes: int) -> tuple[Iterator[Any], dict[str, str]]:
    """A corpus's rows and each role's column name."""
    names: dict[str, str] = {}

    def roles(header: list[str]) -> dict[str, int]:
        found = named.corpus_roles(spec.path, header, use, spec.fields or {},
                                   lambda role, name: _header_column(spec.path, header, role, name),
                                   header.index)
        names.update({role: header[i] for role, i in found.items()})
        return found

    return _rows(spec.path, spec.delimiter, max_line_bytes, roles, spec.multiline_fields), names


def _shown(v: dict[str, Any], delimiter: str) -> str:
    return delimiter.join(str(x) for x in v.values())[:REJECTED_TEXT_CHARS]


def _given(value: str | None) -> str | None:
    """A score or label field: an empty one is none given."""
    return value if value is not None and value.strip() else None


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    """One candidate a record: the ``s1`` and ``s2`` columns, the score and label where given."""
    rows, names = _corpus(spec, "pairs", max_line_bytes)
    for item in rows:
        if isinstance(item, Bad):
            yield Candidate(item.line_no, item.text, None, method, source_file=spec.path,
                            reason=item.reason, detail=item.detail)
            continue
        line_no, v = item
        (score, bad_score), (label, bad_label) = (named.parsed(_given(v.get(r)), r, names.get(r, r))
                                                  for r in ("score", "label"))
        if bad_score or bad_label:
            yield Candidate(line_no, _shown(v, spec.delimiter), None, method, source_file=spec.path,
                            reason=f"bad_{'score' if bad_score else 'label'}", detail=bad_score or bad_label)
            continue
        yield Candidate(line_no, v["s1"], v["s2"], method, 1, score, label, source_file=spec.path)


def bitext(spec: Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    """One Czech-English pair a record: the ``cs`` and ``en`` columns (or those ``fields``
    names)."""
    rows, _ = _corpus(spec, "bitext", max_line_bytes)
    for item in rows:
        if isinstance(item, Bad):
            yield BitextPair(item.line_no, item.text, None, item.reason, item.detail)
        else:
            yield BitextPair(item[0], item[1]["cs"], item[1]["en"])


def _set(path: str, needed: tuple[str, ...], optional: tuple[str, ...], max_line_bytes: int,
         fields: dict[str, str] | None) -> Iterator[tuple[int, dict[str, Any]] | Bad]:
    def roles(header: list[str]) -> dict[str, int]:
        return named.set_roles(path, header, needed, optional, header.index,
                               lambda role, name: _header_column(path, header, role, name), fields)
    return _rows(path, ",", max_line_bytes, roles)


def _header_column(path: str, header: list[str], role: str, name: str) -> int:
    """The index of the column ``fields`` names for ``role``; an error naming the file."""
    if name not in header:
        raise InputError(path, 1, f"fields.{role}: no column {name} (the header has "
                                  f"{', '.join(header)[:200]})")
    return header.index(name)


def sts(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None
        ) -> Iterator[Scored | Bad]:
    """Each pair and its gold score as given (``s1``/``sentence1``, ``s2``/``sentence2``,
    ``score`` or else ``label``, or the columns ``fields`` names; a pair without a score is
    skipped and counted)."""
    for item in _set(path, ("s1", "s2"), ("score",), max_line_bytes, fields):
        yield item if isinstance(item, Bad) else Scored(item[1]["s1"], item[1]["s2"],
                                                        _given(item[1].get("score")))


def labelled(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None
             ) -> tuple[list[tuple[str, str]], list[int], int]:
    """The pairs and their ``label`` (0/1/true/false; empty: debatable, dropped), from the
    columns ``fields`` names or ``datasets``' names; a record that gives no pair is an error
    naming the file and line."""
    def one(item: tuple[int, dict[str, Any]] | Bad) -> Labelled | Bad:
        if isinstance(item, Bad):
            return item
        line_no, v = item
        label, bad = named.parsed(_given(v["label"]), "label", (fields or {}).get("label", "label"))
        return Bad(line_no, "bad_label", bad, None) if bad else Labelled(line_no, v["s1"], v["s2"], label)

    return collect_labelled((one(i) for i in _set(path, ("s1", "s2", "label"), (), max_line_bytes, fields)), path)
