"""Paraphrastic sentence embeddings (Wieting et al. 2017, ParaNMT §4-5): WORD, TRIGRAM, LSTM,
BLSTM and GRAN encoders and their combinations, trained with the margin loss on paraphrase
pairs; ``load_model(path).encode(sentences)`` for everything downstream."""

from paramill.embed.model import SentenceEncoder, load_model

__all__ = ["SentenceEncoder", "load_model"]
