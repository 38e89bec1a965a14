"""Units the encoders read: lower-cased words (the project tokeniser), character trigrams
of " " + sentence, or SentencePiece pieces; and the vocabularies mapping them to ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from paramill.text import tokenize

PAD, UNK = "<pad>", "<unk>"
UNITS = ("word", "trigram", "sp")


def words(sentence: str, lowercase: bool = True) -> list[str]:
    return tokenize(sentence.lower() if lowercase else sentence)


def trigrams(sentence: str, lowercase: bool = True) -> list[str]:
    """Character trigrams of ``" " + sentence`` (white space folded)."""
    text = " " + " ".join(sentence.split())
    if lowercase:
        text = text.lower()
    return [text[i:i + 3] for i in range(max(1, len(text) - 2))]


class Vocab:
    """Units to ids; id 0 pads, id 1 is unknown."""

    def __init__(self, units: list[str]):
        self.units = [PAD, UNK, *[u for u in units if u not in (PAD, UNK)]]
        self.index = {u: i for i, u in enumerate(self.units)}

    def __len__(self) -> int:
        return len(self.units)

    @classmethod
    def build(cls, sequences: Iterable[list[str]], min_count: int = 1,
              max_size: int | None = None) -> Vocab:
        return cls.from_counts(Counter(u for seq in sequences for u in seq), min_count, max_size)

    @classmethod
    def from_counts(cls, counts: Counter, min_count: int = 1, max_size: int | None = None) -> Vocab:
        """Units seen at least ``min_count`` times, most frequent first (ties by unit)."""
        kept = sorted((u for u, c in counts.items() if c >= min_count), key=lambda u: (-counts[u], u))
        return cls(kept[:max_size] if max_size else kept)

    def ids(self, units: list[str]) -> list[int]:
        return [self.index.get(u, 1) for u in units] or [1]


class Featurizer:
    """Turns sentences into unit sequences for one unit type."""

    def __init__(self, unit: str, lowercase: bool = True, sp_model: str | None = None):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
        self.unit, self.lowercase, self.sp_model = unit, lowercase, sp_model
        self._sp = None
        if unit == "sp":
            if not sp_model:
                raise ValueError("unit sp needs a SentencePiece model (sp_model)")
            import sentencepiece as spm

            self._sp = spm.SentencePieceProcessor(model_file=sp_model)

    def __call__(self, sentence: str) -> list[str]:
        if self.unit == "word":
            return words(sentence, self.lowercase)
        if self.unit == "trigram":
            return trigrams(sentence, self.lowercase)
        text = sentence.lower() if self.lowercase else sentence
        return self._sp.encode(text, out_type=str)  # type: ignore[union-attr]
