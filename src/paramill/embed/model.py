"""Sentence encoders in torch and their self-describing checkpoints.

Components (Wieting et al. 2016-2018):

``word``     mean of word (or SentencePiece) embeddings
``trigram``  mean of character-trigram embeddings of " " + sentence
``lstm``     mean of the LSTM's hidden states
``blstm``    mean over time of the average of the forward and backward hidden states
``gran``     gated recurrent averaging: a_t = x_t * sigmoid(W_x x_t + W_h h_t + b), averaged

Several components are trained jointly and combined by concatenation or addition.
A checkpoint holds the spec, the vocabularies, the weights, and (while training) the
optimiser state and epoch, so ``load_model(path)`` needs nothing else.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from paramill.run import device
from paramill.formats import glove
from paramill.run.modelfiles import on_meta, read_torch_file, rebuilt_from, with_weights
from paramill.embed.features import Featurizer, Vocab, train_sentencepiece
from paramill.config.typed import Settings, setting

FORMAT = "paramill-embed/1"
COMPONENTS = ("word", "trigram", "lstm", "blstm", "gran")
RECURRENT = ("lstm", "blstm", "gran")


@dataclass(frozen=True)
class ModelSpec(Settings):
    components: tuple[str, ...] = setting(
        ("word",),
        "Encoders trained jointly: word (averaging), trigram (character trigrams), lstm, blstm, "
        "gran. Each at most once.", items={"enum": ["word", "trigram", "lstm", "blstm", "gran"]},
        minItems=1, uniqueItems=True)
    combine: Literal["concat", "add"] = setting("concat", "How several components are combined.")
    dim: int = setting(300, "Embedding size.", minimum=1)
    hidden: int = setting(300, "Hidden size of lstm/blstm (gran uses dim).", minimum=1)
    units: Literal["word", "sp"] = setting(
        "sp", "Units of word/lstm/blstm/gran: SentencePiece pieces (as the authors' at-scale "
        "code; on the Twitter URL pairs WORD reached STSb dev 77.7 over pieces, 66.4 over words) "
        "or lower-cased words (the ParaNMT and 2017 papers' setting).")
    sp_model: str | None = setting(
        None, "SentencePiece model for units sp; null: paramill trains one on the training "
        "sentences (the sp_* settings) and keeps it inside the checkpoint.")
    sp_vocab_size: int = setting(
        50000, "Vocabulary size of the SentencePiece model paramill trains (a soft limit; the "
        "authors' at-scale code: 50,000).", minimum=8)
    sp_model_type: Literal["unigram", "bpe"] = setting(
        "unigram", "Algorithm of the SentencePiece model paramill trains.")
    sp_character_coverage: float = setting(
        0.995, "Character coverage of the SentencePiece model paramill trains.", minimum=0.9,
        maximum=1)
    sp_input_sentences: int = setting(
        1_000_000, 'Sentences sampled (seeded) to train the SentencePiece model. The trainer '
                   "holds its sample in memory, so this bounds a training's peak memory whatever "
                   "the corpus's size; raise it for a larger vocabulary on a large corpus.",
        minimum=1000)
    lowercase: bool = setting(True, "Lower-case text before splitting into units.")
    min_count: int = setting(1, "Minimum count of a unit to enter the vocabulary.", minimum=1)
    max_vocab: int | None = setting(
        None, "Largest vocabulary per unit type (most frequent first).", minimum=1)
    init_std: float = setting(
        0.1, "Standard deviation of the initial unit embeddings (torch's default, which the "
        "authors' reference code keeps, is 1.0; at 5 epochs it trains to 11 points less STS).",
        exclusiveMinimum=0)
    word_vectors: str | None = setting(
        None, "GloVe-format text file to initialise word embeddings (units word; its size "
        "must equal dim).")

    def __post_init__(self):
        object.__setattr__(self, "components", tuple(self.components))
        bad = [c for c in self.components if c not in COMPONENTS]
        if not self.components or bad:
            raise ValueError(f"components must be among {COMPONENTS}, got {list(self.components)}")
        if len(set(self.components)) < len(self.components):
            # [word, word] trained two WORD models side by side: a typo for another component
            raise ValueError(f"components name each encoder at most once, got {list(self.components)}")
        if self.combine not in ("concat", "add"):
            raise ValueError(f"combine must be concat or add, not {self.combine!r}")
        if self.units not in ("word", "sp"):
            raise ValueError(f"units must be word or sp, not {self.units!r}")
        if self.word_vectors and self.units != "word":
            raise ValueError("word_vectors initialise word units: set units word to use them")
        if self.combine == "add" and len({self.out_dim(c) for c in self.components}) > 1:
            raise ValueError("combine add needs components of one size: set hidden equal to dim")

    def unit_of(self, component: str) -> str:
        return "trigram" if component == "trigram" else self.units

    def out_dim(self, component: str) -> int:
        return self.hidden if component in ("lstm", "blstm") else self.dim

    @property
    def recurrent(self) -> bool:
        return any(c in RECURRENT for c in self.components)


def real_positions(width: int, lengths: torch.Tensor) -> torch.Tensor:
    """[rows, width] booleans, true at each row's first ``length`` positions (its units),
    false at its padding; made where ``lengths`` are."""
    return torch.arange(width, device=lengths.device)[None, :] < lengths[:, None]


def _mean_weights(width: int, lengths: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[rows, width]: 1/length at each row's real positions, 0 at its padding."""
    return real_positions(width, lengths).to(dtype) / lengths.clamp(min=1)[:, None].to(dtype)


