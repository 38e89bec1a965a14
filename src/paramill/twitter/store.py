"""What a harvest keeps between runs: the state file (per-account and per-URL cursors,
URLs seen), its lock, and the raw pages of a day, each written atomically."""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, NoReturn


from paramill.errors import InputError
from paramill.io.outputs import atomic_output
from paramill.io.jsonfiles import read_json, write_json
from paramill.run.progress import note
from paramill.twitter.tweets import rejected


class State:
    """Harvest state: per-account user id, since_id and a listing cut short (next_token,
    newest id stored); per-URL search since_id/next_token; the latest day harvested live, and
    the latest harvested to its end."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        data = read_json(self.path) if self.path.exists() else {}
        if not isinstance(data, dict):
            self._wrong("the file", data, "an object of users, since, pending and urls")
        self.users: dict[str, str] = self._ids(data, "users", "user id")
        self.since: dict[str, str] = self._ids(data, "since", "newest tweet id")
        self.pending: dict[str, dict[str, Any]] = self._entries(
            data, "pending", {"next_token": _token, "newest": _id}, "{next_token, newest}")
        self.urls: dict[str, dict[str, Any]] = self._entries(
            data, "urls", {"since_id": _id, "next_token": _token, "newest": _id,
                           "first_seen": _day, "done_run": _date},
            "{since_id, next_token, first_seen}")
        self.latest_day: str | None = data.get("latest_day")
        if not _date(self.latest_day):
            self._wrong("latest_day", self.latest_day, "the latest day harvested (YYYY-MM-DD)")
        #: the latest day whose live harvest ran to its end (not killed, not stopped)
        self.completed_day: str | None = data.get("completed_day")
        if not _date(self.completed_day):
            self._wrong("completed_day", self.completed_day, "the latest day harvested to its end "
                        "(YYYY-MM-DD)")

    def _wrong(self, where: str, value: Any, what: str) -> NoReturn:
        """A state that is JSON but not a harvest state's shape (edited by hand, or another
        file): an error naming the file and the entry, before anything is fetched."""
        raise InputError(self.path, None, f"not a harvest state: {where} is "
                         f"{json.dumps(value, default=str)[:80]}, not {what}. Fix it, or move the "
                         "file away to start a new state (timelines are then read again from "
                         "their newest tweets, and the URLs found before are no longer searched)")

    def _ids(self, data: dict[str, Any], key: str, what: str) -> dict[str, str]:
        """``{account: id}`` (an id a decimal string; a JSON number is taken as one)."""
        value = data.get(key, {})
        if not isinstance(value, dict):
            self._wrong(key, value, f"an object of account: {what}")
        for account, found in value.items():
            if found is None or not _id(found):
                self._wrong(f"{key}[{account!r}]", found, f"a {what} (a decimal string)")
        return {account: str(found) for account, found in value.items()}

    def _entries(self, data: dict[str, Any], key: str, fields: dict[str, Any], what: str
                 ) -> dict[str, dict[str, Any]]:
        """``{name: {field: value}}``, each field this paramill reads, where present, of its
        type."""
        value = data.get(key, {})
        if not isinstance(value, dict):
            self._wrong(key, value, f"an object of {what} entries")
        for name, entry in value.items():
            if not isinstance(entry, dict):
                self._wrong(f"{key}[{name!r}]", entry, f"an object {what}")
            for field, check in fields.items():  # a field this paramill does not know is kept
                if field not in entry:
                    continue
                found = entry[field]
                if not check(found):
                    self._wrong(f"{key}[{name!r}].{field}", found, f"a {check.__doc__}")
                if isinstance(found, int) and not isinstance(found, bool):
                    entry[field] = str(found)
        return value

    def save(self) -> None:
        write_json(self.path, {"users": self.users, "since": self.since, "pending": self.pending,
                               "urls": self.urls, "latest_day": self.latest_day,
                               "completed_day": self.completed_day})


def _id(value: Any) -> bool:
    """tweet id (a decimal string) or null"""
    if value is None:
        return True
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _token(value: Any) -> bool:
    """paging token (a string) or null"""
    return value is None or isinstance(value, str)


def _date(value: Any) -> bool:
    """date (YYYY-MM-DD) or null"""
    return value is None or _day(value)


def _day(value: Any) -> bool:
    """date (YYYY-MM-DD)"""
    try:
        datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return True


#: what ``flock`` answers on a file system that keeps no locks
NO_LOCKS = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP)


@contextlib.contextmanager
def state_lock(path: str | Path):
    """An exclusive lock on ``<state>.lock`` for the whole harvest: harvests on one state run
    one after another, a second waiting for the first to end (saying whose lock it waits for;
    the lock goes with its holder's process, killed or not), then reading the state the
    first left. On a file system that keeps no locks (``ENOLCK``, ``ENOSYS``, ``EOPNOTSUPP``:
    some cluster file systems mounted without them) the harvest runs unlocked, saying so."""
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                note(f"paramill twitter harvest: another harvest ({holder}) is using {path}; "
                     "waiting for it to end (harvests on one state run one after another)")
                fcntl.flock(fh, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in NO_LOCKS:
                raise
            note(f"paramill twitter harvest: warning: {lock_path}: its file system keeps no locks "
                 f"({os.strerror(exc.errno)}), so nothing stops a second harvest on {path} "
                 "meanwhile: run one harvest at a time")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()  # closing the file releases the lock


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


def latest_harvest(state: State, raw_dir: str | Path) -> str | None:
    """The latest day a live harvest ran: the state's record of it, or the newest day folder
    of saved pages (a harvest makes its day's folder first; a state from before the record
    was kept)."""
    folders = [p.name for p in Path(raw_dir).glob("????-??-??") if p.is_dir() and _day(p.name)]
    return max([day for day in [state.latest_day, *folders] if day], default=None)


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


def settled(state: State, raw_dir: str | Path, date: str, today: str) -> str | None:
    """Why the live harvest of ``date`` may fetch no more (None when it may): a later day was
    harvested, or its own harvest ran to its end and ``today`` (UTC) is past it. The API
    answers with what is there now, which would be filed under ``date`` and taken from the
    day it belongs to (a changed setting re-runs every day's job, weeks later)."""
    latest = latest_harvest(state, raw_dir)
    if latest is not None and date < latest:
        return f"is before the latest day harvested ({latest})"
    if date == latest == state.completed_day and date < today:
        return f"was harvested to its end and today is {today} (UTC)"
    return None


def saved_pages(folder: Path, date: str, why: str) -> PageStore:
    """The pages saved by the live harvest of ``date``, a settled day (:func:`settled`): its
    table is rebuilt from them, nothing fetched."""
    if not folder.is_dir():
        raise InputError(folder, None, f"no live harvest of {date} was made, and {date} {why}: "
                         f"the X API returns what is there now, so {date} cannot be harvested "
                         "any more. Take it out of twitter.dates (or replay an archive of it: "
                         "twitter.source archive)")
    store = PageStore(folder)
    note(f"paramill twitter harvest: {date} {why}: its table is rebuilt from its {store.count} "
         "saved pages, nothing fetched (what is new goes to the next day harvested)")
    return store
