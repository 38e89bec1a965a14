"""The fitted identifier: its models by name, the chosen threshold, the encoders' weights;
saved and loaded as one file of arrays and JSON (no pickle), and scoring pairs in chunks."""

from __future__ import annotations

import json
import pickle
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paramill.errors import InputError, first_line
from paramill.run.modelfiles import compressed_member, torch_load_problem
from paramill.twitter.encoder import PretrainedEncoder
from paramill.twitter.identify.evaluation import LinearModel
from paramill.twitter.identify.featurise import DocumentFrequencies, model_features
from paramill.twitter.identify.settings import IdentifySettings


#: the identifier file's format: a NumPy .npz archive of arrays and JSON, no pickle
FORMAT = "paramill-paraid/3"


#: the models an identifier file may hold
MODELS = ("lr", "extended", "encoder", "cross")


def _check_weights(state: bytes, key: str) -> None:
    """Encoder weights as saved: a torch file of tensors, read by the weights-only unpickler
    (whether they fit the encoder is known when it is built)."""
    import io

    import torch

    if packed := compressed_member(state):
        raise ValueError(f"{key} is not a torch state as torch.save writes it (its member {packed} "
                         "is compressed)")
    try:
        weights = torch.load(io.BytesIO(state), map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError (more than tensors), RuntimeError (cut), ...
        raise ValueError(f"{key} is not a torch state ({torch_load_problem(exc)})") from None
    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise ValueError(f"{key} is not a torch state of tensors")


def _legacy(data: Any, path: str | Path) -> dict[str, Any]:
    """The fields of an identifier pickled by paramill before 2026-11-27 (formats /1 to /3)."""
    if not isinstance(data, dict) or data.get("format") not in (
            "paramill-paraid/1", "paramill-paraid/2", "paramill-paraid/3"):
        raise ValueError(f"{path}: not a paramill paraphrase identifier")
    if data["format"] == "paramill-paraid/1":  # lr and extended, threshold 0.5
        data["fitted"] = {"lr": data["lr"], "extended": data["extended"]}
    data["fitted"] = {name: LinearModel.from_pipeline(model)  # scikit-learn's, pickled
                      for name, model in data["fitted"].items()}
    return data


def _check_members(path: str | Path) -> None:
    """Each member of an identifier's archive stored as ``np.savez`` stores it, and holding
    the values its header declares, before numpy reads it: a member compressed (deflate
    packs 2 GB of zeros into 1.9 MB, which numpy decoded whole: 2 GB and 19 s) or whose
    header declares more than it holds (a 244-byte file declared 931 GiB, which numpy
    allocates before reading: a MemoryError traceback) is a ValueError naming it."""
    from numpy.lib import format as npy

    if packed := compressed_member(path):
        raise ValueError(f"member {packed} is compressed (paramill stores its members as they are)")
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                version = npy.read_magic(member)
                read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                shape, _, dtype = read(member)
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if declared > info.file_size - member.tell():
                    raise ValueError(f"member {info.filename} declares {declared:,} bytes of values "
                                     f"{tuple(shape)} and holds {info.file_size - member.tell():,}")


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
    #: the file it was loaded from (named in errors; not saved)
    source: str | None = field(default=None, compare=False, repr=False)

    def save(self, path: str | Path) -> None:
        """One file of numbers and JSON (a NumPy ``.npz`` archive, :data:`FORMAT`): every
        model's coefficients, the encoders' weights as bytes, and ``meta``: the settings,
        threshold and document frequencies as UTF-8 JSON bytes. No pickle: loading it runs
        no code."""
        meta = {"format": FORMAT, "settings": asdict(self.settings), "embed_model": self.embed_model,
                "threshold": self.threshold, "threshold_choice": self.threshold_choice,
                "idf": self.idf.to_dict() if self.idf else None, "models": sorted(self.fitted)}
        arrays = {"meta": np.frombuffer(json.dumps(meta, ensure_ascii=False).encode(), dtype=np.uint8)}
        for name, model in self.fitted.items():
            for key, value in model.arrays().items():
                arrays[f"model.{name}.{key}"] = value
        for key in ("encoder_state", "cross_state"):
            if getattr(self, key) is not None:
                arrays[key] = np.frombuffer(getattr(self, key), dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    @staticmethod
    def load(path: str | Path, trust_pickle: bool = False) -> Identifier:
        """The identifier saved at ``path``. A file of paramill before 2026-11-27 is a Python
        pickle, which can run any code when loaded: it is refused unless ``trust_pickle``
        (for a file you made yourself; ``load(old, trust_pickle=True).save(new)`` converts it)."""
        with open(path, "rb") as fh:
            head = fh.read(4)
        if head[:1] == b"\x80":  # a pickle's protocol opcode
            if not trust_pickle:
                raise ValueError(
                    f"{path}: a paraphrase identifier saved by an earlier paramill as a "
                    "Python pickle, which can run code when loaded: it is not loaded. Retrain it "
                    "(paramill twitter identify; the workflow does when its settings change), or "
                    "convert a file you made yourself: paramill.twitter.identify.Identifier"
                    ".load(path, trust_pickle=True).save(new_path)")
            with open(path, "rb") as fh:
                return Identifier._from_fields(_legacy(pickle.load(fh), path))
        if head != b"PK\x03\x04":
            raise ValueError(f"{path}: not a paramill paraphrase identifier")
        try:
            _check_members(path)
            with np.load(path, allow_pickle=False) as archive:
                data = json.loads(archive["meta"].tobytes().decode())
                if not isinstance(data, dict) or data.get("format") != FORMAT:
                    raise ValueError(f"format {data.get('format') if isinstance(data, dict) else None!r}, "
                                     f"not {FORMAT}")
                names = data.pop("models")
                if not isinstance(names, list) or not set(names) <= set(MODELS):
                    raise ValueError(f"models {json.dumps(names)[:60]}, not a list of {', '.join(MODELS)}")
                data["fitted"] = {name: LinearModel.from_arrays(
                    {key: archive[f"model.{name}.{key}"] for key in ("mean", "scale", "coef", "intercept")})
                    for name in names}
                for key in ("encoder_state", "cross_state"):
                    data[key] = archive[key].tobytes() if key in archive.files else None
            identifier = Identifier._from_fields(data)
        except (OSError, KeyError, ValueError, TypeError, AttributeError, IndexError, OverflowError,
                RuntimeError, EOFError, NotImplementedError, MemoryError, pickle.UnpicklingError,
                zipfile.BadZipFile) as exc:
            # a damaged archive (zipfile names odd headers), or one whose contents were edited
            raise ValueError(f"{path}: not a readable paramill paraphrase identifier "
                             f"({type(exc).__name__}: {first_line(exc, '')})") from None
        identifier.source = str(path)
        return identifier

    @staticmethod
    def _from_fields(data: dict[str, Any]) -> Identifier:
        """The identifier of a file's fields; a field of another type or out of its range
        (edited, or another program's) is a ValueError or TypeError, never a model that
        scores by NaN."""
        threshold = data.get("threshold")
        if threshold is not None and not (type(threshold) in (int, float) and 0 <= threshold <= 1):
            raise ValueError(f"threshold {json.dumps(threshold)[:40]}, not a probability")
        for key, kind in (("threshold_choice", dict), ("embed_model", str), ("idf", dict)):
            if data.get(key) is not None and not isinstance(data[key], kind):
                raise ValueError(f"{key} {json.dumps(data[key])[:40]}, not a JSON {kind.__name__}")
        for key in ("encoder_state", "cross_state"):
            if data.get(key) is not None:
                _check_weights(data[key], key)
        settings = dict(data["settings"])
        if "encoder_precision" not in settings:  # saved before it: score as it ran
            int8 = settings.pop("encoder_int8", False)
            settings["encoder_precision"] = "int8" if int8 else "float32"
        # /1 and /2 were fitted without the IDF overlap: they score with the 22 features
        settings.setdefault("idf_overlap", False)
        # saved before the token alignment (2026-11-27): the cosine alone
        settings.setdefault("token_alignment", False)
        idf = data.get("idf")
        return Identifier(IdentifySettings.from_dict(settings), data.get("embed_model"),
                          data["fitted"], data.get("threshold"), data.get("threshold_choice"),
                          data.get("encoder_state"), data.get("cross_state"),
                          DocumentFrequencies.from_dict(idf) if idf else None)

    def _named(self, message: str) -> str:
        return f"{self.source}: {message}" if self.source else message

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

            try:
                self._encoder = load_model(self.embed_model)
            except InputError as exc:  # the identifier names it: say so
                raise ValueError(self._named(f"the embedding model it was trained with: {exc}")) from None
        return self._encoder

    def sentence_encoder(self) -> PretrainedEncoder:
        if not hasattr(self, "_sentence"):
            try:
                self._sentence = PretrainedEncoder(self.settings.sentence_encoder,
                                                 self.settings.encoder_batch,
                                                 self.settings.encoder_precision, self.encoder_state,
                                                 self.settings.encoder_layers)
            except ValueError as exc:  # weights that do not fit it: say which file holds them
                raise ValueError(self._named(str(exc))) from None
        return self._sentence

    def encoder_used(self) -> dict[str, Any] | None:
        """The sentence encoder this identifier ran, where and in which precision (None when
        it ran none)."""
        if not hasattr(self, "_sentence"):
            return None
        s = self._sentence
        used = {"source": s.source, "device": s.device, "precision": s.precision,
                "finetuned": bool(s.trained and self.settings.finetune_epochs),
                "token_alignment": self.settings.token_alignment}
        if version := s.package_version(s.source):
            used["package"] = version  # the weights of an untrained encoder are the package's
        if s.layers is not None:
            used["student_layers"] = s.layers  # which of the whole encoder's layers it keeps
        return used

    def out_of_gpu_memory(self) -> list[dict[str, Any]]:
        """Each halving of the sentence encoder's and the cross-encoder's batch after the GPU
        ran out of memory while this identifier scored (for the provenance)."""
        return [{"encoder": name, **h} for name, attr in (("sentence", "_sentence"), ("cross", "_cross"))
                for h in getattr(getattr(self, attr, None), "out_of_gpu_memory", [])]

    def cross_encoder(self):
        if not hasattr(self, "_cross"):
            from paramill.twitter.cross import CrossEncoder

            if self.cross_state is None:
                raise ValueError(self._named("this identifier holds no fine-tuned cross-encoder"))
            try:
                self._cross = CrossEncoder(self.settings.sentence_encoder, self.settings.encoder_batch,
                                           self.settings.encoder_precision, self.cross_state)
            except ValueError as exc:
                raise ValueError(self._named(str(exc))) from None
        return self._cross

    def features(self, pairs: list[tuple[str, str]], which: str) -> np.ndarray:
        sentence = self.sentence_encoder() if which == "encoder" else None
        cross = self.cross_encoder() if which == "cross" else None
        return model_features(pairs, which, self.encoder() if which != "lr" else None, sentence,
                              cross, self.idf, self.settings.token_alignment)

    def score(self, pairs: list[tuple[str, str]], which: str | None = None,
              chunk: int = 50_000) -> np.ndarray:
        """p_paraphrase of each pair, ``chunk`` pairs at a time (features and sentence vectors
        of one chunk in memory, not a month's), with progress on long work."""
        which = which or self.settings.model
        if which not in self.fitted:
            raise ValueError(self._named(
                f"this identifier has no {which!r} model (it has {', '.join(self.fitted) or 'none'}):"
                f" train it with twitter.identify.model: {which}"))
        if not pairs:
            return np.zeros(0)
        from paramill.run.progress import progress

        out = np.zeros(len(pairs))
        with progress(f"scoring pairs ({which})", unit="pairs", total=len(pairs)) as bar:
            for start in range(0, len(pairs), chunk):
                part = pairs[start:start + chunk]
                x = self.features(part, which)
                if x.shape[1] != self.fitted[which].features:
                    raise ValueError(self._named(
                        f"its {which} model weighs {self.fitted[which].features} features, but its "
                        f"settings give {x.shape[1]}: the file was edited or is damaged"))
                out[start:start + len(part)] = self.fitted[which].predict_proba(x)[:, 1]
                bar.update(len(part))
        return out
