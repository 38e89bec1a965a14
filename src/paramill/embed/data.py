"""Training data streamed from disk, so memory stays flat as the corpus grows.

1. :class:`PairSource` yields the pairs in batches: Parquet read by row group (``s1``/``s2``,
   or a candidate table's ``en_ref``/``candidate`` at rank 1), TSV by lines, or pairs in
   memory (tests, benchmarks).
2. :func:`count_units` counts every unit type's units over one pass; the vocabularies are
   built from the counts (memory: the distinct units, not the pairs).
3. :func:`write_ids` turns each batch into unit ids once and stores them as Parquet
   ``list<int32>`` columns ``<unit>_1``/``<unit>_2``, a file per batch (written by the worker
   that featurised it), row groups of ``chunk_pairs`` pairs. Where every unit is a
   SentencePiece piece, steps 2 and 3 are one pass (:mod:`paramill.embed.rawstore`).
4. :func:`epoch_buffers` reads the id store back for an epoch: the row groups in an order
   seeded by ``seed + epoch``, ``buffer_pairs`` pairs at a time, each buffer's pairs shuffled
   by a generator seeded from the epoch and the buffer's position. The order is a function
   of the seed and the epoch alone, so a run resumed at an epoch reproduces it; with
   ``buffer_pairs`` at least the corpus it is one shuffle of every pair. Training reads the
   next buffer in a thread of its own while the steps of the one before run
   (:func:`prefetched`), across epochs too (:func:`run_buffers`).

Each buffer is a :class:`paramill.embed.buffer.Buffer`: its sentences as flat ids with
offsets (s_i at row i, s'_i at n + i), from which a mega-batch's steps are assembled.
"""

from __future__ import annotations

import functools
import hashlib
import json
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.formats import reading, rows
from paramill.formats import parquet
from paramill.embed.features import Featurizer, Vocab
from paramill.embed.featurise import chunk_counts, ids_part, ordered_map, part_name
from paramill.embed.rawstore import RAW_LAYOUT, RawIds, new_parts, reused_pairs
from paramill.errors import first_line
from paramill.io.lines import BATCH_TEXT_CHARS
from paramill.errors import InputError
from paramill.io.tableread import iter_parquet_batches, open_parquet
from paramill.io.jsonfiles import read_json, write_json
from paramill.io.outputs import sha256_file

if TYPE_CHECKING:  # torch: imported by the training, not by the store's readers
    from paramill.embed.buffer import Buffer


