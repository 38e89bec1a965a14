"""Reference/translation classifier (Wieting 2017 §5.5).

A binary classifier learns to tell an English reference from a back-translation; its
probability of "reference" scores how human-like a candidate reads (a minimum is tuned over
0 ... 0.9). The encoder is one of the embedding components (``word`` averaging or ``lstm``,
:mod:`paramill.embed.model`) under a logistic output layer, trained with cross-entropy and
Adam (lr 0.001, 10 epochs) on the held-out pairs: both sides of the training split, the
reference labelled 1 and the translation 0. The epoch with the best validation accuracy is
kept; test accuracy is recorded. Runs on CUDA when present.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from paramill.run import device
from paramill.embed.features import Vocab
from paramill.embed.model import ModelSpec, SentenceEncoder, build
from paramill.filters.base import Batch, Column, Direction, ModelFilter
from paramill.filters.heldout import heldout_texts
from paramill.run.modelfiles import read_torch_file, rebuilt_from, with_weights
from paramill.run.job import output_job
from paramill.run.progress import progress
from paramill.provenance import Run
from paramill.config.typed import Device, setting, Settings

FORMAT = "paramill-reference-classifier/1"


@dataclass(frozen=True)
class ClassifierSettings(Settings):
    encoder: Literal["word", "lstm"] = setting("word", "Word averaging or LSTM.")
    dim: int = setting(300, "Embedding size.", minimum=1)
    hidden: int = setting(300, "LSTM hidden size.", minimum=1)
    epochs: int = setting(10, "Training epochs (best validation epoch kept).", minimum=1)
    batch_size: int = setting(100, "Sentences per training batch.", minimum=1)
    score_batch_size: int = setting(
        512, "Candidates per batch when scoring; bounds the scoring job's memory (the same "
        "scores within float noise).", minimum=1, launch=True)
    learning_rate: float = setting(0.001, "Adam learning rate.", exclusiveMinimum=0, maximum=1000)
    seed: int = setting(13, "Random seed.")
    device: Device = setting("auto", "auto: cuda when a GPU is visible.")


class ReferenceClassifier(nn.Module):
    def __init__(self, encoder: SentenceEncoder):
        super().__init__()
        self.encoder = encoder
        self.out = nn.Linear(encoder.dim, 1)

    def forward(self, sentences: list[str]) -> torch.Tensor:
        """Logits of "reference" for ``sentences``."""
        feats = self.encoder.tensors(self.encoder.units(sentences))
        return self.out(self.encoder(feats)).squeeze(-1)

    @torch.no_grad()
    def p_reference(self, sentences: list[str], batch_size: int = 512) -> list[float]:
        self.eval()
        out: list[float] = []
        for start in range(0, len(sentences), batch_size):
            out += torch.sigmoid(self(sentences[start:start + batch_size])).cpu().tolist()
        return out


def _spec(settings: ClassifierSettings) -> ModelSpec:
    if settings.encoder not in ("word", "lstm"):
        raise ValueError(f"filters.classifier.encoder must be word or lstm, not {settings.encoder!r}")
    # over words, as the 2017 paper's classifier (its vocabulary comes from the 40k pairs)
    return ModelSpec(components=(settings.encoder,), dim=settings.dim, hidden=settings.hidden,
                     units="word")


def _labelled(refs: list[str], translations: list[str]) -> list[tuple[str, float]]:
    return [(s, 1.0) for s in refs] + [(s, 0.0) for s in translations]


def accuracy(model: ReferenceClassifier, data: list[tuple[str, float]]) -> float:
    if not data:
        return float("nan")
    probs = model.p_reference([s for s, _ in data])
    return sum((p >= 0.5) == (y == 1.0) for p, (_, y) in zip(probs, data)) / len(data)


def train_classifier(train: list[tuple[str, float]], valid: list[tuple[str, float]],
                     test: list[tuple[str, float]], out: str | Path,
                     settings: ClassifierSettings = ClassifierSettings(),
                     inputs: list[str | Path] | None = None, rule: str = "classifier_train"
                     ) -> dict[str, Any]:
    """Train on labelled sentences (1.0 = reference); keep the best epoch on ``valid``."""
    if not train or len({y for _, y in train}) < 2:
        raise ValueError("the classifier needs references and translations to train on")
    run = Run(rule=rule, params=asdict(settings), inputs=list(inputs or []))
    device.deterministic(settings.seed)  # seeds, deterministic kernels, the rule's threads
    model = ReferenceClassifier(build(_spec(settings), [s for s, _ in train]))
    model.to(device.pick(settings.device))
    optimiser = torch.optim.Adam(model.parameters(), lr=settings.learning_rate)
    best: dict[str, Any] = {"valid_accuracy": -1.0}
    history = []
    order = list(range(len(train)))
    start = time.perf_counter()
    for epoch in range(1, settings.epochs + 1):
        random.shuffle(order)
        model.train()
        total = 0.0
        bar = progress(f"classifier epoch {epoch}", unit="sent", total=len(order))
        for i in range(0, len(order), settings.batch_size):
            chunk = [train[j] for j in order[i:i + settings.batch_size]]
            labels = torch.tensor([y for _, y in chunk], device=model.out.weight.device)
            loss = F.binary_cross_entropy_with_logits(model([s for s, _ in chunk]), labels)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(chunk)
            bar.update(len(chunk))
            bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.close()
        acc = accuracy(model, valid if valid else train)
        history.append({"epoch": epoch, "loss": round(total / len(order), 6), "valid_accuracy": acc})
        if acc > best["valid_accuracy"]:
            best = {"valid_accuracy": acc, "epoch": epoch,
                    "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}
    model.load_state_dict(best.pop("state_dict"))
    summary = {**best, "test_accuracy": accuracy(model, test), "train": len(train),
               "valid": len(valid), "test": len(test), "history": history,
               "seconds": round(time.perf_counter() - start, 1)}
    out = Path(out)
    with output_job(run, out) as job:
        (tmp,) = job.paths
        torch.save({"format": FORMAT, "settings": asdict(settings),
                    "vocabs": {u: v.units for u, v in model.encoder.vocabs.items()},
                    "state_dict": model.state_dict(),
                    # the time goes to provenance only: the model file is the same bytes run to run
                    "summary": {k: v for k, v in summary.items() if k != "seconds"}}, tmp)
        job.rows_in = len(train)
        job.extra = {"summary": {k: v for k, v in summary.items() if k != "history"}}
    return summary


def train_from_heldout(heldout: str | Path, out: str | Path, settings: ClassifierSettings,
                       rule: str = "classifier_train") -> dict[str, Any]:
    def split(name: str) -> list[tuple[str, float]]:
        return _labelled(heldout_texts(heldout, name, "en_ref"),
                         heldout_texts(heldout, name, "candidate"))

    return train_classifier(split("train"), split("valid"), split("test"), out, settings,
                            inputs=[heldout], rule=rule)


def load_classifier(path: str | Path, map_device: str = "auto") -> ReferenceClassifier:
    data = read_torch_file(path, FORMAT, "paramill reference classifier")
    with rebuilt_from(path, "paramill reference classifier"):
        settings = ClassifierSettings.from_dict(data["settings"])
        vocabs = {u: Vocab(units[2:]) for u, units in data["vocabs"].items()}
        model = with_weights(lambda: ReferenceClassifier(SentenceEncoder(_spec(settings), vocabs)),
                             data["state_dict"])
    return model.to(device.pick(map_device)).eval()


@dataclass(frozen=True)
class Classifier(ModelFilter):
    name = "classifier"
    doc = "Reference/translation classifier (score P(reference) of the candidate)."
    order = 6
    settings = ClassifierSettings
    models = {"model": "classifier"}
    memory_batch = "score_batch_size"
    model: str = ""
    score_batch_size: int = 512  # filters.classifier.score_batch_size (batch_size trains)

    def load(self) -> ReferenceClassifier:
        return load_classifier(self.model)

    def columns(self) -> list[Column]:
        return [Column("classifier", Direction.HIGHER, "P(reference) of the candidate")]

    def score(self, batch: Batch) -> dict[str, Any]:
        return {"classifier": self.loaded.p_reference(batch.candidates, self.score_batch_size)}
