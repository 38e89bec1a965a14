"""The decoding engine: CTranslate2 translators opened in one place, on the device the rule
was given, and never silently on the CPU of a GPU node.

CTranslate2 4.x's Linux wheels are built against CUDA 12 and open ``libcublas.so.12`` the
first time they multiply on the GPU. A node set up with PyPI's current CUDA torch has CUDA
13's cuBLAS only, so decoding fails there at the first batch. paramill makes CTranslate2 find
CUDA 12's cuBLAS from the ``nvidia-cublas-cu12`` wheel (``make install`` adds it where torch
is a CUDA build): :func:`load_cuda_libraries` loads ``libcublasLt.so.12`` and
``libcublas.so.12`` from that wheel's folder into the process (``RTLD_GLOBAL``) before
``ctranslate2`` is imported, and CTranslate2's own ``dlopen("libcublas.so.12")`` then finds
the loaded library by its soname. No ``LD_LIBRARY_PATH`` is left to the user.

When a GPU is visible (``device: auto``) or asked for (``device: cuda``) and CTranslate2 cannot
use it, the second engine stands in (``engine: auto``): OpenNMT-py's own model in torch
(:mod:`paramill.nmt.torch_engine`), which runs on any CUDA torch supports, decoding from the
OpenNMT-py checkpoint every bundle carries; the job log and provenance name it and why. Where
neither can use the GPU, :func:`select` raises :class:`GpuUnavailable` before any work,
saying what to install: a job that was given a GPU never decodes on the CPU behind the
user's back.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from paramill.run import device
from paramill.errors import InputError

#: the CUDA 12 libraries CTranslate2 4.x opens by soname, in load order (cuBLAS needs cuBLASLt)
CUDA12_LIBRARIES = ("libcublasLt.so.12", "libcublas.so.12")
#: where the nvidia-cublas-cu12 wheel puts them, under a site-packages folder
WHEEL_FOLDER = Path("nvidia") / "cublas" / "lib"
#: the engines: CTranslate2, and OpenNMT-py's model in torch (paramill.nmt.torch_engine)
TORCH_ENGINE = "opennmt-py"
ENGINES = ("auto", "ctranslate2", TORCH_ENGINE)
INSTALL_HINT = ("install CUDA 12's cuBLAS into this environment: "
                "pip install 'nvidia-cublas-cu12>=12.1,<13' (make install does where torch is a "
                "CUDA build), or decode on the CPU with nmt.translate.device: cpu")


class GpuUnavailable(ValueError):
    """A GPU was visible or requested, but the engine cannot decode on it."""


@dataclass
class Engine:
    """What decodes: the engine, its version, the device and where its CUDA libraries came
    from (recorded in provenance and printed to the job log)."""

    name: str
    version: str
    device: str
    libraries: dict[str, str] = field(default_factory=dict)
    note: str = ""  # why this engine (the opennmt-py engine standing in for CTranslate2)

    def describe(self) -> str:
        where = "".join(f", {lib} from {path}" for lib, path in self.libraries.items())
        return f"{self.name} {self.version} on {self.device}{where}" + (f" ({self.note})" if self.note else "")

    def record(self) -> dict[str, object]:
        record: dict[str, object] = {"name": self.name, "version": self.version, "device": self.device,
                                     "libraries": dict(self.libraries)}
        if self.note:
            record["note"] = self.note
        return record


_LOADED: dict[str, str] = {}
_SEARCHED_SYS_PATH = False  # sys.path was searched (found or not): decoding asks once a block


def _candidate_folders(search: list[str] | None) -> list[Path]:
    return [Path(entry) / WHEEL_FOLDER for entry in (search if search is not None else sys.path)
            if entry]


def load_cuda_libraries(search: list[str] | None = None) -> dict[str, str]:
    """Load CUDA 12's cuBLAS from an installed ``nvidia-cublas-cu12`` wheel (the first
    ``<entry>/nvidia/cublas/lib`` of ``search``, default ``sys.path``) into this process, so
    that CTranslate2 finds it by soname. Returns {soname: path} of what is loaded (empty
    where the wheel is not installed: CPU machines need nothing). Idempotent."""
    global _SEARCHED_SYS_PATH
    if _LOADED or (search is None and _SEARCHED_SYS_PATH):
        return dict(_LOADED)
    _SEARCHED_SYS_PATH = _SEARCHED_SYS_PATH or search is None
    for folder in _candidate_folders(search):
        paths = [folder / name for name in CUDA12_LIBRARIES]
        if all(path.is_file() for path in paths):
            for name, path in zip(CUDA12_LIBRARIES, paths):
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                _LOADED[name] = str(path)
            break
    return dict(_LOADED)


def import_ctranslate2():
    """``ctranslate2``, with CUDA 12's cuBLAS made findable (CTranslate2 opens it at its
    first GPU multiplication, so this also holds where ``ctranslate2`` was imported before)."""
    load_cuda_libraries()
    import ctranslate2

    return ctranslate2


def cuda_library_problem(search: list[str] | None = None) -> str | None:
    """Why CTranslate2 could not multiply on the GPU (None when cuBLAS 12 loads): the
    libraries are opened by soname exactly as CTranslate2 opens them, after
    :func:`load_cuda_libraries` (``search`` as there)."""
    load_cuda_libraries(search)
    for name in CUDA12_LIBRARIES:
        try:
            ctypes.CDLL(name)
        except OSError as exc:
            return f"{name} (CUDA 12 cuBLAS, which CTranslate2 4.x needs) cannot be loaded: {exc}"
    return None


def _torch_problem(model_dirs: list[str | Path], dev: str) -> str | None:
    """Why the opennmt-py engine cannot decode ``model_dirs`` on ``dev`` (None when it can)."""
    from paramill.nmt.checkpoints import CHECKPOINT, checkpoint_path

    missing = [str(m) for m in model_dirs if not checkpoint_path(m).is_file()]
    if missing:
        return (f"{', '.join(missing)} has no OpenNMT-py checkpoint ({CHECKPOINT}; paramill nmt "
                "convert writes one into each bundle)")
    try:
        import torch  # noqa: F401 - only whether it imports
    except ImportError as exc:  # pragma: no cover - torch is a dependency
        return f"torch cannot be imported ({exc})"
    if dev == "cuda" and (problem := device.torch_cuda_problem()):
        return problem
    if importlib.util.find_spec("onmt") is None:
        return "OpenNMT-py is not installed"
    return None


def _torch_engine(dev: str, note: str = "") -> Engine:
    import torch

    return Engine(TORCH_ENGINE, f"{metadata.version('OpenNMT-py')} (torch {torch.__version__})",
                  dev, note=note)


def select(requested: str = "auto", what: str = "nmt.translate", engine: str = "auto",
           models: list[str | Path] | None = None) -> Engine:
    """The engine and device for ``requested`` (auto|cpu|cuda), checked before any work.

    ``engine`` auto: CTranslate2, except on a GPU it cannot use (no CUDA 12 cuBLAS), where the
    opennmt-py engine (torch) decodes ``models`` from their OpenNMT-py checkpoints, the reason
    named in the job log and provenance. :class:`GpuUnavailable` when a GPU is visible or asked
    for and neither engine can use it: never the CPU behind the user's back."""
    if requested not in ("auto", "cpu", "cuda"):
        raise ValueError(f"{what}.device must be auto, cpu or cuda, not {requested!r}")
    if engine not in ENGINES:
        raise ValueError(f"{what}.engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    models = list(models or [])
    if engine == TORCH_ENGINE:
        dev = requested if requested != "auto" else device.pick("auto")
        problem = _torch_problem(models, dev)
        if problem:
            raise GpuUnavailable(f"{what}.engine is {TORCH_ENGINE} on {dev}, but {problem}")
        return _torch_engine(dev)
    ct2 = import_ctranslate2()
    visible = 0 if requested == "cpu" else device.cuda_count()
    if requested == "cuda" and not visible:
        raise GpuUnavailable(f"{what}.device is cuda but no GPU is visible to CTranslate2 "
                             f"{ct2.__version__} (CUDA_VISIBLE_DEVICES="
                             f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")
    if not visible and requested == "auto":
        device.refuse_unused_gpus(f"CTranslate2 {ct2.__version__}", "it sees no CUDA device")
    dev = "cuda" if visible else "cpu"
    if dev == "cuda":
        problem = cuda_library_problem()
        if problem:
            fallback = _torch_problem(models, "cuda") if engine == "auto" else "engine ctranslate2 was asked for"
            if fallback is None:
                return _torch_engine("cuda", note=f"CTranslate2 cannot use the GPU: {problem}")
            raise GpuUnavailable(
                f"{what}.device is {requested} and {visible} GPU(s) are visible, "
                f"but {problem}, and the {TORCH_ENGINE} engine cannot stand in ({fallback}); "
                f"{INSTALL_HINT}")
    return Engine("ctranslate2", ct2.__version__, dev, load_cuda_libraries() if dev == "cuda" else {})


def open_translator(model_dir: str | Path, engine: Engine, threads: int = 1,
                    compute_type: str = "default", seed: int | None = None):
    """A translator on ``engine.device``: CTranslate2's, or the opennmt-py engine's
    (:class:`paramill.nmt.torch_engine.TorchTranslator`, same calls). ``seed`` seeds its
    sampler. On CPU, CTranslate2 decodes a batch per thread (inter_threads = threads,
    intra_threads = 1): for beam search with small and medium models that measured 1.6x faster
    here than one batch on all threads; torch uses the rule's threads (``--threads``)."""
    if engine.name == TORCH_ENGINE:
        from paramill.nmt.torch_engine import TorchTranslator

        translator = TorchTranslator(model_dir, engine.device, compute_type)
        if seed is not None:
            translator.seed(seed)
        return translator
    ct2 = import_ctranslate2()
    if seed is not None:  # CTranslate2 seeds a worker thread's generator when it starts
        ct2.set_random_seed(seed)
    if engine.device == "cpu":
        return ct2_model(ct2, model_dir, device="cpu", compute_type=compute_type,
                         inter_threads=max(1, threads), intra_threads=1)
    return ct2_model(ct2, model_dir, device=engine.device, compute_type=compute_type)


#: what CTranslate2 says of a device, not of the files: such errors are not the model's
DEVICE_WORDS = ("CUDA", "cuBLAS", "CUBLAS", "cuDNN", "out of memory", "allocate memory")


def ct2_model(ct2, model_dir: str | Path, **options):
    """``ct2.Translator(model_dir, **options)``, a directory CTranslate2 cannot read being an
    :class:`InputError` naming it. CTranslate2 checks what ``model.bin`` declares before it
    allocates (a variable's bytes against its shape and against the file: a 808 KB file
    declaring 1.6 GB fails in milliseconds), but says it with a ``RuntimeError`` naming
    neither the file nor the folder (``Variable 'decoder/embeddings/weight' has an invalid
    payload size``, ``File model.bin is incomplete``, a JSON parse error of a vocabulary), an
    ``IndexError`` for a variable a damaged name hides (``variable decoder/embeddings/weight not
    found``) or a ``UnicodeDecodeError`` for a name that is not UTF-8: in a job, a traceback.
    Errors of the device (its memory, its libraries) are raised as they are. The model is tried
    first in a process of its own (:func:`paramill.nmt.trial.try_model`): settings or shapes
    that do not fit together crash CTranslate2 rather than raise."""
    from paramill.nmt.trial import ADVICE, try_model

    try_model(model_dir, ct2.__version__)
    try:
        return ct2.Translator(str(model_dir), **options)
    except (RuntimeError, ValueError, LookupError) as exc:
        if isinstance(exc, GpuUnavailable) or any(word in str(exc) for word in DEVICE_WORDS):
            raise
        raise InputError(model_dir, None, f"CTranslate2 {ct2.__version__} cannot load this "
                         f"model directory: {exc} (its config.json, model.bin and vocabularies as "
                         f"CTranslate2's converter writes them; {ADVICE})") from None


def announce(engine: Engine, verb: str) -> None:
    """One line in the job log naming the engine (its own line, greppable)."""
    print(f"paramill {verb}: engine {engine.describe()}", file=sys.stderr, flush=True)
