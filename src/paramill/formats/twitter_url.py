"""The Twitter URL corpus (Lan et al. 2017) as released: ``s1 \\t s2 \\t (n, 6) \\t url``, one
pair a line, ``n`` of 6 crowd workers judging the pair a paraphrase.

Read as a pair corpus (labelled by the corpus's ``positive_votes``/``negative_votes``), as
the paraphrase identifier's labelled data (the corpus's own rule: 4-6 a paraphrase, 0-2 not,
3 debatable) and as an STS set (the score: the votes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from paramill.text import numbers as strict
from paramill.formats.rows import Bad, Candidate, FileSpec, Labelled, Scored
from paramill.formats.reading import bad_fields, collect_labelled, fields, rejected
from paramill.config.typed import setting

NAME = "twitter-url"
#: the names the identifier (``url_raw``) and STS evaluation (``twitter_url``) used for it
ALIASES = ("url_raw", "twitter_url")
DESCRIPTION = "the Twitter URL corpus: `s1 \\t s2 \\t (votes, 6) \\t url`"
COLUMNS = 4


@dataclass(frozen=True)
class Spec(FileSpec):
    positive_votes: int = setting(
        4, "At least this many of the 6 votes make a paraphrase (label 1).", minimum=0, maximum=6)
    negative_votes: int = setting(
        2, "At most this many make a non-paraphrase (label 0); votes between are rejected as "
        "debatable (the corpus's own rule: 4-6 yes, 0-2 no, 3 left out).", minimum=0, maximum=6)
    keep: Literal["positive", "all"] = setting(
        "positive", "Keep only paraphrases (rejecting the rest as not_paraphrase), or every "
        "labelled pair.")


def check(spec: Spec, use: str, where: str) -> None:
    if spec.negative_votes >= spec.positive_votes:
        raise ValueError(f"{where}: negative_votes ({spec.negative_votes}) must be below "
                         f"positive_votes ({spec.positive_votes})")


@dataclass(frozen=True)
class Judged:
    """One pair with its votes: ``votes`` of ``total`` workers said paraphrase."""

    line_no: int
    s1: str
    s2: str
    votes: int
    total: int
    url: str

    def label(self, positive: int = 4, negative: int = 2) -> int | None:
        """1 at ``positive`` votes or more, 0 at ``negative`` or fewer, None between."""
        return 1 if self.votes >= positive else 0 if self.votes <= negative else None


def read(path: str, max_line_bytes: int = 65536) -> Iterator[Judged | Bad]:
    """The pairs of ``path`` in order; a line without 4 columns is ``column_count``, votes
    that are not ``(n, total)`` with 0 <= n <= total and total >= 1 are ``bad_votes``."""
    for item in fields(str(path), max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, columns = item
        if len(columns) != COLUMNS:
            yield bad_fields(line_no, columns, "column_count",
                             f"expected {COLUMNS} tab-separated columns (s1, s2, (n,6), url), "
                             f"found {len(columns)}")
            continue
        found = strict.votes(columns[2])
        if found is None:
            yield bad_fields(line_no, columns, "bad_votes",
                             f"column 3: votes {columns[2][:40]!r} are not (n, total) with "
                             "0 <= n <= total and total >= 1")
            continue
        yield Judged(line_no, columns[0].strip(), columns[1].strip(), found[0], found[1],
                     columns[3].strip())


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    """n >= positive_votes is a paraphrase (label 1), n <= negative_votes is not (label 0),
    anything between is rejected as ``debatable``; with ``keep: positive`` the
    non-paraphrases are rejected as ``not_paraphrase``. The score is n / total."""
    path = spec.path
    for item in read(path, max_line_bytes):
        if isinstance(item, Bad):
            yield rejected(item, method, path)
            continue
        ref, cand, why = item.s1, item.s2, f"{item.votes} votes of {item.total}"
        label = item.label(spec.positive_votes, spec.negative_votes)
        if label is None:
            yield Candidate(item.line_no, ref, cand, method, source_file=path,
                            reason="debatable", detail=why)
        elif label == 0 and spec.keep == "positive":
            yield Candidate(item.line_no, ref, cand, method, label=0, source_file=path,
                            reason="not_paraphrase", detail=why)
        else:
            yield Candidate(item.line_no, ref, cand, method, 1, item.votes / item.total, label,
                            source_file=path)


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored | Bad]:
    """Each pair scored by its votes."""
    for item in read(path, max_line_bytes):
        yield item if isinstance(item, Bad) else Scored(item.s1, item.s2, item.votes)


def labelled(path: str, max_line_bytes: int = 65536
             ) -> tuple[list[tuple[str, str]], list[int], int]:
    """The corpus's own rule: 4-6 votes a paraphrase, 0-2 not, 3 dropped."""
    return collect_labelled((item if isinstance(item, Bad) else
                             Labelled(item.line_no, item.s1, item.s2, item.label())
                             for item in read(path, max_line_bytes)), path)
