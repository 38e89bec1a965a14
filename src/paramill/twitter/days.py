"""The days a month's job reads besides its own: the month before, and the days before the
month whose tweets pair with its (``twitter.pairs.context_days``). Standard library only: the
workflow's input functions import it."""

from __future__ import annotations

import datetime


def month_before(month: str) -> str:
    """The month before ``month`` (YYYY-MM)."""
    year, number = map(int, month.split("-"))
    return f"{year - 1}-12" if number == 1 else f"{year}-{number - 1:02d}"


def days_before(month: str, days: int) -> tuple[str, str]:
    """The ``days`` days before ``month`` as ISO dates: the earliest (in them) and the month's
    first day (not in them); a day ``d`` is one of them when ``earliest <= d < first``."""
    first = datetime.date.fromisoformat(f"{month}-01")
    return (first - datetime.timedelta(days=days)).isoformat(), first.isoformat()
