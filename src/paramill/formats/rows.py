"""The rows a layout's reader gives: a bitext pair, a candidate paraphrase, a scored STS
pair, a labelled pair, or a line that gives none (``Bad``, or a row with ``reason`` set);
and ``FileSpec``, the settings of a layout read from one file."""

from __future__ import annotations

from dataclasses import dataclass

from paramill.config.typed import Settings, setting


@dataclass(frozen=True)
class FileSpec(Settings):
    """The settings of a layout read from one file and nothing else."""

    path: str = setting(doc="The file. Plain, .gz, .xz, .zst or .bz2.", type="string")


@dataclass(frozen=True)
class Bad:
    """A line that gives no record: ``reason`` (a short code), ``detail`` (for people) and
    the line's text as far as it can be shown."""

    line_no: int
    reason: str
    detail: str
    text: str | None


@dataclass(slots=True)
class BitextPair:
    """One Czech-English pair of a bitext corpus, or one unusable line (``reason`` set)."""

    line_no: int
    cs: str | None
    en: str | None
    reason: str | None = None
    detail: str | None = None


@dataclass(slots=True)
class Candidate:
    """One candidate paraphrase of a reference, or one unusable line (``reason`` set)."""

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


@dataclass(frozen=True)
class Scored:
    """One pair of an STS set with its gold score as written (``None``: a pair the set
    gives no score for; the evaluation skips and counts it)."""

    s1: str | None
    s2: str | None
    score: str | float | None


@dataclass(frozen=True)
class Labelled:
    """One labelled pair: ``label`` 1 (paraphrase), 0, or None (debatable: dropped)."""

    line_no: int
    s1: str
    s2: str
    label: int | None
