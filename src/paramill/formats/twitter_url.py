"""The Twitter URL corpus (Lan et al. 2017) as released: ``s1 \\t s2 \\t (n, 6) \\t url``, one
pair a line, ``n`` of 6 crowd workers judging the pair a paraphrase.

Read by the pair corpora (``pairs.corpora.*.format``), the paraphrase identifier's labelled
data (``twitter.identify.train``/``evaluate``) and STS evaluation (``evaluate.sts``), each
labelling the votes its own way: the corpus's rule is 4-6 a paraphrase, 0-2 not, 3 debatable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from paramill import fields as strict
from paramill.formats import Bad, bad_fields, fields

NAME = "twitter-url"
#: the names the identifier (``url_raw``) and STS evaluation (``twitter_url``) used for it
ALIASES = ("url_raw", "twitter_url")
DESCRIPTION = "the Twitter URL corpus: `s1 \\t s2 \\t (votes, 6) \\t url`"
COLUMNS = 4


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
