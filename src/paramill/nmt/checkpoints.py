"""The OpenNMT-py checkpoint a model bundle holds (:data:`CHECKPOINT`, written by
``paramill nmt convert``): read by torch's weights-only unpickler, refused where its zip
members are compressed or its options describe more than it holds, and stripped of the
optimizer state for decoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paramill.run.modelfiles import compressed_member, torch_load_problem

#: the OpenNMT-py checkpoint inside a bundle (written by paramill.nmt.convert)
CHECKPOINT = "onmt.pt"


def checkpoint_path(model_dir: str | Path) -> Path:
    return Path(model_dir) / CHECKPOINT


def load_checkpoint(path: str | Path, mmap: bool = False) -> dict:
    """An OpenNMT-py checkpoint, read by torch's weights-only unpickler: tensors, plain
    containers and the training options (``argparse.Namespace``), nothing that can run code.
    OpenNMT-py itself loads with whatever unpickler torch is told to use, and the full one
    would let a checkpoint from elsewhere run anything. ``mmap``: the tensors stay in the
    file (a check that the file reads, without its size in memory)."""
    import argparse

    import torch

    if packed := compressed_member(path):
        raise ValueError(f"{path}: not an OpenNMT-py checkpoint as torch.save writes it (its member "
                         f"{packed} is compressed)")
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise  # they name the file themselves
    except Exception as exc:  # torch's UnpicklingError, a cut file (OSError: Invalid argument), ...
        raise ValueError(f"{path}: not an OpenNMT-py checkpoint paramill reads (tensors, "
                         f"containers and training options only; a checkpoint that needs more "
                         f"could run code when read): {torch_load_problem(exc)}") from exc


def check_sizes(path: Path, opt: Any, vocabs: dict, checkpoint: dict) -> None:
    """The model a checkpoint's options describe holds no more parameters than the
    checkpoint holds values: OpenNMT-py builds it at the options' sizes before its weights
    are compared with them (options edited to ``hidden_size`` 100,000 asked for 40 GB from a
    file of 1.4 MB). Counted from the options, at least: each vocabulary's embeddings and,
    for each layer, the ``hidden_size`` squared that any layer's weights hold (a transformer
    layer holds four times that and more); OpenNMT-py's own layers allocate even when built
    on torch's meta device."""
    import torch

    def size(name: str) -> int:
        value = getattr(opt, name, 0)
        return value if isinstance(value, int) and value > 0 else 0

    declared = (len(vocabs.get("src", ())) * size("src_word_vec_size")
                + len(vocabs.get("tgt", ())) * size("tgt_word_vec_size")
                + (size("enc_layers") + size("dec_layers")) * size("hidden_size") ** 2)
    held = sum(t.numel() for part in ("model", "generator") for t in (checkpoint.get(part) or {}).values()
               if isinstance(t, torch.Tensor))
    if declared > held:
        raise ValueError(f"{path}: its options describe a model of at least {declared:,} parameters "
                         f"and it holds {held:,} values (options edited, or another checkpoint's)")


def strip_checkpoint(full: dict, out: str | Path) -> None:
    """Save the checkpoint ``full`` (:func:`load_checkpoint`) without its optimizer state
    (what decoding needs: a third the size)."""
    import torch

    torch.save({key: full[key] for key in ("model", "generator", "vocab", "opt") if key in full}, out)
