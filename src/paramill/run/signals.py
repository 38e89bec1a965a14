"""SIGTERM handlers set for a block of work: SLURM (a time limit, ``scancel``) and Snakemake
stop a job with SIGTERM, and what a job does then depends on where it is (unwind and remove
its temporaries; write a training checkpoint first; pass it on to a tool it runs)."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Callable, Iterator


@contextlib.contextmanager
def on_sigterm(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """Within: SIGTERM calls ``handler(signum, frame)``; the handler before is put back after.
    Only the main thread can set one: elsewhere (a test's thread, a library's), nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