@dataclass
class PairSource:
    """Where the training pairs come from; iterating gives ``(s1s, s2s)`` lists per batch."""

    paths: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] | None = None
    max_pairs: int = 0
    drop_identical: bool = True
    #: pairs with a side longer than this many characters are left out (0: none)
    max_chars: int = 0
    batch_rows: int = 50_000
    #: pairs left out for a side over ``max_chars``, as the last full read counted them
    too_long: int = field(default=0, compare=False, repr=False)
    #: TSV lines with text but not two tab-separated sentences, by file, as the last
    #: full read of each file counted them (they are skipped; blank lines are not counted)
    skipped: Counter = field(default_factory=Counter, compare=False, repr=False)
    #: TSV files whose first line named the columns (skipped): path -> (line number, names)
    headers: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str]], **kw) -> PairSource:
        return cls(pairs=tuple(pairs), **kw)

    @classmethod
    def from_files(cls, paths: list[str | Path], **kw) -> PairSource:
        return cls(paths=tuple(map(str, paths)), **kw)

    def describe(self) -> dict:
        """What identifies the data (checkpoints record it: a resumed run checks it; the id
        store's reuse check): digests of the files' contents, or of the pairs."""
        if self.pairs is not None:
            digest = hashlib.sha256("\n".join(f"{a}\t{b}" for a, b in self.pairs).encode())
            what = {"pairs": digest.hexdigest()}
        else:  # contents, not paths or times: the same data anywhere gives the same record
            what = {"files": [sha256_file(p) for p in self.paths]}
        return {**what, "max_pairs": self.max_pairs, "drop_identical": self.drop_identical,
                "max_chars": self.max_chars}

    def rows(self) -> int | None:
        """Pairs in the source before filtering, at most ``max_pairs`` (Parquet: metadata, or
        a candidate table's rank column), or None where only a full read can tell (TSV)."""
        if self.pairs is not None:
            rows = len(self.pairs)
        elif all(path.endswith(".parquet") for path in self.paths):
            rows = self._parquet_pairs
        else:
            return None
        return min(rows, self.max_pairs) if self.max_pairs else rows

    @functools.cached_property
    def _parquet_pairs(self) -> int:
        """Asked for by the sample and each pass's bar: a candidate table's rank read once."""
        return sum(parquet.pair_rows(path) for path in self.paths)

    def sentences(self, sample: int, seed: int) -> Iterator[str]:
        """Both sentences of a seeded random sample of the pairs, about ``sample`` sentences
        (each pair kept with probability sample / (2 x rows)); every sentence where the
        source is smaller or its size unknown. What paramill trains its SentencePiece model
        on: the sample, never the corpus, reaches the trainer."""
        rows = self.rows()
        share = 1.0 if not rows else min(1.0, sample / (2 * rows))
        for k, frame in enumerate(self._pair_frames()):
            if share < 1.0:  # drawn before the texts become Python strings (most are not kept)
                frame = frame.filter(np.random.default_rng([seed, k]).random(frame.height) < share)
            for a, b in zip(frame["s1"].to_list(), frame["s2"].to_list()):
                yield a
                yield b

    def __iter__(self) -> Iterator[tuple[list[str], list[str]]]:
        for frame in self._pair_frames():
            yield frame["s1"].to_list(), frame["s2"].to_list()

    def arrow_chunks(self) -> Iterator[tuple[pa.Array, pa.Array]]:
        """The batches as Arrow arrays, what the trainer hands its featurising workers: they
        pickle as buffers, where lists of Python strings cost the trainer 3 times as much
        (to_list, then pickle), and the worker makes the strings."""
        for frame in self._pair_frames():
            yield frame["s1"].to_arrow(), frame["s2"].to_arrow()

    def _pair_frames(self) -> Iterator[pl.DataFrame]:
        """The pairs a batch at a time, as frames: empty sides (and identical pairs unless
        kept, and pairs with a side over ``max_chars``, counted in ``too_long``) dropped, at
        most ``max_pairs``."""
        left = self.max_pairs or None
        self.too_long = 0
        for frame in self._frames():
            frame = frame.drop_nulls().filter((pl.col("s1").str.strip_chars() != "")
                                              & (pl.col("s2").str.strip_chars() != ""))
            if self.drop_identical:
                frame = frame.filter(pl.col("s1") != pl.col("s2"))
            if self.max_chars:
                rows = frame.height
                frame = frame.filter((pl.col("s1").str.len_chars() <= self.max_chars)
                                     & (pl.col("s2").str.len_chars() <= self.max_chars))
                self.too_long += rows - frame.height
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            if frame.height:
                yield frame
            if left == 0:
                return

    def _frames(self) -> Iterator[pl.DataFrame]:
        if self.pairs is not None:
            for start in range(0, len(self.pairs), self.batch_rows):
                chunk = self.pairs[start:start + self.batch_rows]
                yield pl.DataFrame({"s1": [a for a, _ in chunk], "s2": [b for _, b in chunk]},
                                   schema={"s1": pl.String, "s2": pl.String})
            return
        for path in self.paths:
            if path.endswith(".parquet"):
                yield from _parquet_frames(path, self.batch_rows)
            else:
                yield from _tsv_frames(path, self.batch_rows, self.skipped, self.headers)


