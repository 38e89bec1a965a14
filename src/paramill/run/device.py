"""Device choice for GPU code: CUDA when present, else CPU -- the same code on a laptop,
in CI and on SLURM GPU nodes (where CUDA_VISIBLE_DEVICES limits what is visible)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: the variables the numeric libraries size their pools from when they are imported
#: (OpenMP: torch, onmt_train; BLAS: numpy; Rayon: polars)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "POLARS_MAX_THREADS",
                    "RAYON_NUM_THREADS")
_threads: int | None = None


def limit_threads(threads: int) -> None:
    """Make this process (and the tools it starts) use exactly ``threads`` threads: the
    pool-size variables of OpenMP, BLAS and polars (read when each library is imported, so
    call this first: ``paramill --threads N`` does, before any stage code is imported),
    and torch's own pools if torch is already loaded. CTranslate2 and the n-gram scoring
    take :func:`threads` explicitly. On a busy shared node, a process that sizes its pools
    to the machine instead of its allocation spins for cores it does not have."""
    global _threads
    if threads < 1:
        raise ValueError(f"--threads must be at least 1, not {threads}")
    _threads = threads
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(threads)
    if "torch" in sys.modules:
        _torch_threads(threads)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: what SLURM's cpuset or
    ``taskset`` allows), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def threads() -> int:
    """The thread count given with :func:`limit_threads` (``paramill --threads``), else
    ``OMP_NUM_THREADS``, else the CPUs this process may use."""
    return _threads or int(os.environ.get("OMP_NUM_THREADS") or 0) or available_cpus()


def _torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # only settable before torch's first parallel work
        pass


def threads_in_use() -> dict[str, int | None]:
    """What this process was given and what its loaded libraries actually use (for the
    provenance record): ``given`` and, for polars and torch when imported, their pool sizes."""
    used: dict[str, int | None] = {"given": _threads}
    if "polars" in sys.modules:
        used["polars"] = sys.modules["polars"].thread_pool_size()
    if "torch" in sys.modules:
        used["torch"] = sys.modules["torch"].get_num_threads()
    return used


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


#: how CUDA libraries other than torch's allocator say they ran out (CTranslate2's
#: ``CUDA_CHECK`` and ``CUBLAS_CHECK``: "CUDA failed with error out of memory")
CUDA_LIBRARY_OOM = ("failed with error out of memory", "CUBLAS_STATUS_ALLOC_FAILED")


def gpu_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says the GPU ran out of memory: torch's ``OutOfMemoryError`` (or its
    message), or a CUDA library's own (CTranslate2, cuBLAS)."""
    text = " ".join(str(exc).split())
    return (type(exc).__name__ == "OutOfMemoryError" or "CUDA out of memory" in text
            or any(m in text for m in CUDA_LIBRARY_OOM))


#: how the libraries' own allocators say the host's memory ran out in a RuntimeError: torch's
#: (errno 12's words), CTranslate2's on the CPU (``mkl_malloc: failed to allocate memory``:
#: a beam of 1,000,000 under an 8 GB limit was a traceback)
HOST_OOM = ("can't allocate memory", "Cannot allocate memory", "failed to allocate memory")


def host_out_of_memory(exc: BaseException | str) -> bool:
    """Whether ``exc`` (or an error's text) says the host's memory ran out: Python's
    ``MemoryError``, or a library's allocator in its own words (:data:`HOST_OOM`)."""
    if isinstance(exc, MemoryError):
        return True
    text = " ".join(str(exc).split())
    return any(said in text for said in HOST_OOM)


