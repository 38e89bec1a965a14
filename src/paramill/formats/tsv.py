"""Tab-separated columns, one row a line, the columns named by the corpus's ``columns`` or by
a header line; plain, .gz, .xz, .zst or .bz2.

Each use picks the columns it needs by name, and has a default order for a file with neither
``columns`` nor a header: a bitext corpus ``cs``, ``en``; a pair corpus ``s1`` (or
``en_ref``/``reference``), ``s2`` (or ``candidate``/``paraphrase``), optionally ``score`` and
``label``; an STS set ``score``, ``s1``, ``s2`` (the SemEval 2012-2017 re-distributions).
Other columns are ignored. A line with a different number of columns is ``column_count``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from paramill.text import numbers as strict
from paramill.formats.rows import Bad, BitextPair, Candidate, Scored
from paramill.io.lines import LineStream
from paramill.formats.reading import bad_candidate, bad_score, candidate_fields, fields
from paramill.io.lines import REJECTED_TEXT_CHARS
from paramill.errors import InputError
from paramill.config.typed import Settings, setting

NAME = "tsv"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = ("tab-separated columns named by `columns` or a header line (bitext: cs, en; "
               "pairs: s1, s2, optional score and label; STS: score, s1, s2)")
#: names a pair corpus's column may carry for the reference and the paraphrase
REF_NAMES, CAND_NAMES = ("s1", "en_ref", "reference"), ("s2", "candidate", "paraphrase")
DEFAULTS = {"bitext": ("cs", "en"), "pairs": ("s1", "s2")}


@dataclass(frozen=True)
class Spec(Settings):
    path: str = setting(doc="The file. Plain, .gz, .xz, .zst or .bz2.", type="string")
    columns: tuple[str, ...] | None = setting(
        None, "Column names in order (bitext: two of them `cs` and `en`; pairs: s1 and s2, or "
        "en_ref/reference and candidate/paraphrase, optionally score and label; other names "
        "are ignored).", no_default=True, type="array", minItems=2)
    header: bool = setting(False, "The first line holds the column names.")


def check(spec: Spec, use: str, where: str) -> None:
    if spec.columns is not None:
        try:
            roles(use, spec.columns, where, None)
        except InputError as exc:
            raise ValueError(str(exc)) from None


def roles(use: str, names: tuple[str, ...], path: str, line: int | None) -> dict[str, int]:
    """{role: column index} of ``names`` for ``use``; an error names ``path`` (and ``line``)
    where a name repeats or a needed column is missing."""
    if twice := strict.repeated(names):
        raise InputError(path, line,
                         f"columns {list(names)} name {', '.join(twice)} more than once")
    if use == "bitext":
        if not {"cs", "en"} <= set(names):
            raise InputError(path, line, f"columns {list(names)} have no `cs` and `en` columns")
        return {"cs": names.index("cs"), "en": names.index("en")}
    found: dict[str, int] = {}
    for role, choices in (("en_ref", REF_NAMES), ("candidate", CAND_NAMES),
                          ("score", ("score",)), ("label", ("label",))):
        at = [i for i, n in enumerate(names) if n in choices]
        if len(at) > 1:
            raise InputError(path, line, f"columns {list(names)} name the {role} twice")
        if at:
            found[role] = at[0]
    if "en_ref" not in found or "candidate" not in found:
        raise InputError(path, line, f"columns {list(names)} have no s1 (reference) and s2 "
                         "(paraphrase) columns")
    return found


def _known(use: str, names: list[str]) -> bool:
    """Whether every one of ``names`` is a column name ``use`` knows, and they name its
    columns (a header line, where no line of text is only such names)."""
    known = {"cs", "en"} if use == "bitext" else {*REF_NAMES, *CAND_NAMES, "score", "label"}
    try:
        return set(names) <= known and bool(roles(use, tuple(names), "", None))
    except InputError:
        return False


def _named(rows: Iterator[Any], spec: Spec, use: str, default: tuple[str, ...]
           ) -> tuple[Iterator[Any], tuple[str, ...], dict[str, int]]:
    """The rows, the column names (the header line read from ``rows`` when there is one) and
    roles. Without ``header``, a first line of column names only is an error: it would be
    read as a row (a pair ``cs`` -> ``en``)."""
    names = spec.columns if spec.columns is not None or spec.header else default
    if spec.header:
        first = next(rows, None)
        if first is None or not isinstance(first, tuple) or not isinstance(first[1], list):
            raise InputError(spec.path, 1, "header line is not valid UTF-8 or too long")
        found = tuple(first[1])
        if names is not None and found != names:
            raise InputError(spec.path, 1, f"header {list(found)} differs from configured "
                             f"columns {list(names)}")
        names = found
    elif (first := next(rows, None)) is not None:
        if isinstance(first, tuple) and isinstance(first[1], list) and (
                tuple(first[1]) == names or _known(use, first[1])):
            raise InputError(spec.path, first[0], f"this line holds column names "
                             f"({', '.join(first[1])}), which would be read as a row: set "
                             "`header: true` for this corpus")
        rows = itertools.chain([first], rows)
    assert names is not None
    return rows, names, roles(use, names, spec.path, 1 if spec.header else None)


def bitext(spec: Spec, max_line_bytes: int = 65536, default: tuple[str, ...] = DEFAULTS["bitext"]
           ) -> Iterator[BitextPair]:
    """The ``cs`` and ``en`` columns of each line."""
    rows = fields(LineStream(spec.path, max_line_bytes))
    rows, names, found = _named(rows, spec, "bitext", default)
    width, i_cs, i_en = len(names), found["cs"], found["en"]
    for item in rows:
        if isinstance(item, Bad):
            yield BitextPair(item.line_no, item.text, None, item.reason, item.detail)
            continue
        line_no, columns = item
        if len(columns) != width:
            yield BitextPair(line_no, "\t".join(columns)[:REJECTED_TEXT_CHARS], None,
                             "column_count",
                             f"expected {width} tab-separated columns, found {len(columns)}")
            continue
        yield BitextPair(line_no, columns[i_cs], columns[i_en])


def pairs(spec: Spec, method: str = "tsv", max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    """One candidate a line: the reference and paraphrase columns, the score and label where
    named (a score that is not a finite decimal is ``bad_score``, a label not 0/1/true/false
    ``bad_label``)."""
    path = spec.path
    rows = candidate_fields(LineStream(path, max_line_bytes), method)
    rows, names, found = _named(rows, spec, "pairs", DEFAULTS["pairs"])
    width = len(names)
    for line_no, columns in rows:
        if isinstance(columns, Candidate):
            yield columns
            continue
        if len(columns) != width:
            yield bad_candidate(line_no, columns, method, path, "column_count",
                                f"expected {width} tab-separated columns, found {len(columns)}")
            continue
        score = label = None
        if "score" in found and (score := strict.number(columns[found["score"]])) is None:
            yield bad_score(line_no, columns, names[found["score"]], columns[found["score"]],
                            method, path)
            continue
        if "label" in found and (label := strict.label(columns[found["label"]])) is None:
            yield bad_candidate(line_no, columns, method, path, "bad_label",
                                f"column {names[found['label']]}: label "
                                f"{columns[found['label']][:40]!r} is not 0/1/true/false")
            continue
        yield Candidate(line_no, columns[found["en_ref"]], columns[found["candidate"]], method,
                        1, score, label, source_file=path)


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored | Bad]:
    """``score \\t s1 \\t s2`` a line; a line of fewer columns gives no pair, more are
    ignored (the re-distributions add source columns)."""
    for item in fields(path, max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        f = item[1]
        yield Scored(f[1] if len(f) > 1 else None, f[2] if len(f) > 2 else None, f[0])