def _parquet_frames(path: str, batch_rows: int) -> Iterator[pl.DataFrame]:
    """The file's pairs as ``s1``/``s2`` text frames; a file without those columns (or
    ``en_ref``/``candidate``), with columns that do not hold text (a rank not numbers), or
    a NUL or a sentence over 64 KiB (as a TSV's line), is an InputError."""
    columns = parquet.pair_columns(path)
    row = 0  # the rows before the batch's, for an error's row number
    for batch in iter_parquet_batches([path], batch_rows, columns, guard=True):
        frame = parquet.refuse_unreadable(path, pl.from_arrow(batch), columns[:2], row)
        row += frame.height
        if "rank" in frame.columns:
            frame = frame.filter(pl.col("rank") == 1)
        if "en_ref" in frame.columns:
            frame = frame.select(s1=pl.col("en_ref"), s2=pl.col("candidate"))
        yield frame.cast({"s1": pl.String, "s2": pl.String})  # a dictionary column is text too


#: first lines of a pair TSV that name its columns, not a pair: paramill's own column names
#: (``s1``/``s2``, a candidate table's ``en_ref``/``candidate``) and STS-style ``sentence1``/
#: ``sentence2`` (compared lowercased, without surrounding space)
HEADERS = {("s1", "s2"), ("en_ref", "candidate"), ("sentence1", "sentence2"),
           ("sentence_1", "sentence_2")}


def _tsv_frames(path: str, batch_rows: int, skipped: Counter, headers: dict) -> Iterator[pl.DataFrame]:
    """TSV read without quoting (a quote character is just text), the first two columns;
    lines without two (an empty side: a blank line, or a tab doubled) are skipped, and those
    with text counted in
    ``skipped[path]`` (from 0 at each read of the file); a first line of column names
    (:data:`HEADERS`) is skipped and kept in ``headers[path]``; a line that is not UTF-8 or
    over 64 KiB is an error naming file and line."""
    s1: list[str] = []
    s2: list[str] = []
    chars = 0  # a batch ends at batch_rows or BATCH_TEXT_CHARS, whichever comes first
    skipped[path] = 0
    first = True
    for item in reading.fields(path):
        if isinstance(item, rows.Bad):
            raise InputError(path, item.line_no, item.detail)
        columns = item[1]
        if first and any(c.strip() for c in columns):
            first = False
            names = [c.strip() for c in columns[:2]]
            if tuple(n.lower() for n in names) in HEADERS:
                headers[path] = (item[0], names)
                continue
        if len(columns) >= 2 and columns[0].strip() and columns[1].strip():
            s1.append(columns[0])
            s2.append(columns[1])
            chars += len(columns[0]) + len(columns[1])
        elif any(c.strip() for c in columns):  # no tab, or a side empty (a tab doubled)
            skipped[path] += 1
        if len(s1) >= batch_rows or chars >= BATCH_TEXT_CHARS:
            yield pl.DataFrame({"s1": s1, "s2": s2}, schema={"s1": pl.String, "s2": pl.String})
            s1, s2, chars = [], [], 0
    if s1:
        yield pl.DataFrame({"s1": s1, "s2": s2}, schema={"s1": pl.String, "s2": pl.String})


def count_units(featurizers: dict[str, Featurizer], source: PairSource,
                workers: int = 1) -> tuple[dict[str, Counter], int]:
    """Unit counts per unit type over every sentence of ``source``, and the pairs seen;
    chunks are featurised by ``workers`` processes when there is more than one."""
    counts: dict[str, Counter] = {unit: Counter() for unit in featurizers}
    by_id: dict[str, np.ndarray] = {}  # SentencePiece units: counts by piece id, summed
    n = 0
    for found, size in ordered_map(chunk_counts, source.arrow_chunks(), workers, context=(featurizers,),
                                   what="embed counting units", total=source.rows()):
        n += size
        for unit, c in found.items():
            if isinstance(c, tuple):
                ids, c = c
                by_id[unit] = by_id[unit] + ids if unit in by_id else ids
            counts[unit].update(c)
    for unit, ids in by_id.items():  # the pieces named once, at the end
        counts[unit].update(featurizers[unit].counter(ids))
    return counts, n