def release_gpu_cache() -> None:
    """Give the blocks torch's caching allocator holds back to the GPU (after an
    out-of-memory error, before a smaller try); nothing where torch is not loaded."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def fit_gpu_memory(work: Callable[[int], T], size: int, key: str, command: str, at: str,
                   halved: list[dict[str, Any]]) -> tuple[T, int]:
    """``(work(size), size)``, with ``size`` halved until the work fits in the GPU's memory:
    each halving noted in ``command``'s log and in ``halved`` (for the provenance), with
    ``at`` (what the work was at); at 1 the out-of-memory error stands. ``size`` bounds
    what one batch holds (``key``: the config key that sets it); the caller keeps the size
    returned for the rest of its work, so one card too small costs one retry, not the job."""
    from paramill.run.progress import note

    while True:
        try:
            return work(size), size
        except Exception as exc:  # CTranslate2 raises RuntimeError, torch OutOfMemoryError
            if not gpu_out_of_memory(exc) or size <= 1:
                raise
            halved.append({"at": at, key: size, "now": size // 2})
            note(f"{command}: {at}: out of GPU memory at {key} {size}; the rest goes on at "
                 f"{size // 2} (recorded in its provenance)")
            release_gpu_cache()
            size //= 2


def fitted_batches(items: Sequence[Any], size: int, key: str, command: str, at: str,
                   halved: list[dict[str, Any]], work: Callable[[Sequence[Any]], None]) -> int:
    """``work`` over ``items`` in slices of ``size``, each slice through :func:`fit_gpu_memory`
    (a slice out of GPU memory is done again at half the size, and the rest at that size);
    ``at`` names a slice by its first item's number (``"sentence {}"``). ``work`` keeps
    what it computes only when it returns (a slice redone is not kept twice). Returns the
    size that fitted, for the caller's later calls."""
    start = 0
    while start < len(items):
        def part(n: int, first: int = start) -> int:
            chunk = items[first:first + n]
            work(chunk)
            return len(chunk)

        done, size = fit_gpu_memory(part, size, key, command, at.format(start + 1), halved)
        start += done
    return size


def memory_limit(dev: str, cgroups: str = "/sys/fs/cgroup", proc: str = "/proc") -> tuple[int, str] | None:
    """The most memory a job on ``dev`` may hold, and whose limit that is: a GPU's own
    memory; on the CPU the smallest of the machine's (``MemTotal``), the job's control
    group's, as SLURM's ``--mem`` and containers set it (cgroup v2 ``memory.max``, v1
    ``memory.limit_in_bytes``, the lowest from the process's group up to the root), and the
    process's address space (``ulimit -v``). None where none can be read."""
    import resource
    from pathlib import Path

    if dev.startswith("cuda"):
        import torch

        props = torch.cuda.get_device_properties(torch.device(dev))
        return props.total_memory, f"the memory of the GPU ({props.name})"
    limits = []
    try:
        for line in Path(proc, "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                limits.append((int(line.split()[1]) * 1024, "this machine's memory"))
        groups = Path(proc, "self", "cgroup").read_text().splitlines()
    except (OSError, ValueError, IndexError):
        groups = []
    for line in groups:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            base, name = Path(cgroups), "memory.max"
        elif "memory" in controllers.split(","):
            base, name = Path(cgroups, "memory"), "memory.limit_in_bytes"
        else:
            continue
        parts = Path(path.lstrip("/")).parts
        for depth in range(len(parts), -1, -1):  # a job's group, then the groups it is in
            try:
                value = base.joinpath(*parts[:depth], name).read_text().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < 1 << 60:  # "max", or v1's 2**63 rounded down
                limits.append((int(value), "the job's memory limit (its control group)"))
    space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if space != resource.RLIM_INFINITY:
        limits.append((space, "the process's address space (ulimit -v)"))
    return min(limits) if limits else None


#: where SLURM says which GPUs it gave a job: the step's and the job's indices, then a count
SLURM_GPU_INDICES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
SLURM_GPU_COUNT = "SLURM_GPUS_ON_NODE"


class GpuNotUsable(ValueError):
    """The job was given a GPU that the library about to run cannot use."""


def given_gpus() -> str | None:
    """What SLURM says it gave this job in GPUs (``SLURM_JOB_GPUS=0,1``), or None: none
    given, or hidden on purpose (``CUDA_VISIBLE_DEVICES`` empty, as paramill's CPU trials
    and a user's ``CUDA_VISIBLE_DEVICES= paramill ...`` set it)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return None
    for name in SLURM_GPU_INDICES:
        if os.environ.get(name, "").strip():
            return f"{name}={os.environ[name].strip()}"
    count = os.environ.get(SLURM_GPU_COUNT, "").strip()
    return f"{SLURM_GPU_COUNT}={count}" if count.isdigit() and int(count) > 0 else None


def refuse_unused_gpus(library: str, why: str) -> None:
    """:class:`GpuNotUsable` when SLURM gave this job GPUs (:func:`given_gpus`) that
    ``library`` cannot use (``why``): the job would run on the CPU behind its user's back,
    hours where minutes were asked for. Nothing where no GPU was given."""
    given = given_gpus()
    if given:
        raise GpuNotUsable(
            f"SLURM gave this job GPUs ({given}) but {library} cannot use CUDA: {why}. It would "
            "run on the CPU; install a CUDA build of it that this node's driver runs (docs/cluster.md, "
            "GPUs), or ask for no GPU for this rule (resources.RULE.gpu)")


def torch_cuda_problem() -> str | None:
    """Why torch cannot use a GPU here (None when it can): a CPU build, or CUDA's own reason
    (a driver older than the build's CUDA, no device)."""
    import torch

    if torch.cuda.is_available():  # a device torch can use (it counts them to say so)
        return None
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU build"
    try:
        torch.cuda.init()
    except Exception as exc:  # torch's reason: "The NVIDIA driver on your system is too old"
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}): " + " ".join(str(exc).split())[:300]
    return f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"


