"""paramill embeddings exported as sentence-transformers models encode to the same vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paramill.embed.model import ModelSpec, load_model
from paramill.embed.st import export
from paramill.embed.train import TrainSettings, train

PAIRS = ([(f"the dog runs fast {i}", f"a dog is running quickly {i}") for i in range(20)]
         + [(f"cats sleep all day {i}", f"the cat is sleeping {i}") for i in range(20)])
PROBE = ["The dog runs.", "A cat sleeps on the mat today, quietly!", "zzz unseen wörds", ""]


@pytest.mark.parametrize("components,units", [(("word",), "sp"), (("trigram",), "word"),
                                              (("lstm",), "word"), (("word", "trigram"), "word")])
def test_an_exported_model_encodes_like_paramill(tmp_path, components, units, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=components, units=units, dim=8, hidden=6,
                                  sp_vocab_size=40), TrainSettings(epochs=1, batch_size=10))
    out = export(model, tmp_path / "st")
    names = {p.name for p in tmp_path.iterdir()}
    assert {"st", "st.prov.json"} <= names and not [n for n in names if n.startswith(".")]  # renamed
    st = SentenceTransformer(str(out), trust_remote_code=True, device="cpu")
    ours = load_model(model, "cpu").encode(PROBE)
    theirs = st.encode(PROBE, batch_size=2)
    assert theirs.shape == ours.shape and np.abs(theirs - ours).max() <= 1e-5
    assert st.get_embedding_dimension() == ours.shape[1]
    prov = json.loads((tmp_path / "st.prov.json").read_text())
    assert prov["rule"] == "embed_export" and prov["inputs"][0]["path"] == str(model)


def test_loading_without_trusting_paramill_says_what_to_pass(tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=("word",), units="word", dim=4), TrainSettings(epochs=1))
    out = export(model, tmp_path / "st")
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(out), device="cpu")
    assert "trust_remote_code=True" in (out / "README.md").read_text()
