"""Labelled pairs for the identifier (Twitter URL corpus raw or tokenised, PIT-2015 with
its crowd votes or expert scores, each read by its :mod:`paramill.formats` module) and the
unlabelled sentences a student is distilled on; a bad line is an
:class:`~paramill.io.InputError` naming file and line."""

from __future__ import annotations

import re
from pathlib import Path

from paramill import formats
from paramill.fields import counts
from paramill.formats import Bad, pit2015, toks, twitter_url
from paramill.io import InputError, open_compressed
from paramill.twitter.identify.settings import FORMATS

_EXPERT = re.compile(r"^[0-5]$")
_LABEL_LINE = re.compile(r"^(true|false|-+)\s*(?:\t\s*([0-9.]+)\s*)?$")


def read_label_file(path: str | Path) -> list[int | None]:
    """PIT-2015's ``test.label``: one ``true|false|----`` (and the expert score) per line of
    the data; debatable lines are None."""
    out: list[int | None] = []
    with open_compressed(path) as fh:
        for line_no, raw in enumerate(fh, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            m = _LABEL_LINE.match(line.strip())
            if not m:
                raise InputError(path, line_no, f"expected true, false or ---- (and a score), "
                                                f"not {line!r}")
            out.append({"true": 1, "false": 0}.get(m.group(1)))
    return out


def _pit_label(votes: str) -> tuple[int | None, str | None]:
    """A PIT-2015 label column: crowd votes ``(pos, neg)`` (train/dev) or an expert score 0-5
    (test). (label or None if debatable, error or None)."""
    found = counts(votes)
    if found is not None:
        pos = found[0]
        return (None if pos == 2 else int(pos > 2)), None
    if _EXPERT.match(votes):
        score = int(votes)
        return (None if score == 3 else int(score > 3)), None
    return None, f"label must be crowd votes (pos, neg) or an expert score 0-5, not {votes!r}"


def read_labelled(path: str | Path, fmt: str, labels: str | Path | None = None
                  ) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) from a labelled file/directory (``labels``: PIT-2015 test's
    separate label file)."""
    if fmt not in FORMATS:
        raise ValueError(f"labelled format must be one of {FORMATS}, not {fmt!r}")
    if labels is not None and fmt != "pit2015":
        raise ValueError(f"a separate label file is read for format pit2015 only, not {fmt!r}")
    if labels is not None:
        return _pit_with_label_file(Path(path), Path(labels))
    pairs, gold = [], []
    path = Path(path)
    if fmt == toks.NAME:
        for row in toks.read(path, MAX_TEXT_LINE_BYTES):
            if row.sim.strip() not in ("0", "1"):
                raise InputError(path / "sim.txt", row.line_no,
                                 f"label must be 0 or 1, not {row.sim!r}")
            pairs.append((row.a, row.b))
            gold.append(int(row.sim))
        return pairs, gold, 0
    if formats.canonical(fmt) == twitter_url.NAME:
        # the corpus's rule: 4-6 yes, 0-2 no, 3 dropped
        return _collect(twitter_url.read(str(path), MAX_TEXT_LINE_BYTES), path,
                        lambda item: item.label())

    def pit_label(pit) -> int | None:
        if pit.label is None:
            raise InputError(path, pit.line_no, "expected PIT-2015 fields (topic id, topic, s1, "
                                                "s2, label); got 4 fields")
        label, error = _pit_label(pit.label)
        if error:
            raise InputError(path, pit.line_no, error)
        return label

    return _collect(pit2015.read(str(path), MAX_TEXT_LINE_BYTES), path, pit_label)


def _collect(records, path: Path, label_of) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) of a format's records: a blank line is skipped, any other bad
    line is an error naming file and line, a record ``label_of`` gives None is dropped."""
    pairs, labels, dropped = [], [], 0
    for record in records:
        if isinstance(record, Bad):
            if record.reason == "column_count" and not (record.text or "").strip():
                continue  # a blank line
            raise InputError(path, record.line_no, record.detail)
        label = label_of(record)
        if label is None:
            dropped += 1
            continue
        pairs.append((record.s1, record.s2))
        labels.append(label)
    return pairs, labels, dropped


def _pit_with_label_file(path: Path, label_path: Path) -> tuple[list[tuple[str, str]], list[int], int]:
    gold = read_label_file(label_path)
    pairs, labels, dropped, line_no = [], [], 0, 0
    for pit in pit2015.read(str(path), MAX_TEXT_LINE_BYTES):
        if isinstance(pit, Bad):
            raise InputError(path, pit.line_no, pit.detail)
        line_no = pit.line_no
        if line_no > len(gold):
            continue  # counted for the error below
        if gold[line_no - 1] is None:
            dropped += 1
            continue
        pairs.append((pit.s1, pit.s2))
        labels.append(gold[line_no - 1])
    if line_no != len(gold):
        raise InputError(label_path, None, f"{len(gold)} labels for {line_no} lines of {path}: "
                                           "the label file must have one line per pair")
    return pairs, labels, dropped


MAX_TEXT_LINE_BYTES = 65536


def unlabelled_sentences(paths, limit: int, seed: int) -> list[str]:
    """The distinct non-empty lines of ``paths`` (whitespace-trimmed) whose seeded 64-bit
    hash is among the ``limit`` smallest: a uniform sample that does not depend on the
    files' order or on repeated lines, held in memory ``limit`` lines at a time. A line that
    is not UTF-8 or longer than 64 KiB is an :class:`InputError` naming file and line."""
    import hashlib
    import heapq

    from paramill.io import LineStream, decode_line

    key = seed.to_bytes(8, "little", signed=True)
    heap: list[tuple[int, str]] = []  # (-hash, line): the largest kept hash on top
    kept: set[str] = set()
    for path in paths:
        for line_no, raw in LineStream(str(path), MAX_TEXT_LINE_BYTES):
            if raw is None:
                raise InputError(path, line_no, f"line longer than {MAX_TEXT_LINE_BYTES} bytes")
            text, problem = decode_line(raw)
            if text is None:
                raise InputError(path, line_no, problem)
            text = text.strip()
            if not text or text in kept:
                continue
            h = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8, key=key).digest(), "little")
            if len(heap) < limit:
                heapq.heappush(heap, (-h, text))
                kept.add(text)
            elif h < -heap[0][0]:
                kept.discard(heapq.heapreplace(heap, (-h, text))[1])
                kept.add(text)
    return sorted(kept)
