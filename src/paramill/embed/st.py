"""paramill embeddings as sentence-transformers models.

``export(model, out_dir)`` writes a directory that ``SentenceTransformer(out_dir,
trust_remote_code=True)`` loads offline: one module, :class:`ParamillModule`, holding the
whole paramill encoder (its checkpoint, SentencePiece model included, in
``paramill-model.pt``), so every variant — WORD, TRIGRAM, recurrent, combinations — encodes
to the same vectors as ``load_model(model).encode``. ``trust_remote_code=True`` is what
sentence-transformers (≥ 6) asks before it imports a module class from outside its own
package; here that class is paramill's, imported from the installed package, and nothing
is downloaded. Needs the ``st`` extra (sentence-transformers), which ``make`` installs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from sentence_transformers.base.modules import InputModule

from paramill.embed.model import SentenceEncoder, load_model

CHECKPOINT = "paramill-model.pt"


class ParamillModule(InputModule):
    """A paramill encoder as the one module of a sentence-transformers model: ``preprocess``
    turns texts into the encoder's unit ids, ``forward`` gives ``sentence_embedding``."""

    config_file_name = "paramill_config.json"
    config_keys = ["checkpoint"]
    save_in_root = True

    def __init__(self, encoder: SentenceEncoder | None = None, checkpoint: str = CHECKPOINT,
                 model_dir: str | None = None):
        super().__init__()
        if encoder is None:
            if model_dir is None:
                raise ValueError("ParamillModule needs an encoder or the directory it was saved in")
            encoder = load_model(Path(model_dir) / checkpoint, "cpu")
        self.encoder = encoder.eval()
        self.checkpoint = checkpoint

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs) -> ParamillModule:
        config = cls.load_config(model_name_or_path, subfolder=subfolder,
                                 local_files_only=kwargs.get("local_files_only", False))
        name = config.get("checkpoint", CHECKPOINT)
        path = cls.load_file_path(model_name_or_path, filename=name, subfolder=subfolder,
                                  local_files_only=kwargs.get("local_files_only", False))
        return cls(load_model(path, "cpu"), checkpoint=name)

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        texts = [(prompt or "") + t for t in inputs]
        feats: dict[str, torch.Tensor] = {}
        for unit, (ids, lengths) in self.encoder.tensors(self.encoder.units(texts)).items():
            feats[f"{unit}_ids"], feats[f"{unit}_lengths"] = ids.cpu(), lengths.cpu()
        return feats

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        units = {unit: (features[f"{unit}_ids"], features[f"{unit}_lengths"].cpu())
                 for unit in self.encoder.featurizers}
        features["sentence_embedding"] = self.encoder(units)
        return features

    def get_embedding_dimension(self) -> int:
        return self.encoder.dim

    def save(self, output_path: str, *args, **kwargs) -> None:
        torch.save(self.encoder.checkpoint(), Path(output_path) / self.checkpoint)
        self.save_config(output_path)


def export(model: str | Path, out_dir: str | Path, rule: str = "embed_export") -> Path:
    """Write ``model`` (a paramill checkpoint) as a sentence-transformers directory, with a
    provenance record; written under a temporary name and renamed when complete."""
    from dataclasses import asdict

    from sentence_transformers import SentenceTransformer

    from paramill.io import atomic_output
    from paramill.provenance import Run, prov_path

    out_dir = Path(out_dir)
    run = Run(rule=rule, params={}, inputs=[model])
    encoder = load_model(model, "cpu")
    st = SentenceTransformer(modules=[ParamillModule(encoder)], device="cpu")
    with atomic_output(out_dir, prov_path(out_dir)) as (tmp, tmp_prov):
        tmp.mkdir()
        st.save(str(tmp))
        spec = json.dumps(asdict(encoder.spec))
        (tmp / "README.md").write_text(
            "# paramill paraphrastic sentence embeddings\n\n"
            f"Exported from `{Path(model).name}` by `paramill embed export`; encodes to the same "
            "vectors as `paramill.embed.model.load_model(...).encode`.\n\n"
            "```python\nfrom sentence_transformers import SentenceTransformer\n"
            f"model = SentenceTransformer(\"{out_dir.name}\", trust_remote_code=True)  "
            "# the module class is paramill's: install paramill\n"
            "vectors = model.encode([\"A sentence.\", \"Another one.\"])\n```\n\n"
            f"Model: `{spec}`\n", encoding="utf-8")
        run.write({out_dir: tmp}, {out_dir: tmp_prov}, rows_in=None, rows_out=None)
    return out_dir