def write_ids(vocabs: dict[str, Vocab], featurizers: dict[str, Featurizer], source: PairSource,
              store: str | Path, chunk_pairs: int = 10_000, key: dict | None = None,
              workers: int = 1) -> int:
    """Write the id store under ``store`` (``parts/part-NNNNNN.parquet``, one file a chunk of
    the source, then ``meta.json``); returns the pairs. An existing store with the same ``key``
    is reused. Chunks are featurised and written by ``workers`` processes (the same bytes
    whatever their number): the trainer only reads the source and hands out chunks."""
    store = Path(store)
    key = json.loads(json.dumps(key))  # as it reads back (tuples become lists)
    meta = {"key": key, "layout": STORE_LAYOUT, "chunk_pairs": chunk_pairs,
            "vocab_sizes": {u: len(v) for u, v in vocabs.items()},
            "vocab_digest": {u: hashlib.sha256("\n".join(v.units).encode()).hexdigest()
                             for u, v in vocabs.items()}}
    if (pairs := reused_pairs(store, meta)) is not None:
        return pairs
    units = sorted(vocabs)
    schema = pa.schema([pa.field(f"{u}_{side}", pa.list_(pa.int32())) for u in units for side in (1, 2)])
    with new_parts(store) as tmp:
        chunks = ((s1, s2, k) for k, (s1, s2) in enumerate(source.arrow_chunks()))
        context = ({u: vocabs[u] for u in units}, featurizers, schema, str(tmp), chunk_pairs)
        rows = [r for r, _ in ordered_map(ids_part, chunks, workers, context=context,
                                          what="embed writing ids", total=source.rows())]
    write_json(store / "meta.json", {**meta, "pairs": sum(rows), "parts": rows})
    return sum(rows)


