"""Convert an OpenNMT-py checkpoint to a CTranslate2 model bundle.

A bundle is the CTranslate2 model directory plus the two SentencePiece models
(``source.spm.model``, ``target.spm.model``), ``paramill.json`` and the OpenNMT-py checkpoint
without its optimizer state (``onmt.pt``: what the opennmt-py engine decodes with, on a GPU
CTranslate2 cannot use), so translation needs one path. A user's own CTranslate2 directory works the same, given its SentencePiece models.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from paramill.errors import InputError, first_line
from paramill.io.outputs import sha256_file
from paramill.run.job import output_job
from paramill.nmt.checkpoints import CHECKPOINT, load_checkpoint, strip_checkpoint
from paramill.nmt.trial import try_model
from paramill.provenance import Run

QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16",
                 "bfloat16", "float32")
SOURCE_SPM, TARGET_SPM, META = "source.spm.model", "target.spm.model", "paramill.json"


def convert(checkpoint: str | Path, src_spm: str | Path, tgt_spm: str | Path, out_dir: str | Path,
            quantization: str | None = None, rule: str = "nmt_convert") -> dict[str, Any]:
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS} or none, not {quantization!r}")
    run = Run(rule=rule, params={"quantization": quantization}, inputs=[checkpoint, src_spm, tgt_spm])
    # read safely first: CTranslate2's converter unpickles OpenNMT-py's options with the full
    # unpickler, which a checkpoint from elsewhere could use to run code; one the weights-only
    # unpickler reads names nothing else for it to call
    full = load_checkpoint(checkpoint)  # a ValueError naming it where it is not one
    with output_job(run, out_dir) as job:
        (tmp,) = job.paths
        # CTranslate2's converter, in this process: a process of its own started Python and
        # torch again (about 3 s of CPU a model)
        import ctranslate2
        from ctranslate2.converters import OpenNMTPyConverter

        try:
            OpenNMTPyConverter(str(checkpoint), unsafe_deserialization=True).convert(
                str(tmp), quantization=quantization)
        except Exception as exc:  # noqa: BLE001 - the converter's errors of a checkpoint
            raise InputError(checkpoint, None, "CTranslate2's converter cannot convert it "
                             f"({type(exc).__name__}: {first_line(exc, '')})") from None
        try:  # options the converter takes that the result cannot decode with (0 heads)
            try_model(tmp, ctranslate2.__version__, advice="the checkpoint's options (heads, "
                      "layers, sizes) are not those of a model CTranslate2 decodes")
        except InputError as exc:
            raise InputError(checkpoint, None, f"converted, but {exc.message}") from None
        strip_checkpoint(full, tmp / CHECKPOINT)
        shutil.copyfile(src_spm, tmp / SOURCE_SPM)
        shutil.copyfile(tgt_spm, tmp / TARGET_SPM)
        meta = {"checkpoint": str(checkpoint), "checkpoint_sha256": sha256_file(checkpoint),
                "quantization": quantization}
        (tmp / META).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def bundle_spm(model_dir: str | Path) -> tuple[Path, Path] | None:
    """The SentencePiece models inside a bundle, or None for a bare CTranslate2 directory."""
    model_dir = Path(model_dir)
    src, tgt = model_dir / SOURCE_SPM, model_dir / TARGET_SPM
    return (src, tgt) if src.exists() and tgt.exists() else None
