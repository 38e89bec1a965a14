"""Device choice for GPU code: CUDA when present, else CPU -- the same code on a laptop,
in CI and on SLURM GPU nodes (where CUDA_VISIBLE_DEVICES limits what is visible)."""

from __future__ import annotations

import os


def cuda_count() -> int:
    """GPUs visible to this process (0 without CUDA). Asks CTranslate2 first (cheap), then torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return 0
    try:
        import ctranslate2

        return int(ctranslate2.get_cuda_device_count())
    except Exception:  # pragma: no cover - ctranslate2 is a dependency
        pass
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # pragma: no cover
        return 0


def pick(requested: str = "auto") -> str:
    """``cuda`` or ``cpu``: ``auto`` takes CUDA when a GPU is visible."""
    if requested not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {requested!r}")
    if requested == "auto":
        return "cuda" if cuda_count() > 0 else "cpu"
    if requested == "cuda" and cuda_count() == 0:
        raise ValueError("device cuda was requested but no GPU is visible")
    return requested
