"""What a harvest keeps between runs: the state file (per-account and per-URL cursors,
URLs seen), its lock, and the raw pages of a day, each written atomically."""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any


from paramill.io import atomic_output, read_json, write_json
from paramill.twitter.api import HarvestError
from paramill.twitter.tweets import rejected


class State:
    """Harvest state: per-account user id, since_id and a listing cut short (next_token,
    newest id stored); per-URL search since_id/next_token."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        data = read_json(self.path) if self.path.exists() else {}
        self.users: dict[str, str] = data.get("users", {})
        self.since: dict[str, str] = data.get("since", {})
        self.pending: dict[str, dict[str, Any]] = data.get("pending", {})
        self.urls: dict[str, dict[str, Any]] = data.get("urls", {})

    def save(self) -> None:
        write_json(self.path, {"users": self.users, "since": self.since, "pending": self.pending,
                               "urls": self.urls})


@contextlib.contextmanager
def state_lock(path: str | Path):
    """An exclusive lock on ``<state>.lock`` for the whole harvest; a second harvest on the
    same state ends at once with a message naming the holder."""
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise HarvestError(f"another harvest ({holder}) is using {path}; two harvests on one "
                               "state would both store everything. Wait for it to end.") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


class PageStore:
    """A day's raw API pages, one compressed JSON file each, written atomically."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.count = len(list(self.root.glob("*.json.gz")))

    def save(self, kind: str, page: dict[str, Any]) -> Path:
        self.count += 1
        path = self.root / f"{self.count:06d}-{kind}.json.gz"
        with atomic_output(path) as (tmp,):
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                json.dump(page, fh)
        return path

    def pages(self, bad: list[dict[str, Any]] | None = None) -> list[tuple[str, str, Any]]:
        """``(kind, file name, page)`` of every saved page; a file that cannot be read back
        becomes a rejected row in ``bad`` instead of stopping the day."""
        out = []
        for path in sorted(self.root.glob("*.json.gz")):
            kind = path.name.split("-", 1)[1].split(".", 1)[0].split("_", 1)[0]
            try:
                with gzip.open(path, "rt", encoding="utf-8") as fh:
                    out.append((kind, str(path), json.load(fh)))
            except (OSError, EOFError, ValueError, zlib.error) as exc:
                if bad is not None:
                    bad.append(rejected(str(path), None, "unreadable_page", f"{type(exc).__name__}: {exc}"))
        return out


def newest_id(page: dict[str, Any], current: str | None) -> str | None:
    """The newest decimal tweet id on a stored page (its rejected tweets too: the page is
    kept, so the cursor may pass them), or ``current``."""
    best = int(current) if current else 0
    for t in page.get("data") or []:
        i = t.get("id") if isinstance(t, dict) else None
        if isinstance(i, str) and i.isascii() and i.isdigit():
            best = max(best, int(i))
    return str(best) if best else current


def prune_urls(state: State, date: str, days: int) -> int:
    """Drop the URLs first seen more than ``days`` days before ``date``; the number dropped.
    URLs from a state without first-seen dates count as first seen on ``date``."""
    day = datetime.date.fromisoformat(date)
    old = []
    for url, entry in state.urls.items():
        first = entry.setdefault("first_seen", date)
        if (day - datetime.date.fromisoformat(first)).days > days:
            old.append(url)
    for url in old:
        del state.urls[url]
    return len(old)
