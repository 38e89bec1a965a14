"""SentencePiece subwords: separate Czech and English models (ParaBank 2 §3.2).

Training streams sentences from bitext shards; inference uses Viterbi segmentation, and
``sample`` gives the stochastic segmentations of subword regularisation (Kudo 2018) that
OpenNMT-py applies while training (``src_subword_nbest``/``alpha``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import sentencepiece as spm

from paramill.run import device
from paramill.run.job import output_job
from paramill.io.tableread import iter_parquet_batches
from paramill.run.modelfiles import open_sentencepiece
from paramill.provenance import Run
from paramill.config.typed import Settings, setting


@dataclass(frozen=True)
class SubwordSettings(Settings):
    vocab_size: int = setting(
        20000, "Vocabulary size per language (a small corpus may reach fewer pieces).", minimum=8)
    character_coverage: float = setting(
        0.9999, "Share of characters covered by the model.", minimum=0.9, maximum=1)
    model_type: Literal["unigram", "bpe"] = setting(
        "unigram", "SentencePiece algorithm (unigram supports subword regularisation; bpe needs "
        "nmt.train.subword_nbest: 1).")
    input_sentence_size: int = setting(
        10_000_000, "Sentences sampled for training the model.", minimum=1000)
    seed: int = setting(13, "Random seed.")


def sentences(shards: Iterable[str | Path], column: str) -> Iterator[str]:
    for batch in iter_parquet_batches(list(shards), columns=[column]):
        yield from (s for s in batch.column(0).to_pylist() if s)


def train(shards: list[str | Path], lang: str, model: str | Path, settings: SubwordSettings,
          rule: str = "spm_train") -> int:
    """Train a model on the ``lang`` column of ``shards``; writes ``model`` (.model) and its .vocab.

    Returns the vocabulary size reached (a small corpus may not reach ``vocab_size``).
    """
    model = Path(model)
    vocab = model.with_suffix(".vocab")
    run = Run(rule=rule, params={"lang": lang, **asdict(settings)}, inputs=list(shards))
    with output_job(run, model, vocab) as job:
        t_model, t_vocab = job.paths
        prefix = t_model.with_suffix("")
        spm.set_random_generator_seed(settings.seed)
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences(shards, lang), model_prefix=str(prefix),
            vocab_size=settings.vocab_size, character_coverage=settings.character_coverage,
            model_type=settings.model_type, input_sentence_size=settings.input_sentence_size,
            shuffle_input_sentence=True, hard_vocab_limit=False, minloglevel=2)
        shutil.move(f"{prefix}.model", t_model)
        shutil.move(f"{prefix}.vocab", t_vocab)
        size = Segmenter(t_model).vocab_size
        job.rows_out = size
    return size


class Segmenter:
    """A loaded SentencePiece model: Viterbi ``encode``, stochastic ``sample``, ``decode``.
    Each batch call uses the job's threads (:func:`paramill.device.threads`): left to itself
    SentencePiece starts one per CPU of the machine, whatever the job was given."""

    def __init__(self, model: str | Path):
        self.path = Path(model)
        self.sp = open_sentencepiece(model)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, texts: list[str]) -> list[list[str]]:
        return self.sp.encode(texts, out_type=str, num_threads=device.threads())

    def decode(self, pieces: list[list[str]]) -> list[str]:
        return self.sp.decode(pieces, num_threads=device.threads())


#: a model's tokens that are no SentencePiece piece (OpenNMT-py's and CTranslate2's specials)
SPECIALS = frozenset({"<blank>", "<s>", "</s>", "<unk>", "<pad>"})
#: the least share of a model's vocabulary (its specials aside) that the pieces of the
#: SentencePiece model given for that side must hold: the sample's own models hold 98-99.5%
#: of theirs, the other language's 19-22%
MIN_FIT = 0.5


def model_vocabulary(model_dir: str | Path, side: str) -> list[str] | None:
    """The ``side`` (source or target) vocabulary of a CTranslate2 model directory, or its
    shared one; else that of the OpenNMT-py checkpoint in the folder (a model the
    ``opennmt-py`` engine decodes, given without CTranslate2's files); None where it has none
    of them. A file that is not a list of tokens is an
    :class:`~paramill.errors.InputError` naming it."""
    import json

    from paramill.errors import InputError
    from paramill.nmt.checkpoints import checkpoint_path

    for name in (f"{side}_vocabulary", "shared_vocabulary", "vocabulary"):
        for ext, load in ((".json", lambda p: json.loads(p.read_text(encoding="utf-8"))),
                          (".txt", lambda p: p.read_text(encoding="utf-8").splitlines())):
            path = Path(model_dir) / f"{name}{ext}"
            if path.exists():
                try:
                    tokens = load(path)
                except ValueError as exc:  # JSON's errors and UnicodeDecodeError
                    raise InputError(path, None, f"not a CTranslate2 vocabulary ({exc})") from None
                if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                    raise InputError(path, None, "not a CTranslate2 vocabulary (a JSON list of "
                                     "the tokens, as its converter writes it)")
                return tokens
    path = checkpoint_path(model_dir)
    return checkpoint_vocabulary(path, side) if path.is_file() else None


def checkpoint_vocabulary(path: Path, side: str) -> list[str]:
    """The ``side`` vocabulary an OpenNMT-py checkpoint holds (``vocab["src"]`` or
    ``["tgt"]``), its tensors left in the file; an :class:`~paramill.errors.InputError`
    naming it where it cannot be read or holds no list of tokens there."""
    import zipfile

    from paramill.errors import InputError
    from paramill.nmt.checkpoints import load_checkpoint

    try:  # torch maps only its zip format (every torch.save since 1.6)
        checkpoint = load_checkpoint(path, mmap=zipfile.is_zipfile(path))
    except (ValueError, OSError) as exc:
        raise InputError(path, None, str(exc).removeprefix(f"{path}: ")) from None
    vocab = checkpoint.get("vocab") if isinstance(checkpoint, dict) else None
    tokens = vocab.get({"source": "src", "target": "tgt"}[side]) if isinstance(vocab, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise InputError(path, None, f"an OpenNMT-py checkpoint without a {side} vocabulary "
                         "(vocab: {src: [tokens], tgt: [tokens]}, as OpenNMT-py saves it)")
    return tokens


def check_fit(segmenter: Segmenter, model_dir: str | Path, side: str) -> float | None:
    """The share of the ``side`` vocabulary of ``model_dir`` that ``segmenter``'s pieces hold
    (None where the folder keeps no vocabulary); an :class:`~paramill.errors.InputError`
    naming the SentencePiece model where it is under :data:`MIN_FIT`: every sentence would be
    cut into pieces the model reads as ``<unk>`` (the source and target models swapped, or
    another model's), and it would translate the whole corpus into noise without a word."""
    from paramill.errors import InputError

    tokens = [t for t in model_vocabulary(model_dir, side) or () if t not in SPECIALS]
    if not tokens:
        return None
    pieces = {segmenter.sp.id_to_piece(i) for i in range(segmenter.vocab_size)}
    share = sum(t in pieces for t in tokens) / len(tokens)
    if share < MIN_FIT:
        raise InputError(segmenter.path, None, f"a SentencePiece model that does not fit the "
                         f"{side} side of {model_dir}: its pieces are {share:.0%} of that side's "
                         f"{len(tokens):,} tokens (a model's own SentencePiece model: nearly all). "
                         "Are the source and target SentencePiece models swapped, or another "
                         "model's?")
    return share


def check_fits(source: Segmenter, target: Segmenter, model_dir: str | Path) -> None:
    """:func:`check_fit` of both sides of the model ``model_dir``."""
    check_fit(source, model_dir, "source")
    check_fit(target, model_dir, "target")
