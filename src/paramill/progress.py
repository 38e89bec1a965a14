"""Progress bars for long work: live on a terminal, a line every 30 s in a log file."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm


def progress(desc: str, unit: str = "rows", total: int | None = None) -> tqdm:
    """A tqdm bar on stderr. ``PARAMILL_PROGRESS=0`` silences it."""
    interactive = sys.stderr.isatty()
    return tqdm(desc=desc, unit=unit, unit_scale=True, total=total, file=sys.stderr,
                mininterval=0.5 if interactive else 30.0, dynamic_ncols=interactive,
                disable=os.environ.get("PARAMILL_PROGRESS", "1") == "0")


def end_all() -> None:
    """Close every open bar, ending its line: a message printed next (an error) then starts
    a line of its own, so ``grep ^paramill`` finds it in a log."""
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    sys.stderr.flush()
