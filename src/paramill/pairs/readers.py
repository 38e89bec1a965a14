"""Streaming readers for paraphrase-pair corpora: ParaNMT-50M, ParaBank 2, TSV, Parquet, MT
outputs beside their references, and the Twitter URL corpus.

Each reader yields one :class:`RawCandidate` per candidate paraphrase, in file order, holding
at most one line (one row group for Parquet) in memory. A line that cannot give candidates
(invalid UTF-8, wrong number of columns, an unreadable score or vote, an over-long line) is
yielded once with a ``reason`` so it lands in the rejected table; a file that cannot be used
at all (empty, corrupt compression, hypothesis files of different lengths, a Parquet file
without ``s1``/``s2``) raises :class:`~paramill.io.InputError` naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from paramill import fields as strict
from paramill import formats
from paramill.formats import Bad, twitter_url
from paramill.io import REJECTED_TEXT_CHARS, InputError, LineStream, check_regular_file
from paramill.pairs.names import systems
from paramill.settings import check_spec, setting

FORMATS = ("paranmt", "parabank2", "tsv", "parquet", "references", "twitter-url")
#: ParaBank 2 lists at most this many paraphrases after the reference
PARABANK2_MAX = 5
#: names a tsv/parquet column may carry for the reference and the paraphrase
REF_NAMES, CAND_NAMES = ("s1", "en_ref", "reference"), ("s2", "candidate", "paraphrase")


@dataclass(frozen=True)
class PairCorpusSpec:
    """One pair corpus as configured under ``pairs.corpora.<name>``."""

    name: str
    format: Literal["paranmt", "parabank2", "tsv", "parquet", "references", "twitter-url"] = setting(
        doc="paranmt: `reference \\t paraphrase \\t score` (the ParaNMT-50M release); parabank2: "
        "`score \\t reference \\t paraphrase ...` (up to five, ranked; the ParaBank 2 release); "
        "tsv: columns named by `columns` or a header line (s1/s2, optional score, label); "
        "parquet: columns s1, s2 (optional score, label); references: a `reference` file and "
        "line-aligned `hypotheses` files, one per MT system; twitter-url: the Twitter URL "
        "corpus, `s1 \\t s2 \\t (votes, 6) \\t url`, labelled by `votes`.")
    path: str | None = setting(
        None, "The file (all formats but references). Plain, .gz, .xz, .zst or .bz2.",
        no_default=True, type="string")
    reference: str | None = setting(
        None, "The reference file, one sentence a line (references).", no_default=True,
        type="string")
    hypotheses: dict[str, str] | list[str] | None = setting(
        None, "MT outputs line-aligned with the reference (references): {system: file}, or a "
        "list of files and globs, each system named by its file name less the prefix and suffix "
        "all the names share.", no_default=True,
        anyOf=[{"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
               {"type": "array", "items": {"type": "string"}, "minItems": 1}])
    columns: tuple[str, ...] | None = setting(
        None, "Column names in order (tsv): s1 and s2 (or en_ref/reference and "
        "candidate/paraphrase), optionally score and label; other names are ignored.",
        no_default=True, type="array", minItems=2)
    header: bool = setting(False, "The first line holds the column names (tsv).")
    method: str | None = setting(
        None, "The candidates' `method` (default: the format; references: the system name).",
        no_default=True, type="string", pattern="^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
    positive_votes: int = setting(
        4, "twitter-url: at least this many of the 6 votes make a paraphrase (label 1).",
        minimum=0, maximum=6)
    negative_votes: int = setting(
        2, "twitter-url: at most this many make a non-paraphrase (label 0); votes between "
        "are rejected as debatable (the corpus's own rule: 4-6 yes, 0-2 no, 3 left out).",
        minimum=0, maximum=6)
    keep: Literal["positive", "all"] = setting(
        "positive", "twitter-url: keep only paraphrases (rejecting the rest as not_paraphrase), "
        "or every labelled pair.")

    dedup: bool = setting(
        True, "Deduplicate this corpus (with pairs.clean.dedup). false keeps its exact "
        "duplicates and lets later corpora keep theirs too: e.g. to compare MT systems on every "
        "sentence, where two systems' identical outputs are otherwise one pair (the system "
        "first in name order keeps it).")

    schema_extra: ClassVar[dict[str, Any]] = {"allOf": [{
        "if": {"properties": {"format": {"const": "references"}}},
        "then": {"required": ["reference", "hypotheses"]}, "else": {"required": ["path"]}}]}

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any]) -> PairCorpusSpec:
        check_spec(cls, spec, f"pairs.corpora.{name}")
        known = dict(spec)
        if isinstance(known.get("columns"), list):
            known["columns"] = tuple(known["columns"])
        if isinstance(known.get("hypotheses"), list):
            known["hypotheses"] = list(known["hypotheses"])
        made = cls(name=name, **known)
        made.check()
        return made

    def check(self) -> None:
        where = f"pairs.corpora.{self.name}"
        if self.format not in FORMATS:
            raise ValueError(f"{where}: unknown format {self.format!r} (one of {FORMATS})")
        if self.format == "references":
            if not self.reference or not self.hypotheses:
                raise ValueError(f"{where}: format references needs `reference` and `hypotheses`")
        elif not self.path:
            raise ValueError(f"{where}: format {self.format} needs `path`")
        if self.negative_votes >= self.positive_votes:
            raise ValueError(f"{where}: negative_votes ({self.negative_votes}) must be below "
                             f"positive_votes ({self.positive_votes})")

    def systems(self) -> dict[str, str]:
        """{system name: file} of a references corpus, in a fixed order."""
        try:
            return systems(self.hypotheses or {})
        except FileNotFoundError as exc:
            raise InputError(str(exc), None, "no hypothesis file matches this pattern") from None

    @property
    def files(self) -> list[str]:
        if self.format == "references":
            return [self.reference, *self.systems().values()]  # type: ignore[list-item]
        return [self.path]  # type: ignore[list-item]


@dataclass(slots=True)
class RawCandidate:
    """One candidate of a reference, or one unusable line (``reason`` set)."""

    line_no: int
    en_ref: str | None
    candidate: str | None
    method: str
    rank: int = 1
    score: float | None = None
    label: int | None = None
    source_file: str = ""
    reason: str | None = None
    detail: str | None = None


def _rejected(bad: Bad, method: str, path: str) -> RawCandidate:
    return RawCandidate(bad.line_no, bad.text, None, method, source_file=path, reason=bad.reason,
                        detail=bad.detail)


def _fields(stream: LineStream, method: str) -> Iterator[tuple[int, list[str] | RawCandidate]]:
    """Tab-separated fields of each line, or the rejected row of a line that has none."""
    for item in formats.fields(stream):
        yield ((item.line_no, _rejected(item, method, stream.path)) if isinstance(item, Bad)
               else item)


def _bad(line_no: int, fields: list[str], method: str, path: str, reason: str,
         detail: str) -> RawCandidate:
    shown = "\t".join(fields)[:REJECTED_TEXT_CHARS]
    return RawCandidate(line_no, shown, None, method, source_file=path, reason=reason,
                        detail=detail)




def read_paranmt(path: str, method: str = "paranmt",
                 max_line_bytes: int = 65536) -> Iterator[RawCandidate]:
    """``reference \\t paraphrase \\t score`` per line; the score is kept as given."""
    for line_no, fields in _fields(LineStream(path, max_line_bytes), method):
        if isinstance(fields, RawCandidate):
            yield fields
        elif len(fields) != 3:
            yield _bad(line_no, fields, method, path, "column_count",
                       f"expected 3 tab-separated columns, found {len(fields)}")
        elif (score := strict.number(fields[2])) is None:
            yield _bad(line_no, fields, method, path, "bad_score",
                       f"column 3: score {fields[2][:40]!r} is not a finite decimal number")
        else:
            yield RawCandidate(line_no, fields[0], fields[1], method, 1, score, source_file=path)


def read_parabank2(path: str, method: str = "parabank2",
                   max_line_bytes: int = 65536) -> Iterator[RawCandidate]:
    """``score \\t reference \\t paraphrase_1 ... paraphrase_k`` (k <= 5, best first): one
    candidate per paraphrase, ranked 1..k, each carrying the line's score."""
    for line_no, fields in _fields(LineStream(path, max_line_bytes), method):
        if isinstance(fields, RawCandidate):
            yield fields
            continue
        paraphrases = [p for p in fields[2:] if p != ""]
        if len(fields) < 3 or not paraphrases or len(fields) > 2 + PARABANK2_MAX:
            yield _bad(line_no, fields, method, path, "column_count",
                       f"expected a score, a reference and 1 to {PARABANK2_MAX} paraphrases, "
                       f"found {len(fields)} columns")
        elif (score := strict.number(fields[0])) is None:
            yield _bad(line_no, fields, method, path, "bad_score",
                       f"column 1: score {fields[0][:40]!r} is not a finite decimal number")
        else:
            for rank, paraphrase in enumerate(paraphrases, 1):
                yield RawCandidate(line_no, fields[1], paraphrase, method, rank, score,
                                   source_file=path)


