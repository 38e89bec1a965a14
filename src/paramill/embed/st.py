"""paramill embeddings as sentence-transformers models.

A WORD model (one averaged ``word`` component, over SentencePiece or word units: the
default) is exported as sentence-transformers' own ``StaticEmbedding`` over a ``tokenizers``
tokenizer that reproduces paramill's units, so ``SentenceTransformer(out_dir)`` loads it
without ``trust_remote_code`` and without paramill installed (:func:`static_module`):

- SentencePiece units: lower-casing, SentencePiece's own normaliser (its precompiled
  character map, read from the model), white space folded and stripped, the ``▁`` prefix,
  and the Unigram model with the pieces' scores (the same Viterbi segmentation); each
  piece's row is paramill's vector for it (pieces paramill never saw get ``<unk>``'s);
- word units: lower-casing and paramill's token pattern (``\\w+|[^\\w\\s]``) over
  white-space-split words, a word-level vocabulary with ``<unk>``.

The vectors are the same as paramill's within float rounding on NFC text (tested). Known
differences, all on text paramill's own pipeline normalises away before training: Rust's
lower-casing gives a final sigma (ς) where Python's gives σ; Rust's ``\\w`` takes combining
marks into a word where Python's splits them off (decomposed accents); an empty text is a
zero vector (paramill: ``<unk>``'s).

Other models (TRIGRAM, recurrent, combinations): ``export(model, out_dir)`` writes a
directory that ``SentenceTransformer(out_dir,
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
from collections.abc import Iterator
from typing import Any

import torch
from sentence_transformers.base.modules import InputModule

from paramill.io.compressed import read_varint
from paramill.embed.features import UNK
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


def _proto_fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of a protobuf message: varints as ints, length-
    delimited fields as bytes (the two wire types a SentencePiece model uses, with 32-bit
    floats for scores)."""
    i = 0

    def varint() -> int:
        nonlocal i
        value, i = read_varint(data, i)
        return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 2:
            size = varint()
            yield number, wire, data[i:i + size]
            i += size
        elif wire == 5:
            yield number, wire, data[i:i + 4]
            i += 4
        elif wire == 1:
            yield number, wire, data[i:i + 8]
            i += 8
        else:
            raise ValueError(f"SentencePiece model: unexpected protobuf wire type {wire}")


def precompiled_charsmap(sp_proto: bytes) -> bytes:
    """The normaliser's character map of a SentencePiece model (``normalizer_spec``, field 3;
    ``precompiled_charsmap``, its field 2)."""
    for number, wire, value in _proto_fields(sp_proto):
        if number == 3 and wire == 2:
            for inner, inner_wire, charsmap in _proto_fields(value):
                if inner == 2 and inner_wire == 2:
                    return charsmap
    return b""


def _sp_tokenizer(sp_proto: bytes, lowercase: bool) -> tuple[Any, list[str]]:
    """A ``tokenizers`` Unigram tokenizer segmenting as the SentencePiece model does, and
    its pieces in id order."""
    import sentencepiece as spm
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    sp = spm.SentencePieceProcessor(model_proto=sp_proto)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    unk = next(i for i in range(sp.get_piece_size()) if sp.is_unknown(i))
    tokenizer = Tokenizer(models.Unigram([(p, sp.get_score(i)) for i, p in enumerate(pieces)],
                                         unk_id=unk, byte_fallback=False))
    steps = [normalizers.Lowercase()] if lowercase else []
    charsmap = precompiled_charsmap(sp_proto)
    if charsmap:
        steps.append(normalizers.Precompiled(charsmap))
    steps += [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return tokenizer, pieces


def _word_tokenizer(units: list[str], lowercase: bool) -> Any:
    """A ``tokenizers`` word-level tokenizer over paramill's word vocabulary and token pattern."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    from paramill.text import TOKEN_PATTERN

    tokenizer = Tokenizer(models.WordLevel({u: i for i, u in enumerate(units)}, unk_token=UNK))
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(TOKEN_PATTERN), behavior="isolated")])
    return tokenizer


def static_module(encoder: SentenceEncoder):
    """sentence-transformers' own ``StaticEmbedding`` equal to a WORD model (one ``word``
    component, averaged), or None for any other model."""
    spec = encoder.spec
    if tuple(spec.components) != ("word",):
        return None
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    unit = spec.unit_of("word")
    vocab = encoder.vocabs[unit]
    weights = encoder.parts[0].embedding.weight.detach().float().cpu().numpy()
    if unit == "sp":
        tokenizer, pieces = _sp_tokenizer(encoder.sp_proto, spec.lowercase)
        rows = [vocab.index.get(piece, vocab.index[UNK]) for piece in pieces]
    else:
        tokenizer, rows = _word_tokenizer(vocab.units, spec.lowercase), list(range(len(vocab)))
    return StaticEmbedding(tokenizer, embedding_weights=weights[rows])


def export(model: str | Path, out_dir: str | Path, rule: str = "embed_export") -> Path:
    """Write ``model`` (a paramill checkpoint) as a sentence-transformers directory, with a
    provenance record; written under a temporary name and renamed when complete."""
    from dataclasses import asdict

    from sentence_transformers import SentenceTransformer

    from paramill.run.job import output_job
    from paramill.provenance import Run

    out_dir = Path(out_dir)
    run = Run(rule=rule, params={}, inputs=[model])
    encoder = load_model(model, "cpu")
    static = static_module(encoder)
    module = static if static is not None else ParamillModule(encoder)
    st = SentenceTransformer(modules=[module], device="cpu")
    usage = (f"model = SentenceTransformer(\"{out_dir.name}\")  # sentence-transformers' own "
             "StaticEmbedding: paramill is not needed\n" if static is not None else
             f"model = SentenceTransformer(\"{out_dir.name}\", trust_remote_code=True)  "
             "# the module class is paramill's: install paramill\n")
    with output_job(run, out_dir) as job:
        (tmp,) = job.paths
        tmp.mkdir()
        st.save(str(tmp))
        spec = json.dumps(asdict(encoder.spec))
        (tmp / "README.md").write_text(
            "# paramill paraphrastic sentence embeddings\n\n"
            f"Exported from `{Path(model).name}` by `paramill embed export`; encodes to the same "
            "vectors as `paramill.embed.model.load_model(...).encode`.\n\n"
            "```python\nfrom sentence_transformers import SentenceTransformer\n" + usage +
            "vectors = model.encode([\"A sentence.\", \"Another one.\"])\n```\n\n"
            f"Model: `{spec}`\n", encoding="utf-8")
    return out_dir
