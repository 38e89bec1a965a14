"""Pools of worker processes: a worker lost (killed, crashed) said in one line.

Without it a lost worker ends the job in concurrent.futures' ``BrokenProcessPool`` traceback,
which says neither how the worker ended nor what to change. On a cluster a worker killed
outright (SIGKILL) is most often the job's memory limit: the kernel's out-of-memory killer
picks the process that holds the most, often a worker; ``paramill`` then ends with its
memory error line and exit status 3 (:func:`paramill.cli.out_of_memory` reads
:attr:`WorkerLost.memory_hint`). Another end (a crash) stays a defect, with its traceback.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any


class WorkerLost(RuntimeError):
    """A worker process of a pool ended abruptly, its work unfinished: ``codes`` the pool's
    exit codes (a signal's negated; the pool's own SIGTERM to the others left out),
    ``doing`` what the pool was doing, ``holds`` what each worker holds in memory."""

    def __init__(self, codes: Iterable[int | None], doing: str, holds: str):
        self.codes = sorted({c for c in codes if c and c != -signal.SIGTERM})
        ends = [f"signal {signal.Signals(-c).name}" if c < 0 and -c in signal.valid_signals()
                else f"exit status {c}" for c in self.codes]
        how = ", ".join(ends) or "how is unknown"
        self.memory_hint = None
        if -signal.SIGKILL in self.codes:
            self.memory_hint = (
                f"a worker process was killed ({how}) while {doing}: on a cluster most often by "
                "the job's memory limit (the kernel's out-of-memory killer). Give the rule more "
                f"memory (resources: {{RULE: {{mem_mb: ...}}}}) or fewer threads (each worker "
                f"holds {holds})")
        super().__init__(self.memory_hint or f"a worker process ended abruptly ({how}) while {doing}")


@contextlib.contextmanager
def lost_workers(pool: ProcessPoolExecutor, doing: str, holds: str) -> Iterator[None]:
    """Inside, a worker of ``pool`` lost raises :class:`WorkerLost`, once the pool has ended
    the others and reaped them all (an exit code read while the pool's thread reaps it
    could read as none)."""
    try:
        yield
    except BrokenProcessPool as exc:
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=True)
        raise WorkerLost([p.exitcode for p in processes], doing, holds) from exc


def ordered_map(fn, chunks: Iterable[tuple], workers: int, *, doing: str, holds: str,
                window: int | None = None, context: tuple = (),
                size: Callable[[tuple], Any] = lambda chunk: len(chunk[0])
                ) -> Iterator[tuple[Any, Any]]:
    """``(fn(*context, chunk), size(chunk))`` for each chunk, in order. With ``workers`` > 1
    and more than one chunk, the chunks go to that many worker processes (spawned; each one
    thread), at most ``window`` (default 2 x workers) in flight, so memory stays bounded; work
    of one chunk (the sample, tests) is done here, without starting any process. A worker
    lost is :class:`WorkerLost`, saying it happened while ``doing`` and that each worker
    holds ``holds``.

    ``context`` goes to each worker once, when it starts, not with every chunk (sent with each
    chunk, a worker would rebuild, say, a SentencePiece model per chunk). ``fn`` is a
    module-level function (sent by name); ``size`` is taken here when a chunk is sent, so
    the chunk itself is not kept while it is worked on."""
    it = iter(chunks)
    head = list(itertools.islice(it, 2))
    chunks = itertools.chain(head, it)
    if workers <= 1 or len(head) < 2:
        for chunk in chunks:
            yield fn(*context, chunk), size(chunk)
        return
    window = window or 2 * workers
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_start_worker, initargs=(context,)) as pool:
        pending: deque = deque()
        with lost_workers(pool, doing, holds):
            for chunk in chunks:
                pending.append((pool.submit(_in_worker, fn, chunk), size(chunk)))
                if len(pending) >= window:
                    future, weight = pending.popleft()
                    yield future.result(), weight
            while pending:
                future, weight = pending.popleft()
                yield future.result(), weight


#: what :func:`ordered_map` gave this worker process when it started
_CONTEXT: tuple = ()


def _start_worker(context: tuple) -> None:
    """A worker uses one thread (the job's threads are the workers) and keeps ``context``
    for every chunk it is given."""
    global _CONTEXT
    from paramill.run import device

    device.limit_threads(1)
    _CONTEXT = context


def _in_worker(fn, chunk):
    """``fn`` on a chunk; then the Arrow memory the chunk's work freed goes back to the system:
    pyarrow's allocator (mimalloc) otherwise keeps it, about 18 MB a worker (measured with 14
    featurising workers at 2M pairs: 1.45 GB of workers against 1.66-1.74 GB, the same
    seconds)."""
    try:
        return fn(*_CONTEXT, chunk)
    finally:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