def pick(requested: str = "auto") -> str:
    """``cuda`` or ``cpu`` for torch: ``auto`` takes CUDA when torch can use a GPU, and is
    :class:`GpuNotUsable` where SLURM gave the job one torch cannot use."""
    if requested not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {requested!r}")
    if requested == "cpu":
        return requested
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES") == ""
    problem = "CUDA_VISIBLE_DEVICES is empty" if hidden else torch_cuda_problem()
    if problem is None:
        return "cuda"
    if requested == "cuda":
        raise ValueError(f"device cuda was requested but no GPU is visible ({problem})")
    refuse_unused_gpus("torch", problem)
    return "cpu"


def _deterministic_algorithms(torch) -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without its import of
    ``torch._inductor.config`` (2.4 s a job in torch 2.13, for a compiler paramill never runs):
    the flag is set on torch's core, and on the inductor's config only where something has
    already imported it.

    Without torch's filling of uninitialised memory, which that flag turns on: every
    ``torch.empty`` inside an operation then gets written with NaN or the largest integer
    first, a debugging aid for code that reads memory it never wrote (paramill's results are
    the same without it, to the bit: tests/workflow/test_reproducible.py, and the
    embedding losses against the code before it). It costs a fill kernel each time: 41 of
    the 49 ``fill_`` calls of an embedding training step on the CPU; on an H200, 27 fill
    kernels a step for WORD (33 of its 318 µs) and 75 fills for GRAN, whose cuDNN buffers'
    took 181 µs a step (benchmarks/records/h200-2026-11-28b/embed_step-*.json)."""
    import sys

    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:  # another torch: the public call
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        setter(True, warn_only=True)
        if "torch._inductor.config" in sys.modules:
            sys.modules["torch._inductor.config"].deterministic = True
    no_fill = getattr(torch._C, "_set_deterministic_fill_uninitialized_memory", None)
    if no_fill is not None:
        no_fill(False)


@contextlib.contextmanager
def matmul_tf32(enabled: bool):
    """Within: CUDA's FP32 matrix products (cuBLAS) in TF32 where ``enabled``, else in full FP32;
    torch's setting as it was afterwards (a process may train several models)."""
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = bool(enabled)
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def deterministic(seed: int | None = None, n_threads: int | None = None) -> None:
    """Make torch training repeatable: deterministic algorithms, a fixed thread count
    (``n_threads``, else :func:`threads`: the rule's ``--threads``), and with ``seed`` the
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
    _deterministic_algorithms(torch)
    _torch_threads(n_threads or threads())
    if seed is not None:
        import sentencepiece

        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        sentencepiece.set_random_generator_seed(seed)
