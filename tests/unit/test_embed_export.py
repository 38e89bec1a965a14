"""paramill embeddings exported as sentence-transformers models encode to the same vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paramill.embed.model import ModelSpec, load_model
from paramill.embed.st import export
from paramill.embed.train import EmbedTrainSettings, train

PAIRS = ([(f"the dog runs fast {i}", f"a dog is running quickly {i}") for i in range(20)]
         + [(f"cats sleep all day {i}", f"the cat is sleeping {i}") for i in range(20)])
PROBE = ["The dog runs.", "A cat sleeps on the mat today, quietly!", "zzz unseen wörds",
         "  THE   Dog\trunS  ", "don't-stop: 3.5 dogs (é, ß, Ærø) — «cats»", "x",
         "ÉCOLE naïve Ünïcödé 123abc"]
WORD_MODELS = [(("word",), "sp"), (("word",), "word")]


@pytest.mark.parametrize("components,units", [*WORD_MODELS, (("trigram",), "word"),
                                              (("lstm",), "word"), (("word", "trigram"), "word")])
def test_an_exported_model_encodes_like_paramill(tmp_path, components, units, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=components, units=units, dim=8, hidden=6,
                                  sp_vocab_size=40), EmbedTrainSettings(epochs=1, batch_size=10))
    out = export(model, tmp_path / "st")
    names = {p.name for p in tmp_path.iterdir()}
    assert {"st", "st.prov.json"} <= names and not [n for n in names if n.startswith(".")]  # renamed
    static = (components, units) in WORD_MODELS  # sentence-transformers' own module: no trust
    st = SentenceTransformer(str(out), device="cpu", **({} if static else {"trust_remote_code": True}))
    modules = json.loads((out / "modules.json").read_text())
    assert ("StaticEmbedding" in modules[0]["type"]) == static, modules
    # the class a model names is where models exported by every paramill version find it
    assert modules[0]["type"] == ("sentence_transformers.sentence_transformer.modules.static_embedding"
                                  ".StaticEmbedding" if static
                                  else "paramill.embed.st.ParamillModule"), modules
    ours = load_model(model, "cpu").encode(PROBE)
    theirs = st.encode(PROBE, batch_size=2)
    assert theirs.shape == ours.shape and np.abs(theirs - ours).max() <= 1e-5
    assert st.get_embedding_dimension() == ours.shape[1]
    prov = json.loads((tmp_path / "st.prov.json").read_text())
    assert prov["rule"] == "embed_export" and prov["inputs"][0]["path"] == str(model)
    # the same model exports to the same bytes (the workflow's reproducibility run, with the
    # tiny overlay, does not export)
    again = export(model, tmp_path / "again" / "st")
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(p.name for p in again.iterdir()) and "modules.json" in files
    assert all((out / f).read_bytes() == (again / f).read_bytes() for f in files)


def test_a_static_export_loads_where_paramill_cannot_be_imported(tmp_path):
    """The WORD export is sentence-transformers' StaticEmbedding over a tokenizers
    tokenizer: it loads and encodes in a process where ``import paramill`` fails."""
    import subprocess
    import sys

    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=("word",), units="sp", dim=8, sp_vocab_size=40),
          EmbedTrainSettings(epochs=1, batch_size=10))
    out = export(model, tmp_path / "st")
    probe = ("import json, sys\n"
             "sys.modules['paramill'] = None  # import paramill raises ImportError\n"
             "from sentence_transformers import SentenceTransformer\n"
             "v = SentenceTransformer(sys.argv[1], device='cpu').encode(json.loads(sys.argv[2]))\n"
             "print(json.dumps(v.tolist()))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(out), json.dumps(PROBE)],
                          capture_output=True, text=True, env={**__import__("os").environ,
                                                               "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = np.array(json.loads(done.stdout.strip().splitlines()[-1]))
    assert np.abs(theirs - load_model(model, "cpu").encode(PROBE)).max() <= 1e-5
    assert "trust_remote_code" not in (out / "README.md").read_text()


def test_an_empty_text_is_a_zero_vector_in_the_static_export(tmp_path):
    """The one documented difference: paramill encodes an empty text as <unk>'s vector,
    StaticEmbedding as zeros."""
    from sentence_transformers import SentenceTransformer

    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=("word",), units="word", dim=4), EmbedTrainSettings(epochs=1))
    st = SentenceTransformer(str(export(model, tmp_path / "st")), device="cpu")
    assert not st.encode([""]).any()


def test_loading_without_trusting_paramill_says_what_to_pass(tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = tmp_path / "m.pt"
    train(PAIRS, model, ModelSpec(components=("trigram",), units="word", dim=4), EmbedTrainSettings(epochs=1))
    out = export(model, tmp_path / "st")
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(out), device="cpu")
    assert "trust_remote_code=True" in (out / "README.md").read_text()
