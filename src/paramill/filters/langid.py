"""Language identification of both English sides (OpusFilter's LanguageIDFilter; datatrove's
and firefox-translations-training's language filters): the probability, under fastText's
lid.176 model (:mod:`paramill.text.langid`), that the reference (``langid_ref``) and the
candidate (``langid_cand``) are English.

It catches what the other filters do not: a back-translation that copies its Czech source,
an MT output left untranslated, a tweet in another language. Selection drops a pair with a
bound on the columns (``select.bounds: {langid_ref: [0.5, null], langid_cand: [0.5, null]}``
in the shipped configs and presets); the score job says how many sides it found in another
language, and which languages.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from paramill.filters.base import Batch, Column, Direction, Filter
from paramill.text.langid import identify


@dataclass(frozen=True)
class Langid(Filter):
    name = "langid"
    doc = ("Probability that the reference (langid_ref) and the candidate (langid_cand) are "
           "English (fastText lid.176); bound them from below in select.bounds.")
    order = 0
    #: the language both sides should be in
    language: ClassVar[str] = "en"

    def __post_init__(self):  # the languages found on sides below 0.5, for the job's record
        object.__setattr__(self, "_found", Counter())

    def columns(self) -> list[Column]:
        return [Column("langid_ref", Direction.HIGHER, "P(English) of the reference (lid.176)"),
                Column("langid_cand", Direction.HIGHER, "P(English) of the candidate (lid.176)")]

    def score(self, batch: Batch) -> dict[str, Any]:
        out = {}
        for column, texts in (("langid_ref", batch.refs), ("langid_cand", batch.candidates)):
            langs, probs = identify(texts, self.language)
            out[column] = probs
            self._found.update(f"{lang or 'none'}" for lang, p in zip(langs, probs) if p < 0.5)
        return out

    def summary(self) -> dict[str, Any]:
        """What the job's record and last line say: sides below 0.5 by the language found."""
        return {"not_english_sides": sum(self._found.values()),
                "languages_found": dict(self._found.most_common(10))}
