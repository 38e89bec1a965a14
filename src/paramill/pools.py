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
import signal
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool


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
