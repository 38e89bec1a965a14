"""Snakemake's locks, kept per run: the workflow loads this before Snakemake locks anything.

Snakemake locks the files a run reads and the files it will write, so that a second run in
the same folder that would write one of them stops at once (``LockException``) instead of
racing the first. Since 9.17 (its persistence back ends, snakemake/snakemake#4012) a run
that ends removes every run's locks, the whole ``.snakemake/locks`` folder, not its own: a
short run beside a long one (``scripts/harvest.sh``'s day beside a monthly run) releases the
long run's files, and the next short run then writes what the long one reads or writes.

:func:`keep_other_runs_locks` makes a run's end remove its own lock files only, as
Snakemake did before 9.17; ``snakemake --unlock`` still removes them all (a run killed
outright leaves its locks). Only the file back end (the default) is changed: the database
back end keeps no owner with a lock. Where Snakemake's persistence has another shape (an
older or a fixed release) nothing is changed.
``tests/workflow/test_harvest_workflow.py`` runs the overlap with real Snakemake.
"""

from __future__ import annotations

import os


def keep_other_runs_locks() -> bool:
    """Make a Snakemake run's end remove only its own lock files; True when applied."""
    try:
        from snakemake.persistence.file import FilePersistence
    except ImportError:  # a Snakemake before its persistence back ends: already per run
        return False
    remove_all = getattr(FilePersistence, "_delete_locks", None)
    if remove_all is None or getattr(FilePersistence, "_paramill_own_locks", False):
        return getattr(FilePersistence, "_paramill_own_locks", False)

    def unlock(self) -> None:  # the end of a run (and of a failed one)
        for lockfile in self._lockfile.values():
            try:
                os.remove(lockfile)
            except FileNotFoundError:
                pass
        self._lockfile.clear()
        try:
            os.rmdir(self._lockdir)  # only when no other run holds locks
        except OSError:
            pass

    def cleanup_locks(self) -> None:  # snakemake --unlock: every lock, as before
        remove_all(self)

    FilePersistence.unlock = unlock
    FilePersistence.cleanup_locks = cleanup_locks
    FilePersistence._paramill_own_locks = True
    return True
