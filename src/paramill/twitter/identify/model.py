"""The fitted identifier: its models by name, the chosen threshold, the encoders' weights;
saved and loaded as one file, and scoring pairs in chunks."""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paramill.twitter.encoder import PretrainedEncoder
from paramill.twitter.identify.featurise import DocumentFrequencies, model_features
from paramill.twitter.identify.settings import IdentifySettings


@dataclass
class Identifier:
    """The fitted models by name (lr, extended, and encoder when configured); ``score`` uses
    the configured one. ``threshold``: the acceptance threshold chosen on held-out folds
    (``threshold_choice`` says how)."""

    settings: IdentifySettings
    embed_model: str | None = None
    fitted: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    threshold_choice: dict[str, Any] | None = None
    encoder_state: bytes | None = None  # the student's or fine-tuned encoder's weights
    cross_state: bytes | None = None  # the fine-tuned cross-encoder's weights
    #: the training sentences' document frequencies (the extended models' IDF overlap); None:
    #: fitted without it (``idf_overlap: false``, or saved before it), 22 extended features
    idf: DocumentFrequencies | None = None

    def save(self, path: str | Path) -> None:
        with open(path, "wb") as fh:
            pickle.dump({"format": "paramill-paraid/3", "fitted": self.fitted,
                         "settings": asdict(self.settings), "embed_model": self.embed_model,
                         "threshold": self.threshold, "threshold_choice": self.threshold_choice,
                         "encoder_state": self.encoder_state, "cross_state": self.cross_state,
                         "idf": self.idf.to_dict() if self.idf else None}, fh)

    @staticmethod
    def load(path: str | Path) -> Identifier:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        if data.get("format") == "paramill-paraid/1":  # lr and extended, threshold 0.5
            data["fitted"] = {"lr": data["lr"], "extended": data["extended"]}
        elif data.get("format") not in ("paramill-paraid/2", "paramill-paraid/3"):
            raise ValueError(f"{path}: not a paramill paraphrase identifier")
        data["settings"] = dict(data["settings"])
        if "encoder_precision" not in data["settings"]:  # saved before it: score as it ran
            int8 = data["settings"].pop("encoder_int8", False)
            data["settings"]["encoder_precision"] = "int8" if int8 else "float32"
        # /1 and /2 were fitted without the IDF overlap: they score with the 22 features
        data["settings"].setdefault("idf_overlap", False)
        idf = data.get("idf")
        return Identifier(IdentifySettings.from_dict(data["settings"]), data["embed_model"],
                          data["fitted"], data.get("threshold"), data.get("threshold_choice"),
                          data.get("encoder_state"), data.get("cross_state"),
                          DocumentFrequencies.from_dict(idf) if idf else None)

    def accept_at(self, configured: float | None = None) -> float:
        """The threshold pairs must reach: the configured one, else the chosen one (0.5 for
        a model saved before thresholds were chosen)."""
        if configured is not None:
            return configured
        return self.threshold if self.threshold is not None else 0.5

    def encoder(self):
        if not self.embed_model:
            return None
        if not hasattr(self, "_encoder"):
            from paramill.embed.model import load_model

            self._encoder = load_model(self.embed_model)
        return self._encoder

    def sentence_encoder(self) -> PretrainedEncoder:
        if not hasattr(self, "_sentence"):
            self._sentence = PretrainedEncoder(self.settings.sentence_encoder,
                                             self.settings.encoder_batch,
                                             self.settings.encoder_precision, self.encoder_state,
                                             self.settings.encoder_layers)
        return self._sentence

    def encoder_used(self) -> dict[str, Any] | None:
        """The sentence encoder this identifier ran, where and in which precision (None when
        it ran none)."""
        if not hasattr(self, "_sentence"):
            return None
        s = self._sentence
        used = {"source": s.source, "device": s.device, "precision": s.precision,
                "finetuned": bool(s.trained and self.settings.finetune_epochs)}
        if s.layers is not None:
            used["student_layers"] = s.layers  # which of the whole encoder's layers it keeps
        return used

    def cross_encoder(self):
        if not hasattr(self, "_cross"):
            from paramill.twitter.cross import CrossEncoder

            if self.cross_state is None:
                raise ValueError("this identifier holds no fine-tuned cross-encoder")
            self._cross = CrossEncoder(self.settings.sentence_encoder, self.settings.encoder_batch,
                                       self.settings.encoder_precision, self.cross_state)
        return self._cross

    def features(self, pairs: list[tuple[str, str]], which: str) -> np.ndarray:
        sentence = self.sentence_encoder() if which == "encoder" else None
        cross = self.cross_encoder() if which == "cross" else None
        return model_features(pairs, which, self.encoder() if which != "lr" else None, sentence,
                              cross, self.idf)

    def score(self, pairs: list[tuple[str, str]], which: str | None = None,
              chunk: int = 50_000) -> np.ndarray:
        """p_paraphrase of each pair, ``chunk`` pairs at a time (features and sentence vectors
        of one chunk in memory, not a month's), with progress on long work."""
        which = which or self.settings.model
        if which not in self.fitted:
            raise ValueError(f"this identifier has no {which!r} model (it has "
                             f"{', '.join(self.fitted)}): train it with twitter.identify.model: {which}")
        if not pairs:
            return np.zeros(0)
        from paramill.progress import progress

        out = np.zeros(len(pairs))
        with progress(f"scoring pairs ({which})", unit="pairs", total=len(pairs)) as bar:
            for start in range(0, len(pairs), chunk):
                part = pairs[start:start + chunk]
                out[start:start + len(part)] = self.fitted[which].predict_proba(
                    self.features(part, which))[:, 1]
                bar.update(len(part))
        return out
