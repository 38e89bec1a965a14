"""Units the encoders read: lower-cased words (the project tokeniser), character trigrams
of " " + sentence, or SentencePiece pieces; and the vocabularies mapping them to ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np

from paramill.run import device
from paramill.run.modelfiles import open_sentencepiece
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
    """Turns sentences into unit sequences for one unit type. SentencePiece units come from
    a model file (``sp_model``) or the model's bytes (``sp_proto``, as checkpoints carry it)."""

    def __init__(self, unit: str, lowercase: bool = True, sp_model: str | None = None,
                 sp_proto: bytes | None = None):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
        self.unit, self.lowercase, self.sp_model = unit, lowercase, sp_model
        self.sp_proto = sp_proto
        self._sp = None
        if unit == "sp":
            import sentencepiece as spm

            if sp_proto is not None:
                self._sp = spm.SentencePieceProcessor(model_proto=sp_proto)
            elif sp_model:
                self._sp = open_sentencepiece(sp_model)
            else:
                raise ValueError("unit sp needs a SentencePiece model (sp_model, or one trained "
                                 "on the training pairs)")

    def __reduce__(self):  # to worker processes: rebuilt from its settings (SentencePiece's
        return Featurizer, (self.unit, self.lowercase, self.sp_model, self.sp_proto)  # processor is not picklable)

    def __call__(self, sentence: str) -> list[str]:
        if self.unit == "word":
            return words(sentence, self.lowercase)
        if self.unit == "trigram":
            return trigrams(sentence, self.lowercase)
        text = sentence.lower() if self.lowercase else sentence
        return self._sp.encode(text, out_type=str)  # type: ignore[union-attr]

    # -- SentencePiece units in bulk: piece ids, not strings (featurising a corpus) ----------

    @property
    def piece_size(self) -> int:
        """The SentencePiece model's number of pieces (units sp)."""
        return self._sp.get_piece_size()  # type: ignore[union-attr]

    @property
    def unk_id(self) -> int:
        """The SentencePiece model's ``<unk>`` id (units sp)."""
        return self._sp.unk_id()  # type: ignore[union-attr]

    @property
    def model_digest(self) -> str:
        """sha256 of the SentencePiece model's bytes (units sp): what an id store of its own
        ids depends on."""
        import hashlib

        return hashlib.sha256(self._sp.serialized_model_proto()).hexdigest()  # type: ignore[union-attr]

    @property
    def pieces(self) -> list[str]:
        """The SentencePiece model's pieces in id order (units sp)."""
        sp = self._sp
        return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]  # type: ignore[union-attr]

    def piece_ids(self, sentences: list[str], batch: int = 4096) -> tuple[np.ndarray, np.ndarray]:
        """Units sp of many sentences at once, as SentencePiece ids: a flat int32 array and each
        sentence's length. One call into SentencePiece per ``batch`` sentences (about 4x the
        per-sentence :meth:`__call__` with its strings); its answer, a Python list of ints a
        sentence, costs ~36 bytes an id, so a chunk of 100,000 sentences in one call held
        ~90 MB a worker for a moment. Text the model does not know (a character it never
        saw) is the model's ``<unk>`` id here, where :meth:`__call__` gives its surface:
        :meth:`unknown` recovers those."""
        import itertools

        flats, lengths = [], []
        for start in range(0, len(sentences), batch):
            part = sentences[start:start + batch]
            texts = [s.lower() for s in part] if self.lowercase else list(part)
            # SentencePiece's batch call starts a thread per CPU of the *machine* unless told
            # (num_threads -1: not the job's allocation); a featurising worker has 1
            ids = self._sp.encode(texts, out_type=int, num_threads=device.threads())  # type: ignore[union-attr]
            sizes = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
            flats.append(np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32,
                                     count=int(sizes.sum())))
            lengths.append(sizes)
        if not lengths:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
        return np.concatenate(flats), np.concatenate(lengths)

    def unknown(self, sentences: list[str], flat: np.ndarray, lengths: np.ndarray
                ) -> tuple[np.ndarray, list[str]]:
        """The positions in ``flat`` (of :meth:`piece_ids`) that hold ``<unk>``, and the units
        :meth:`__call__` gives there (the unknown text itself: SentencePiece segments the same
        way whichever it returns). Only sentences with such a piece are encoded again."""
        hits = np.flatnonzero(flat == self._sp.unk_id())  # type: ignore[union-attr]
        if not len(hits):
            return hits, []
        starts = np.concatenate([[0], np.cumsum(lengths)])
        rows = np.searchsorted(starts, hits, side="right") - 1
        pieces: dict[int, list[str]] = {}
        surfaces = []
        for pos, row in zip(hits.tolist(), rows.tolist()):
            if row not in pieces:
                pieces[row] = self(sentences[row])
            surfaces.append(pieces[row][pos - int(starts[row])])
        return hits, surfaces

    def piece_counts(self, sentences: list[str]) -> tuple[np.ndarray, Counter]:
        """The units of ``sentences`` counted as :meth:`__call__` would give them: an array of
        counts by piece id (``<unk>`` left at 0), and a Counter of the unknown texts."""
        flat, lengths = self.piece_ids(sentences)
        counts = np.bincount(flat, minlength=self._sp.get_piece_size())  # type: ignore[union-attr]
        counts[self._sp.unk_id()] = 0  # type: ignore[union-attr]
        return counts, Counter(self.unknown(sentences, flat, lengths)[1])

    def counter(self, piece_counts: np.ndarray) -> Counter:
        """Piece id counts as the Counter of pieces that :meth:`Vocab.from_counts` reads."""
        pieces = self.pieces
        return Counter({pieces[i]: int(piece_counts[i]) for i in np.flatnonzero(piece_counts)})

    def lookup(self, vocab: Vocab) -> np.ndarray:
        """SentencePiece id -> ``vocab`` id (:data:`UNK`'s for pieces not in it)."""
        return np.array([vocab.index.get(p, 1) for p in self.pieces], dtype=np.int32)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64s (wrapping): a well-spread 64-bit value of each."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def row_keys(*columns: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A 64-bit key for each row of unit ids, over one or more ``(flat, offsets)`` columns of
    the same rows (row i: ``flat[offsets[i]:offsets[i + 1]]``; one column a unit): rows with
    the same ids in the same order in every column have the same key, other rows another but
    for a chance of about 2^-64 a pair (each id mixed with its position, summed, the sum mixed
    with the length and the other columns'). As int64, which torch compares on any device."""
    keys = None
    with np.errstate(over="ignore"):
        for flat, offsets in columns:
            lengths = np.diff(offsets)
            column = lengths.astype(np.uint64)
            if len(flat):
                pos = np.arange(len(flat)) - np.repeat(offsets[:-1], lengths)
                terms = _mix(_mix(flat.astype(np.uint64)) + pos.astype(np.uint64))
                filled = lengths > 0
                column[filled] += np.add.reduceat(terms, offsets[:-1][filled])
            keys = _mix(column if keys is None else column + _mix(keys))
    return keys.view(np.int64)


def train_sentencepiece(sentences: Iterable[str], vocab_size: int, model_type: str = "unigram",
                        character_coverage: float = 0.995, input_sentences: int = 1_000_000,
                        seed: int = 13, threads: int = 1) -> bytes:
    """A SentencePiece model trained on ``sentences`` (the vocabulary size a soft limit, as
    the authors' at-scale code has it); returns the model's bytes. Memory: at most
    ``input_sentences`` sentences, sampled."""
    import io

    import sentencepiece as spm

    out = io.BytesIO()
    raised: list[BaseException] = []

    def kept() -> Iterator[str]:
        # the trainer (C++) makes what its iterator raises a RuntimeError of its own, the
        # reader's error naming the file and row folded into it: kept, raised as it was
        try:
            yield from (s for s in sentences if s.strip())
        except Exception as exc:
            raised.append(exc)
            raise

    spm.set_random_generator_seed(seed)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=kept(), model_writer=out,
            vocab_size=vocab_size, model_type=model_type, character_coverage=character_coverage,
            input_sentence_size=input_sentences, shuffle_input_sentence=True, hard_vocab_limit=False,
            num_threads=threads, minloglevel=2)
    except RuntimeError:
        if raised:
            raise raised[0] from None
        raise
    return out.getvalue()
