"""A CTranslate2 model tried in a process of its own before a job opens it.

CTranslate2 checks what ``model.bin`` declares of each variable (its bytes against its shape and
against the file), but not the variables against each other, nor its settings: a head count of
0 stops the process with SIGFPE, an ``alignment_layer`` past the last layer frees a pointer it
does not own (SIGABRT, ``free(): invalid pointer``), and a weight whose shape does not fit the
others (``[2048, 1]`` for ``[64, 32]``, the same bytes) reads past its buffer (SIGSEGV). In a
job that is a process killed by a signal and nothing in its log: no file, no reason; a shape
that fits in bytes but not in meaning can also end in memory the process no longer owns.
These were measured by changing single values of a tiny model's ``model.bin`` (10 of 60 shapes
so changed, 2 of 16 settings, crashed the process).

:func:`try_model` loads the model on the CPU in a child process and decodes one short input
with each of the calls paramill makes (beam search with n-best, top-k sampling, forced-decoding
scores). A child ended by a signal, or CTranslate2's own error, becomes an
:class:`~paramill.errors.InputError` naming the folder, before the job opens the model itself.
It is not proof: a model that decodes one input may still fail on another, but every such
crash found here happened on the first input. A model is tried once a process (its files'
sizes and times are the key) and the key is handed to worker processes through
:data:`TRIED_ENV`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from paramill.run.device import host_out_of_memory
from paramill.errors import InputError

#: keys of the models this process (or the one that started it) tried, JSON, for its workers
TRIED_ENV = "PARAMILL_CT2_TRIED"
#: what a trial may take: loading a model of gigabytes and decoding a word
TIMEOUT_S = 600
#: what to do about a model that fails its trial
ADVICE = "convert the model again, or give its OpenNMT-py checkpoint: nmt.models.<direction>.checkpoint"

CHILD = r"""
import json, sys
try:
    import ctranslate2
    ctranslate2.set_random_seed(1)
    model = ctranslate2.Translator(sys.argv[1], device="cpu", inter_threads=1, intra_threads=1)
    source = [["\u2581a", "."], ["."]]
    model.translate_batch(source, beam_size=2, num_hypotheses=2, return_scores=True,
                          max_decoding_length=4)
    model.translate_batch(source, beam_size=1, sampling_topk=5, max_decoding_length=4)
    model.score_batch(source, [["\u2581a"], ["."]])
    print(json.dumps({"ok": True}))
except BaseException as exc:
    print(json.dumps({"type": type(exc).__name__, "error": " ".join(str(exc).split())[:500]}))
"""


def _key(model_dir: Path) -> str:
    """The folder and each of its files' size and modification time."""
    entries = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns)
                     for e in os.scandir(model_dir) if e.is_file())
    return json.dumps([str(model_dir.resolve()), entries])


def _tried() -> set[str]:
    try:
        return set(json.loads(os.environ.get(TRIED_ENV, "[]")))
    except ValueError:
        return set()


def try_model(model_dir: str | Path, version: str, timeout: float = TIMEOUT_S,
              advice: str = ADVICE) -> None:
    """Load ``model_dir`` with CTranslate2 in a child process on the CPU and decode with it;
    raise :class:`InputError` naming the folder where that crashed or failed (with
    ``advice``; a :class:`MemoryError` where the child ran out of memory), else note it as
    tried."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        return  # CTranslate2's own error names it
    key = _key(model_dir)
    tried = _tried()
    if key in tried:
        return
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    what = f"CTranslate2 {version}"
    try:
        child = subprocess.run([sys.executable, "-c", CHILD, str(model_dir)], env=env, text=True,
                               capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InputError(model_dir, None, f"{what} did not load this model and decode a word with "
                         f"it within {timeout:.0f} s (tried in a process of its own)") from None
    if child.returncode < 0:
        name = (signal.Signals(-child.returncode).name
                if -child.returncode in signal.valid_signals() else f"signal {-child.returncode}")
        raise InputError(model_dir, None, f"{what} crashed ({name}) loading this model or decoding "
                         "a word with it, tried in a process of its own: its model.bin is damaged "
                         "or holds variables or settings that do not fit together (a weight's shape "
                         f"against the others, a head count of 0); {advice}")
    lines = child.stdout.strip().splitlines()
    try:
        said = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"trying {model_dir} with {what} ended with exit status "
                           f"{child.returncode}: {child.stderr.strip()[-500:]}") from None
    if said.get("type") == "MemoryError" or host_out_of_memory(said.get("error", "")):
        raise MemoryError(f"{model_dir}: {said['error']}")
    if said.get("type") in ("ImportError", "ModuleNotFoundError"):  # the environment, not the model
        raise RuntimeError(f"trying {model_dir}: the child process could not import "
                           f"CTranslate2 ({said['error']}; it runs {sys.executable})")
    if not said.get("ok"):
        raise InputError(model_dir, None, f"{what} cannot load this model directory or decode "
                         f"with it: {said['error']} (its config.json, model.bin and vocabularies as "
                         f"CTranslate2's converter writes them; {advice})")
    os.environ[TRIED_ENV] = json.dumps(sorted(tried | {key}))