def _column_roles(names: tuple[str, ...], path: str, line: int | None) -> dict[str, int]:
    if twice := strict.repeated(names):
        raise InputError(path, line, f"columns {list(names)} name {', '.join(twice)} more than once")
    roles: dict[str, int] = {}
    for role, choices in (("en_ref", REF_NAMES), ("candidate", CAND_NAMES),
                          ("score", ("score",)), ("label", ("label",))):
        found = [i for i, n in enumerate(names) if n in choices]
        if len(found) > 1:
            raise InputError(path, line, f"columns {list(names)} name the {role} twice")
        if found:
            roles[role] = found[0]
    if "en_ref" not in roles or "candidate" not in roles:
        raise InputError(path, line, f"columns {list(names)} have no s1 (reference) and s2 "
                         "(paraphrase) columns")
    return roles




def read_tsv(path: str, columns: tuple[str, ...] | None = None, header: bool = False,
             method: str = "tsv", max_line_bytes: int = 65536) -> Iterator[RawCandidate]:
    """Tab-separated columns named by ``columns`` or a header line; with neither, two columns
    (reference, paraphrase)."""
    stream = LineStream(path, max_line_bytes)
    lines = _fields(stream, method)
    names = columns if columns is not None or header else ("s1", "s2")
    if header:
        first = next(lines, None)
        if first is None or isinstance(first[1], RawCandidate):
            raise InputError(path, 1, "header line is not valid UTF-8 or too long")
        found = tuple(first[1])
        if names is not None and found != names:
            raise InputError(path, 1, f"header {list(found)} differs from configured columns "
                             f"{list(names)}")
        names = found
    assert names is not None
    roles = _column_roles(names, path, 1 if header else None)
    width = len(names)
    for line_no, fields in lines:
        if isinstance(fields, RawCandidate):
            yield fields
            continue
        if len(fields) != width:
            yield _bad(line_no, fields, method, path, "column_count",
                       f"expected {width} tab-separated columns, found {len(fields)}")
            continue
        score = label = None
        if "score" in roles and (score := strict.number(fields[roles["score"]])) is None:
            yield _bad(line_no, fields, method, path, "bad_score",
                       f"column {names[roles['score']]}: score {fields[roles['score']][:40]!r} "
                       "is not a finite decimal number")
            continue
        if "label" in roles and (label := strict.label(fields[roles["label"]])) is None:
            yield _bad(line_no, fields, method, path, "bad_label",
                       f"column {names[roles['label']]}: label {fields[roles['label']][:40]!r} "
                       "is not 0/1/true/false")
            continue
        yield RawCandidate(line_no, fields[roles["en_ref"]], fields[roles["candidate"]], method,
                           1, score, label, source_file=path)


