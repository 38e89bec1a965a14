"""Paraphrastic sentence embeddings (Wieting et al. 2017, ParaNMT §4-5): WORD, TRIGRAM, LSTM,
BLSTM and GRAN encoders and their combinations, trained with the margin loss on paraphrase
pairs; ``load_model(path).encode(sentences)`` for everything downstream.

The package imports torch only when a model is used, so that :mod:`paramill.embed.sweep`
stays light for the workflow."""

from typing import Any

__all__ = ["SentenceEncoder", "load_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from paramill.embed import model

        return getattr(model, name)
    raise AttributeError(f"module 'paramill.embed' has no attribute {name!r}")
