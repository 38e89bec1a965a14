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

from paramill import device
from paramill.job import output_job
from paramill.io import iter_parquet_batches
from paramill.modelfiles import open_sentencepiece
from paramill.provenance import Run
from paramill.settings import Settings, setting


@dataclass(frozen=True)
class SubwordSettings(Settings):
    vocab_size: int = setting(
        20000, "Vocabulary size per language (a small corpus may reach fewer pieces).", minimum=8)
    character_coverage: float = setting(
        0.9999, "Share of characters covered by the model.", minimum=0.9, maximum=1)
    model_type: Literal["unigram", "bpe"] = setting(
        "unigram", "SentencePiece algorithm (unigram supports subword regularisation).")
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

    def sample(self, texts: list[str], nbest: int = -1, alpha: float = 0.1) -> list[list[str]]:
        return self.sp.encode(texts, out_type=str, enable_sampling=True, nbest_size=nbest,
                              alpha=alpha, num_threads=device.threads())

    def decode(self, pieces: list[list[str]]) -> list[str]:
        return self.sp.decode(pieces, num_threads=device.threads())