def read_parquet(path: str, method: str = "parquet", batch_rows: int = 50000
                 ) -> Iterator[RawCandidate]:
    """A Parquet file with ``s1``/``s2`` (optional ``score``, ``label``), read by row group;
    ``line_no`` is the row number counted from 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_regular_file(path)
    try:
        handle = pq.ParquetFile(path, pre_buffer=False)  # see paramill.io.iter_parquet_batches
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise InputError(path, None, f"not a readable Parquet file ({exc})") from None
    schema = handle.schema_arrow
    names = tuple(schema.names)
    roles = _column_roles(names, path, None)
    for role in ("en_ref", "candidate"):
        kind = schema.field(roles[role]).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise InputError(path, None, f"column {names[roles[role]]} holds {kind}, not text")
    wanted = [names[roles[r]] for r in ("en_ref", "candidate", "score", "label") if r in roles]
    row = 0
    for batch in handle.iter_batches(batch_size=batch_rows, columns=wanted):
        data = batch.to_pydict()
        refs, cands = data[names[roles["en_ref"]]], data[names[roles["candidate"]]]
        scores = data[names[roles["score"]]] if "score" in roles else [None] * len(refs)
        labels = data[names[roles["label"]]] if "label" in roles else [None] * len(refs)
        for ref, cand, given_score, given_label in zip(refs, cands, scores, labels):
            row += 1
            score = None if given_score is None else strict.number(given_score)
            if given_score is not None and score is None:
                yield RawCandidate(row, ref, cand, method, source_file=path, reason="bad_score",
                                   detail=f"column {names[roles['score']]}: score "
                                          f"{str(given_score)[:40]!r} is not a finite number")
                continue
            label = None if given_label is None else strict.label(given_label)
            if given_label is not None and label is None:
                yield RawCandidate(row, ref, cand, method, source_file=path, reason="bad_label",
                                   detail=f"column {names[roles['label']]}: label "
                                          f"{str(given_label)[:40]!r} is not 0/1/true/false")
                continue
            yield RawCandidate(row, ref, cand, method, 1, score, label, source_file=path)
    if row == 0:
        raise InputError(path, None, "file has no rows")


def read_references(reference: str, hypotheses: dict[str, str],
                    max_line_bytes: int = 65536) -> Iterator[RawCandidate]:
    """Line *i* of the reference against line *i* of every system's output: one candidate per
    system (``method`` = the system). Files of different lengths are an error."""
    ref_stream = LineStream(reference, max_line_bytes)
    streams = {name: LineStream(path, max_line_bytes) for name, path in hypotheses.items()}
    refs = _fields(ref_stream, "reference")
    hyps = {name: _fields(stream, name) for name, stream in streams.items()}
    while True:
        ref = next(refs, None)
        got = {name: next(it, None) for name, it in hyps.items()}
        ended = [name for name, value in got.items() if value is None]
        if ref is None and len(ended) == len(got):
            return
        if ref is None or ended:
            done = [reference] if ref is None else [hypotheses[n] for n in ended]
            going = [hypotheses[n] for n, v in got.items() if v is not None]
            going += [] if ref is None else [reference]
            raise InputError(done[0], ref_stream.lines + (ref is None),
                             f"line-aligned files differ in length: {', '.join(done)} ended "
                             f"after {ref_stream.lines - (ref is not None)} lines but "
                             f"{', '.join(going)} go on")
        line_no, ref_fields = ref
        for name, (_, fields) in got.items():  # type: ignore[misc]
            path = hypotheses[name]
            if isinstance(ref_fields, RawCandidate):
                yield RawCandidate(line_no, ref_fields.en_ref, None, name, source_file=reference,
                                   reason=ref_fields.reason, detail=f"reference: {ref_fields.detail}")
            elif isinstance(fields, RawCandidate):
                fields.method, fields.en_ref, fields.candidate = name, "\t".join(ref_fields), fields.en_ref
                yield fields
            else:
                yield RawCandidate(line_no, "\t".join(ref_fields), "\t".join(fields), name,
                                   source_file=path)


def read_twitter_url(path: str, positive_votes: int = 4, negative_votes: int = 2,
                     keep: str = "positive", method: str = "twitter-url",
                     max_line_bytes: int = 65536) -> Iterator[RawCandidate]:
    """The Twitter URL corpus (:mod:`paramill.formats.twitter_url`): n >= positive_votes is
    a paraphrase (label 1), n <= negative_votes is not (label 0), anything between is
    rejected as debatable; with ``keep="positive"`` the non-paraphrases are rejected as
    ``not_paraphrase``."""
    for item in twitter_url.read(path, max_line_bytes):
        if isinstance(item, Bad):
            yield _rejected(item, method, path)
            continue
        ref, cand, why = item.s1, item.s2, f"{item.votes} votes of {item.total}"
        label = item.label(positive_votes, negative_votes)
        if label is None:
            yield RawCandidate(item.line_no, ref, cand, method, source_file=path,
                               reason="debatable", detail=why)
        elif label == 0 and keep == "positive":
            yield RawCandidate(item.line_no, ref, cand, method, label=0, source_file=path,
                               reason="not_paraphrase", detail=why)
        else:
            yield RawCandidate(item.line_no, ref, cand, method, 1, item.votes / item.total, label,
                               source_file=path)


def read_pairs(spec: PairCorpusSpec, max_line_bytes: int = 65536,
               batch_rows: int = 50000) -> Iterator[RawCandidate]:
    """Dispatch on ``spec.format``."""
    method = spec.method or spec.format
    if spec.format == "paranmt":
        return read_paranmt(spec.path, method, max_line_bytes)  # type: ignore[arg-type]
    if spec.format == "parabank2":
        return read_parabank2(spec.path, method, max_line_bytes)  # type: ignore[arg-type]
    if spec.format == "tsv":
        return read_tsv(spec.path, spec.columns, spec.header, method,  # type: ignore[arg-type]
                        max_line_bytes)
    if spec.format == "parquet":
        return read_parquet(spec.path, method, batch_rows)  # type: ignore[arg-type]
    if spec.format == "references":
        return read_references(spec.reference, spec.systems(), max_line_bytes)  # type: ignore[arg-type]
    return read_twitter_url(spec.path, spec.positive_votes, spec.negative_votes,  # type: ignore[arg-type]
                            spec.keep, method, max_line_bytes)