#: what :func:`write_ids` writes (an id store of another layout is rebuilt, not read)
STORE_LAYOUT = "parts-1"
def _store_groups(store: Path) -> tuple[list[tuple[Path, int, int]], str]:
    """Every row group of the id store in order (part file, its group, rows); its layout."""
    meta = read_json(store / "meta.json")
    if meta.get("layout") not in (STORE_LAYOUT, RAW_LAYOUT):
        raise ValueError(f"{store}: an id store of another layout ({meta.get('layout')}); "
                         "remove it and train again")
    size = meta["chunk_pairs"]
    return [(store / "parts" / part_name(k), g, min(size, rows - g * size))
            for k, rows in enumerate(meta["parts"]) for g in range(-(-rows // size))], meta["layout"]


def _read_groups(path: Path, groups: list[int], columns: list[str]) -> pa.Table:
    """Row groups of an id store's part, their pages' checksums verified; a part that cannot
    be read (a damaged page) is an error naming it and how to rebuild the store."""
    try:
        return open_parquet(path).read_row_groups(groups, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, None, f"an id store's part that cannot be read ({first_line(exc)}); "
                         f"remove {path.parent.parent} and train again to rebuild it") from None


def epoch_buffers(store: str | Path, units: list[str], seed: int, epoch: int,
                  buffer_pairs: int, vocabs: dict[str, Vocab] | None = None,
                  featurizers: dict[str, Featurizer] | None = None, skip: int = 0
                  ) -> Iterator[tuple[Buffer, np.ndarray]]:
    """The buffers of one epoch, each with the shuffled order of its pairs: the store's row
    groups in a seeded order, as many a buffer as make about ``buffer_pairs`` pairs; the
    first ``skip`` left out unread (an epoch resumed after them). A store of SentencePiece's
    own ids (:func:`write_raw_store`) is mapped to the ids of ``vocabs`` as it is read, with
    ``featurizers``' SentencePiece model."""
    from paramill.embed.buffer import Buffer  # torch: only where training reads its store

    groups, layout = _store_groups(Path(store))
    mapped = RawIds(vocabs, featurizers) if layout == RAW_LAYOUT else None
    order = np.random.default_rng([seed, epoch]).permutation(len(groups))
    per_group = max(1, groups[0][2]) if groups else 1
    take = max(1, buffer_pairs // per_group)
    columns = [f"{u}_{side}" for u in units for side in (1, 2)]
    for k, start in enumerate(range(0, len(order), take)):
        if k < skip:  # each buffer's groups and order depend on k alone
            continue
        by_part: dict[Path, list[int]] = {}
        for i in sorted(order[start:start + take].tolist()):
            by_part.setdefault(groups[i][0], []).append(groups[i][1])
        tables = [_read_groups(path, g, columns) for path, g in by_part.items()]
        if mapped is not None:  # each part with its own list of unknown texts
            tables = [mapped(path, t) for path, t in zip(by_part, tables)]
        table = pa.concat_tables(tables)
        buffer = Buffer(table, units)
        yield buffer, np.random.default_rng([seed, epoch, k]).permutation(buffer.n)


def run_buffers(store: str | Path, units: list[str], seed: int, epochs: Iterable[int],
                buffer_pairs: int, vocabs: dict[str, Vocab] | None = None,
                featurizers: dict[str, Featurizer] | None = None, skip: int = 0) -> Iterator:
    """The buffers of ``epochs`` one after another (:func:`epoch_buffers`), each epoch's
    followed by ``None``, the first epoch's first ``skip`` left out (resumed within it): read
    through :func:`prefetched`, the next epoch's first buffer is read while the last of the
    one before trains and its checkpoint is written, not between them (a corpus of one
    buffer otherwise waited for its reading every epoch)."""
    for k, epoch in enumerate(epochs):
        yield from epoch_buffers(store, units, seed, epoch, buffer_pairs, vocabs, featurizers,
                                 skip=skip if k == 0 else 0)
        yield None


class Waited:
    """The seconds a consumer of :func:`prefetched` has waited for its items."""

    def __init__(self):
        self.seconds = 0.0


def prefetched(items: Iterable, waited: Waited | None = None) -> Iterator:
    """``items`` in order, each made in a thread of its own while the consumer uses the one
    before: an epoch's next buffer is read from the id store, mapped and shuffled (about
    0.1-0.2 s a buffer of 100,000 pairs on 2 CPU cores) while the steps of the one before
    run, instead of between them, when on a GPU those steps might take under a second. At
    most one item is made ahead (memory: two buffers, briefly three as one replaces
    another); the order and the items are those of ``items``. An error making an item is
    raised here, where the consumer asks for that item; a consumer that stops early (an
    error, a signal) stops the thread after the item it is making. ``waited``, where given,
    adds up the seconds spent here waiting for an item."""
    done = object()
    ready: queue.Queue = queue.Queue()
    wanted = threading.Semaphore(1)  # items the thread may make before one is taken
    stop = threading.Event()

    def make() -> None:
        try:
            it = iter(items)
            while True:
                wanted.acquire()
                if stop.is_set():
                    return
                item = next(it, done)
                ready.put((item, None))
                if item is done:
                    return
        except BaseException as exc:  # raised in the consumer, with its traceback
            ready.put((done, exc))

    thread = threading.Thread(target=make, name="paramill-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            began = time.perf_counter()
            item, error = ready.get()
            if waited is not None:
                waited.seconds += time.perf_counter() - began
            if error is not None:
                raise error
            if item is done:
                return
            wanted.release()  # the next one is made while this one is used
            yield item
    finally:
        stop.set()
        wanted.release()  # a thread waiting to make the next item sees the stop
        thread.join()