def _reversed_within(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """[rows, width] positions: a row's first ``length`` positions in reverse, then its
    padding in place (an empty row counts as length 1); applying it twice restores a row."""
    pos = torch.arange(width, device=lengths.device)[None, :]
    last = lengths.clamp(min=1, max=width)[:, None] - 1
    return torch.where(pos <= last, last - pos, pos)


def _masked_mean(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    mask = real_positions(values.size(1), lengths)
    summed = (values * mask.unsqueeze(-1)).sum(1)
    return summed / lengths.clamp(min=1).unsqueeze(-1).to(values.dtype)


def _embedding(vocab_size: int, dim: int, std: float = 0.1) -> nn.Embedding:
    """Embeddings initialised N(0, std^2); the default 0.1 is small enough that training with
    Adam at 0.001 moves them within a few epochs (torch's N(0, 1) barely changes in that
    time: 11 points of STS Benchmark dev on 11k pairs, benchmarks/embed/embed_reference.py)."""
    emb = nn.Embedding(vocab_size, dim, padding_idx=0)
    with torch.no_grad():  # torch's init, so that run.modelfiles.on_meta skips it on meta
        nn.init.normal_(emb.weight, 0.0, std)
        emb.weight[0].zero_()
    return emb


#: the most places one bag holds among the bags of padding after a flat run's rows
#: (:meth:`paramill.embed.buffer.Buffer.flat_runs`), whose sums are dropped (:func:`tail_bags`).
#: embedding_bag's CUDA kernel walks a bag's ids one after another, so it takes what its
#: longest bag takes: with the zeros in the last row's bag (up to 12.5% of a step's ids,
#: thousands for TRIGRAM) its forward was 824 of TRIGRAM's 1,178 µs a step on the device, and
#: 178 of WORD's 457 (H200, the step's
#: profile in benchmarks/records/h200-2026-11-28b). 64 bags whatever the zeros
#: did until a step's room became a bound (:func:`paramill.embed.megabatch.bound`), which
#: leaves about twice the real ids in zeros: 230 a bag for WORD, 957 for TRIGRAM on the
#: Twitter URL pairs, many times an average row (19.5 SentencePiece pieces, 92.6 trigrams;
#: the longest row of trigrams 392). At most 32 a bag keeps every tail bag shorter than an
#: average row.
TAIL_SPAN = 32

#: the dtype of a flat run's ids and offsets. ``embedding_bag``'s CUDA backward pass sorts
#: the ids over their whole width (8 radix passes for int64: 37 of WORD's 318 µs a step and
#: 53 of TRIGRAM's 440, H200 profile), 4 for int32, which holds any vocabulary.
FLAT_IDS = torch.int32


def tail_bags(size: int) -> int:
    """How many bags split the padding after the rows of a flat run of ``size`` places: enough
    that none holds more than :data:`TAIL_SPAN` (an even share of the padding each), a number
    the host knows from the size alone (a CUDA graph's inputs have fixed shapes)."""
    return max(1, -(-size // TAIL_SPAN))


class Averaging(nn.Module):
    def __init__(self, vocab_size: int, dim: int, std: float = 0.1):
        super().__init__()
        self.embedding = _embedding(vocab_size, dim, std)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor,
                weights: torch.Tensor | None = None) -> torch.Tensor:
        """The mean of each row's first ``lengths`` unit vectors, as one ``embedding_bag``
        (gather and weighted sum fused, forward and backward: no [rows, width, dim] tensor,
        a handful of kernels where the masked mean launched a dozen). Or, with ``weights``,
        the rows flat (:meth:`paramill.embed.buffer.Buffer.flat_runs`: ``ids`` one after another,
        then padding of weight 0; ``lengths`` then their offsets, and :func:`tail_bags` more
        among the padding, whose sums are left out): the same sums without padding between rows."""
        offsets, rows = None, ids.size(0)
        if weights is None:
            weights = _mean_weights(ids.size(1), lengths, self.embedding.weight.dtype)
        else:
            offsets, weights = lengths, weights.to(self.embedding.weight.dtype)
            rows = offsets.size(0) - tail_bags(ids.size(0))
        return F.embedding_bag(ids, self.embedding.weight, offsets, mode="sum", per_sample_weights=weights,
                               padding_idx=self.embedding.padding_idx)[:rows]


class Recurrent(nn.Module):
    """LSTM, BLSTM or GRAN over unit embeddings, mean-pooled over the real time steps."""

    def __init__(self, kind: str, vocab_size: int, dim: int, hidden: int, std: float = 0.1):
        super().__init__()
        self.kind = kind
        self.embedding = _embedding(vocab_size, dim, std)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=kind == "blstm")
        self.hidden = hidden
        if kind == "gran":
            self.gate_x = nn.Linear(dim, dim, bias=True)
            self.gate_h = nn.Linear(hidden, dim, bias=False)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Over the padded batch, never packed: packing needs the lengths on the host (on
        CUDA a read-back and a blocking copy each pass). A forward direction's states at a
        row's real positions never see the padding after them, so they are the packed ones;
        a BLSTM's backward direction reads each row reversed within its length
        (:func:`_reversed_within`), so it too starts at the row's last real unit. Padding
        positions are masked out of the mean. An empty row counts as one padding unit, as
        packing it as length 1 did. Padding costs work: training sorts a step's rows by length
        into passes (:func:`paramill.embed.megabatch.recurrent_steps`)."""
        x = self.embedding(ids)
        if self.kind == "blstm":  # each direction by itself: the module would run both on each
            flip = _reversed_within(lengths, ids.size(1))
            forward = self._direction(x, "")
            backward = self._direction(x.gather(1, flip[:, :, None].expand_as(x)), "_reverse")
            h = (forward + backward.gather(1, flip[:, :, None].expand_as(backward))) / 2
        else:
            h, _ = self.lstm(x)
        if self.kind == "gran":
            h = x * torch.sigmoid(self.gate_x(x) + self.gate_h(h))
        return _masked_mean(h, lengths)

    def _direction(self, x: torch.Tensor, suffix: str) -> torch.Tensor:
        """One direction of the bidirectional LSTM (its weights named ``*_l0{suffix}``) run
        forwards over ``x``, from a zero state."""
        params = [getattr(self.lstm, f"{name}_l0{suffix}")
                  for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        zeros = x.new_zeros(1, x.size(0), self.hidden)
        out, _, _ = torch.lstm(x, (zeros, zeros), params, True, 1, 0.0, self.training, False, True)
        return out


class SentenceEncoder(nn.Module):
    """The components of ``spec`` over their vocabularies; ``encode`` gives numpy vectors."""

    def __init__(self, spec: ModelSpec, vocabs: dict[str, Vocab], sp_proto: bytes | None = None):
        super().__init__()
        self.spec = spec
        self.vocabs = vocabs
        if sp_proto is None and "sp" in vocabs and spec.sp_model:  # carried in checkpoints too
            sp_proto = Path(spec.sp_model).read_bytes()
        self.sp_proto = sp_proto
        self.featurizers = featurizers(spec, sp_proto)
        parts = []
        for comp in spec.components:
            size = len(vocabs[spec.unit_of(comp)])
            if comp in ("word", "trigram"):
                parts.append(Averaging(size, spec.dim, spec.init_std))
            else:
                parts.append(Recurrent(comp, size, spec.dim, spec.hidden, spec.init_std))
        self.parts = nn.ModuleList(parts)
        #: each batch size halved for the GPU's memory while encoding ({"at", "batch_size", "now"})
        self.out_of_gpu_memory: list[dict[str, Any]] = []

    @property
    def dim(self) -> int:
        dims = [self.spec.out_dim(c) for c in self.spec.components]
        return sum(dims) if self.spec.combine == "concat" else dims[0]

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def units(self, sentences: list[str]) -> dict[str, list[list[str]]]:
        return {unit: [f(s) for s in sentences] for unit, f in self.featurizers.items()}

    def tensors(self, units: dict[str, list[list[str]]]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return self.id_tensors({unit: [self.vocabs[unit].ids(s) for s in seqs]
                                for unit, seqs in units.items()})

    def id_tensors(self, ids_by_unit: dict[str, list[list[int]]]
                   ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Padded id tensors and lengths, on the model's device."""
        out = {}
        for unit, ids in ids_by_unit.items():
            lengths = torch.tensor([len(i) for i in ids], dtype=torch.long)
            padded = torch.zeros(len(ids), int(lengths.max()) if len(ids) else 1, dtype=torch.long)
            for row, seq in enumerate(ids):
                padded[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
            out[unit] = (padded.to(self.device), lengths.to(self.device))
        return out

    def forward(self, feats: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        outs = [part(*feats[self.spec.unit_of(comp)]) for comp, part in zip(self.spec.components, self.parts)]
        return torch.cat(outs, dim=-1) if self.spec.combine == "concat" else torch.stack(outs).sum(0)

    @torch.no_grad()
    def encode(self, sentences: list[str], batch_size: int = 256, command: str = "encoding"
               ) -> np.ndarray:
        """Embeddings of ``sentences`` as a float32 array [n, dim], ``batch_size`` at a time.
        A batch that does not fit in the GPU's memory is encoded again at half the size, and
        the rest at that size (:func:`paramill.device.fit_gpu_memory`; each halving noted in
        ``command``'s log and kept in :attr:`out_of_gpu_memory`); a later call starts at the
        size that fitted."""
        was_training = self.training
        self.eval()
        if self.out_of_gpu_memory:
            batch_size = min(batch_size, self.out_of_gpu_memory[-1]["now"])

        chunks: list[np.ndarray] = []
        device.fitted_batches(
            sentences, batch_size, "batch_size", command, "sentence {}", self.out_of_gpu_memory,
            lambda part: chunks.append(self(self.tensors(self.units(part))).float().cpu().numpy()))
        self.train(was_training)
        return np.concatenate(chunks) if chunks else np.zeros((0, self.dim), dtype=np.float32)

    def checkpoint(self, **extra: Any) -> dict[str, Any]:
        """Everything ``load_model`` needs, the SentencePiece model's bytes included (as a
        uint8 tensor, which torch's weights-only loading accepts)."""
        data = {"format": FORMAT, "spec": asdict(self.spec),
                "vocabs": {unit: v.units for unit, v in self.vocabs.items()},
                "state_dict": self.state_dict(), **extra}
        if self.sp_proto is not None:
            data["sp_proto"] = torch.frombuffer(bytearray(self.sp_proto), dtype=torch.uint8)
        return data


def featurizers(spec: ModelSpec, sp_proto: bytes | None = None) -> dict[str, Featurizer]:
    """One featurizer per unit type the components read."""
    return {unit: Featurizer(unit, spec.lowercase, spec.sp_model, sp_proto)
            for unit in sorted({spec.unit_of(c) for c in spec.components})}


def needs_sentencepiece(spec: ModelSpec) -> bool:
    """Whether training must first train a SentencePiece model (units sp, no sp_model)."""
    return "sp" in {spec.unit_of(c) for c in spec.components} and not spec.sp_model


def sentencepiece_for(spec: ModelSpec, sentences, seed: int = 13, threads: int = 1) -> bytes:
    """The SentencePiece model ``spec`` asks paramill to train, on ``sentences``."""
    text = (s.lower() if spec.lowercase else s for s in sentences)
    return train_sentencepiece(text, spec.sp_vocab_size, spec.sp_model_type,
                               spec.sp_character_coverage, spec.sp_input_sentences, seed, threads)


def build(spec: ModelSpec, sentences: list[str]) -> SentenceEncoder:
    """A fresh encoder with vocabularies built from ``sentences`` (and word vectors if given;
    a SentencePiece model trained on them if the spec asks for one)."""
    proto = sentencepiece_for(spec, sentences) if needs_sentencepiece(spec) else None
    return build_from_counts(spec, {unit: Counter(u for s in sentences for u in f(s))
                                    for unit, f in featurizers(spec, proto).items()}, proto)


def build_from_counts(spec: ModelSpec, counts: dict[str, Counter], sp_proto: bytes | None = None,
                      fits: Callable[[int, dict[str, int]], None] | None = None) -> SentenceEncoder:
    """A fresh encoder with vocabularies from unit counts (and word vectors if given).
    ``fits``: called with the parameters the encoder will hold and its vocabularies' sizes
    before any is allocated (counted on torch's meta device), to refuse a model too large."""
    vocabs = {unit: Vocab.from_counts(c, spec.min_count, spec.max_vocab) for unit, c in counts.items()}
    if fits is not None:
        with on_meta():
            shape = SentenceEncoder(spec, vocabs, sp_proto)
        fits(sum(p.numel() for p in shape.parameters()), {unit: len(v) for unit, v in vocabs.items()})
    model = SentenceEncoder(spec, vocabs, sp_proto)
    if spec.word_vectors and "word" in vocabs:
        load_word_vectors(model, spec.word_vectors)
    return model


def load_word_vectors(model: SentenceEncoder, path: str | Path) -> int:
    """Initialise word-unit embeddings from a GloVe-format text file; returns rows set."""
    vocab = model.vocabs["word"]
    targets = [p.embedding for c, p in zip(model.spec.components, model.parts)
               if model.spec.unit_of(c) == "word"]
    found = 0
    for _, word, values in glove.read(path, model.spec.dim, set(vocab.index)):
        vec = torch.tensor(values)
        for emb in targets:
            with torch.no_grad():
                emb.weight[vocab.index[word]] = vec
        found += 1
    return found


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity (0 where a vector is zero)."""
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """What a paramill embedding model or resume checkpoint holds (:func:`read_torch_file`:
    an error naming the file where it is not one)."""
    return read_torch_file(path, FORMAT, "paramill embedding model")


def load_model(path: str | Path, map_device: str = "auto") -> SentenceEncoder:
    """Load a trained encoder (on CUDA when present, else CPU)."""
    data = read_checkpoint(path)
    with rebuilt_from(path, "paramill embedding model"):
        spec = ModelSpec.from_dict(data["spec"])
        proto = data.get("sp_proto")
        vocabs = {u: Vocab(units[2:]) for u, units in data["vocabs"].items()}
        sp = bytes(proto.numpy().tobytes()) if proto is not None else None
        model = with_weights(lambda: SentenceEncoder(spec, vocabs, sp), data["state_dict"])
    return model.to(device.pick(map_device)).eval()


@dataclass
class RNG:
    """Seeds for python and torch, kept in checkpoints so a resumed run continues exactly."""

    seed: int
    state: dict[str, Any] = field(default_factory=dict)

    def seed_all(self) -> None:
        random.seed(self.seed)
        torch.manual_seed(self.seed)

    def capture(self) -> dict[str, Any]:
        return {"python": random.getstate(), "torch": torch.get_rng_state()}

    @staticmethod
    def restore(state: dict[str, Any]) -> None:
        random.setstate(state["python"])
        torch.set_rng_state(state["torch"])
