"""Progress bars for long work: live on a terminal, a line every 30 s in a log file."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

from paramill.config.layout import as_written


def progress(desc: str, unit: str = "rows", total: int | None = None) -> tqdm:
    """A tqdm bar on stderr. ``PARAMILL_PROGRESS=0`` silences it. Counts are scaled (12.3k)
    unless a total under a thousand says they stay small (3/20, not 3.00/20.0)."""
    interactive = sys.stderr.isatty()
    small = "{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
    return tqdm(desc=desc, unit=unit, unit_scale=True, total=total, file=sys.stderr,
                bar_format=small if total is not None and total < 1000 else None,
                mininterval=0.5 if interactive else 30.0, dynamic_ncols=interactive,
                disable=os.environ.get("PARAMILL_PROGRESS", "1") == "0")


def note(line: str) -> None:
    """A line on stderr that does not cut through an open bar's line; a setting it names is
    named as a config file holds it (:func:`paramill.config.layout.as_written`)."""
    tqdm.write(as_written(line), file=sys.stderr)


def end_all() -> None:
    """Close every open bar, ending its line: a message printed next (an error) then starts
    a line of its own, so ``grep ^paramill`` finds it in a log."""
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    sys.stderr.flush()
