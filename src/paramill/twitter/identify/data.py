"""Labelled pairs for the identifier, read by their layouts in :mod:`paramill.formats` (any
layout that can be read as ``labelled``: the Twitter URL corpus raw or tokenised, PIT-2015
with its crowd votes, expert scores or a separate label file), and the unlabelled sentences a
student is distilled on; a bad line is an :class:`~paramill.io.InputError` naming file and
line."""

from __future__ import annotations

from pathlib import Path

from paramill.formats import reading, registry


def read_labelled(path: str | Path, fmt: str, labels: str | Path | None = None,
                  fields: dict[str, str] | None = None
                  ) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) from a labelled file/directory in layout ``fmt`` (``labels``:
    a separate label file, for a layout that takes one: PIT-2015 test's; ``fields``: the
    columns a csv, json, jsonl or parquet set reads)."""
    read = registry.reader("labelled", fmt)
    if fields:
        return read(str(path), MAX_TEXT_LINE_BYTES, fields=fields)
    if labels is None:
        return read(str(path), MAX_TEXT_LINE_BYTES)
    if not getattr(registry.layout(fmt), "LABEL_FILE", False):
        raise ValueError(f"a separate label file is read for format pit2015 only, not {fmt!r}")
    return read(str(path), MAX_TEXT_LINE_BYTES, labels=str(labels))


MAX_TEXT_LINE_BYTES = 65536


def unlabelled_sentences(paths, limit: int, seed: int) -> list[str]:
    """The distinct non-empty lines of ``paths`` (whitespace-trimmed) whose seeded 64-bit
    hash is among the ``limit`` smallest: a uniform sample that does not depend on the
    files' order or on repeated lines, held in memory ``limit`` lines at a time. A line that
    is not UTF-8 or longer than 64 KiB is an :class:`InputError` naming file and line."""
    import hashlib
    import heapq

    key = seed.to_bytes(8, "little", signed=True)
    heap: list[tuple[int, str]] = []  # (-hash, line): the largest kept hash on top
    kept: set[str] = set()
    for path in paths:
        for _, text in reading.strict_lines(path, MAX_TEXT_LINE_BYTES):
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
