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


def deterministic(seed: int | None = None, threads: int | None = None) -> None:
    """Make torch training repeatable: deterministic algorithms, a fixed thread count
    (``threads``, else ``OMP_NUM_THREADS`` as the rule sets it), and with ``seed`` the
    python, numpy, torch and SentencePiece generators seeded (SentencePiece samples
    subwords for regularisation from a generator of its own).

    On CPU this gives byte-identical models run to run. On CUDA, cuBLAS is told to use a
    fixed workspace (``CUBLAS_WORKSPACE_CONFIG``) and ops without a deterministic kernel
    warn instead of failing, so GPU training is repeatable only as far as its kernels are.
    """
    import random

    import numpy as np
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 0) or None
    if threads:
        torch.set_num_threads(threads)
    if seed is not None:
        import sentencepiece

        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        sentencepiece.set_random_generator_seed(seed)
