"""The identifier's cross-encoder (``twitter.identify.model: cross``): the packaged sentence
encoder's transformer reading the two sentences of a pair together
(``[CLS] s1 [SEP] s2 [SEP]``), with a linear head on the ``[CLS]`` vector that gives the
logit of "paraphrase".

It starts from the same weights as the encoder model (``sentence_encoder``; nothing is
downloaded), its head initialised from the seed, and is fine-tuned on the labelled pairs
with binary cross-entropy on the encoder's schedule (AdamW, 10% warm-up, linear decay,
clipping, length-grouped batches, bfloat16 autocast where native: see
:func:`paramill.twitter.encoder._optimise`). Its probability joins the extended model's
features, cross-fitted like the encoder's cosine: each grouped fold's pairs are scored by a
cross-encoder fine-tuned on the other folds
(:func:`paramill.twitter.identify.crossfit`). CUDA when the job sees a GPU, else CPU.

Pairs are read in the order given (``s1``: the news account's tweet): reading them both
ways, in training and scoring, measured within the seed's noise on the URL corpus
(benchmarks/records/README.md).
"""

from __future__ import annotations

import io

import numpy as np

from paramill.twitter.encoder import (PretrainedEncoder, _autocast, _optimise, encoder_precision,
                                      length_grouped_batches)


class CrossEncoder:
    """A pair-input transformer from the sentence encoder ``source``, with the fine-tuned
    weights ``state`` when given; ``score`` gives p(paraphrase) of pairs."""

    def __init__(self, source: str, batch: int = 64, precision: str = "auto",
                 state: bytes | None = None, max_length: int = 128):
        import torch

        from paramill.run.device import pick
        from paramill.run.modelfiles import sentence_transformer

        self.source, self.batch, self.max_length = source, batch, max_length
        #: each halving of the batch after the GPU ran out of memory (``at``, the size, ``now``)
        self.out_of_gpu_memory: list[dict] = []
        self.device = pick("auto")
        precision = encoder_precision(precision, self.device)
        self.precision = "float32" if precision == "int8" else precision  # no int8 head
        transformer = sentence_transformer(PretrainedEncoder.locate(source), "cpu")[0]
        self.tokenizer = transformer.tokenizer
        self.model = PairModel(transformer.auto_model)
        self.trained = state is not None
        if state is not None:
            try:
                self.model.load_state_dict(torch.load(io.BytesIO(state), map_location="cpu",
                                                      weights_only=True))
            except RuntimeError as exc:  # missing or unexpected keys, shapes of another model
                raise ValueError(f"cross-encoder weights that do not fit {source} "
                                 f"({' '.join(str(exc).split())[:240]})") from None
        self.model.to(self.device).eval()

    def inputs(self, pairs: list[tuple[str, str]]):
        """The pairs tokenised together, padded, on the model's device."""
        encoded = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True,
                                 truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in encoded.items()}

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The logit of "paraphrase" of each pair read in the order given, in batches of
        pairs of near length; a batch out of GPU memory is scored again at half the size, and
        the rest (and later calls) at that size (kept in :attr:`out_of_gpu_memory`)."""
        import torch

        from paramill.run.device import fitted_batches

        out = np.zeros(len(pairs))
        order = np.argsort([len(a) + len(b) for a, b in pairs], kind="stable")

        def batch(index: np.ndarray) -> None:
            out[index] = self.model(**self.inputs([pairs[i] for i in index])).float().cpu().numpy()

        self.model.eval()
        with torch.inference_mode(), _autocast(self.precision, self.device):
            self.batch = fitted_batches(order, self.batch, "twitter.identify.encoder_batch",
                                        "cross-encoder", "pair {} by length",
                                        self.out_of_gpu_memory, batch)
        return out

    def score(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """p(paraphrase) of each pair."""
        return 1 / (1 + np.exp(-self.logits(pairs)))


def PairModel(transformer):  # noqa: N802 - a class made where torch is imported
    """The transformer and a linear head on its ``[CLS]`` vector (one logit a pair)."""
    import torch

    class _PairModel(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert
            self.head = torch.nn.Linear(bert.config.hidden_size, 1)

        def forward(self, **inputs):
            return self.head(self.bert(**inputs).last_hidden_state[:, 0]).squeeze(-1)

    return _PairModel(transformer)


def cross_state(source: str, pairs: list[tuple[str, str]], labels, *, epochs: int, lr: float,
                batch: int, precision: str, seed: int, max_length: int = 128,
                desc: str = "fine-tuning the cross-encoder") -> bytes:
    """The weights (``torch.save`` bytes) of the cross-encoder from ``source`` fine-tuned on
    the labelled ``pairs`` with binary cross-entropy. Seeded (the head's initialisation, the
    batches): the same inputs give the same weights on CPU."""
    import torch

    if epochs < 1:
        raise ValueError("the cross-encoder is fine-tuned on the labelled pairs: "
                         "twitter.identify.finetune_epochs must be at least 1 for model cross")
    torch.manual_seed(seed)
    encoder = CrossEncoder(source, batch, "float32", None, max_length)
    run_in = encoder_precision(precision, encoder.device)
    run_in = "float32" if run_in == "int8" else run_in
    rng = np.random.default_rng(seed)
    y = torch.from_numpy(np.asarray(labels, dtype=np.float32)).to(encoder.device)
    lengths = np.asarray([len(a) + len(b) for a, b in pairs])

    def loss_of(model, index):
        logits = model(**encoder.inputs([pairs[i] for i in index]))
        return torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), y[index])

    return _optimise(encoder.model, encoder.device, run_in,
                     [length_grouped_batches(lengths, batch, rng) for _ in range(epochs)],
                     lr, loss_of, desc)
