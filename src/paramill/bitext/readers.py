"""Streaming readers for bitext formats: CzEng 1.x, CzEng 2.0-style TSV, Moses pairs, TSV.

Each reader yields one :class:`RawPair` per input line (per line pair for Moses), in
order, holding at most one line in memory. A line that cannot become a pair (invalid
UTF-8, wrong number of columns, longer than the limit) is yielded with a ``reason`` so
it lands in the rejected table; a file that cannot be used at all (empty, truncated or
corrupt compression, Moses sides of different lengths) raises :class:`InputError`
naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from paramill import fields as strict
from paramill.io import (REJECTED_TEXT_CHARS, InputError, LineStream, decode_line as _decode,
                         shown_text as _shown)
from paramill.settings import check_spec, setting

FORMATS = ("czeng1", "czeng2", "moses", "tsv")


@dataclass(frozen=True)
class CorpusSpec:
    """One input corpus as configured under ``bitext.corpora.<name>``."""

    name: str
    format: Literal["czeng1", "czeng2", "moses", "tsv"] = setting(
        doc="czeng1: CzEng 1.6/1.7 plain-text export (pair id, filter score, Czech, English); "
        "czeng2: CzEng 2.0-style TSV, columns named by `columns`; moses: two aligned files `cs` "
        "and `en`, one sentence a line; tsv: generic tab-separated file, columns named by "
        "`columns` or by a header line.")
    path: str | None = setting(
        None, "The file (czeng1, czeng2, tsv). Plain, .gz, .xz, .zst or .bz2.", no_default=True,
        type="string")
    cs: str | None = setting(None, "Czech side (moses).", no_default=True, type="string")
    en: str | None = setting(None, "English side (moses).", no_default=True, type="string")
    columns: tuple[str, ...] | None = setting(
        None, "Column names in order; two of them must be `cs` and `en` (czeng2, tsv).",
        no_default=True, type="array", minItems=2)
    header: bool = setting(False, "The first line holds the column names (czeng2, tsv).")

    schema_extra: ClassVar[dict[str, Any]] = {"allOf": [{
        "if": {"properties": {"format": {"const": "moses"}}},
        "then": {"required": ["cs", "en"]}, "else": {"required": ["path"]}}]}

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any]) -> CorpusSpec:
        check_spec(cls, spec, f"bitext.corpora.{name}", required=("format",))
        columns = spec.get("columns")
        made = cls(name=name, format=spec["format"], path=spec.get("path"), cs=spec.get("cs"),
                   en=spec.get("en"), columns=tuple(columns) if columns else None,
                   header=bool(spec.get("header", False)))
        made.check()
        return made

    def check(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"corpus {self.name}: unknown format {self.format!r} (one of {FORMATS})")
        if self.format == "moses":
            if not (self.cs and self.en):
                raise ValueError(f"corpus {self.name}: format moses needs both `cs` and `en` files")
        elif not self.path:
            raise ValueError(f"corpus {self.name}: format {self.format} needs `path`")
        if self.columns is not None and not {"cs", "en"} <= set(self.columns):
            raise ValueError(f"corpus {self.name}: `columns` must name a `cs` and an `en` column")

    @property
    def files(self) -> list[str]:
        return [self.cs, self.en] if self.format == "moses" else [self.path]  # type: ignore[list-item]

    @property
    def source_file(self) -> str:
        """The value of the ``source_file`` column: the file, or ``cs;en`` for Moses pairs."""
        return ";".join(self.files)


@dataclass(slots=True)
class RawPair:
    line_no: int
    cs: str | None
    en: str | None
    reason: str | None = None
    detail: str | None = None


def _too_long(line_no: int, limit: int) -> RawPair:
    return RawPair(line_no, None, None, "line_too_long", f"line longer than {limit} bytes")


def _read_columns(path: str, max_line_bytes: int, columns: tuple[str, ...] | None,
                  header: bool, cs_name: str = "cs", en_name: str = "en") -> Iterator[RawPair]:
    stream = LineStream(path, max_line_bytes)
    it = iter(stream)
    names = columns
    if header:
        first = next(it, None)
        if first is None:  # pragma: no cover - LineStream raises on empty files
            return
        _, raw = first
        text = _decode(raw)[0] if raw is not None else None
        if text is None:
            raise InputError(path, 1, "header line is not valid UTF-8 or too long")
        found = tuple(text.split("\t"))
        if names is not None and found != names:
            raise InputError(path, 1, f"header {list(found)} differs from configured columns {list(names)}")
        names = found
        if twice := strict.repeated(names):
            raise InputError(path, 1, f"header {list(names)} names {', '.join(twice)} more than once")
        if not {cs_name, en_name} <= set(names):
            raise InputError(path, 1, f"header {list(names)} has no `{cs_name}` and `{en_name}` columns")
    assert names is not None
    width = len(names)
    i_cs, i_en = names.index(cs_name), names.index(en_name)
    for line_no, raw in it:
        if raw is None:
            yield _too_long(line_no, max_line_bytes)
            continue
        text, bad = _decode(raw)
        if text is None:
            yield RawPair(line_no, _shown(raw), None, "invalid_utf8", bad)
            continue
        fields = text.split("\t")
        if len(fields) != width:
            yield RawPair(line_no, text[:REJECTED_TEXT_CHARS], None, "column_count",
                          f"expected {width} tab-separated columns, found {len(fields)}")
            continue
        yield RawPair(line_no, fields[i_cs], fields[i_en])


CZENG1_COLUMNS = ("pair_id", "score", "cs", "en")


def read_czeng1(path: str, max_line_bytes: int = 65536) -> Iterator[RawPair]:
    """CzEng 1.6/1.7 plain text: ``pair id \\t filter score \\t Czech \\t English``."""
    return _read_columns(path, max_line_bytes, CZENG1_COLUMNS, header=False)


def read_tsv(path: str, columns: tuple[str, ...] | None = None, header: bool = False,
             max_line_bytes: int = 65536) -> Iterator[RawPair]:
    """Tab-separated columns named by ``columns`` or by a header line; picks ``cs``/``en``.

    With neither, the file must have exactly two columns, Czech then English.
    """
    if columns is None and not header:
        columns = ("cs", "en")
    return _read_columns(path, max_line_bytes, columns, header)


def read_moses(cs_path: str, en_path: str, max_line_bytes: int = 65536) -> Iterator[RawPair]:
    """Two aligned files, one sentence a line. Different line counts is an error."""
    cs_lines, en_lines = LineStream(cs_path, max_line_bytes), LineStream(en_path, max_line_bytes)
    cs_it, en_it = iter(cs_lines), iter(en_lines)
    while True:
        a = next(cs_it, None)
        b = next(en_it, None)
        if a is None and b is None:
            return
        if a is None or b is None:
            short, long_ = (cs_path, en_path) if a is None else (en_path, cs_path)
            ended = (cs_lines if a is None else en_lines).lines
            raise InputError(long_, ended + 1,
                             f"Moses sides differ in length: {short} ended after {ended} lines "
                             f"but {long_} goes on")
        line_no, raw_cs = a
        _, raw_en = b
        if raw_cs is None or raw_en is None:
            yield _too_long(line_no, max_line_bytes)
            continue
        cs, bad_cs = _decode(raw_cs)
        en, bad_en = _decode(raw_en)
        if cs is None or en is None:
            detail = f"cs: {bad_cs}" if cs is None else f"en: {bad_en}"
            yield RawPair(line_no, cs if cs is not None else _shown(raw_cs),
                          en if en is not None else _shown(raw_en), "invalid_utf8", detail)
            continue
        yield RawPair(line_no, cs, en)


def read_corpus(spec: CorpusSpec, max_line_bytes: int = 65536) -> Iterator[RawPair]:
    """Dispatch on ``spec.format``."""
    if spec.format == "moses":
        return read_moses(spec.cs, spec.en, max_line_bytes)  # type: ignore[arg-type]
    if spec.format == "czeng1":
        return read_czeng1(spec.path, max_line_bytes)  # type: ignore[arg-type]
    columns = spec.columns
    if spec.format == "czeng2" and columns is None and not spec.header:
        columns = ("cs", "en")
    return read_tsv(spec.path, columns, spec.header, max_line_bytes)  # type: ignore[arg-type]


def source_paths(spec: CorpusSpec) -> list[Path]:
    return [Path(p) for p in spec.files]
