"""Reading Parquet, the one path every stage reads a table through: a file opened with its
pages' checksums verified and an error naming it when it is not Parquet, read back in
batches (guarded, for a file paramill did not write), as a whole table checked against a
schema or as a polars frame, its schema read once, its rows counted from its footer."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from paramill.io.arrowcols import empty_table
from paramill.errors import InputError, check_regular_file, first_line


def _has_text(kind: pa.DataType) -> bool:
    """Whether an Arrow type holds strings anywhere (a list of them, a dictionary of them)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return True
    if pa.types.is_dictionary(kind):
        return _has_text(kind.value_type)
    return any(_has_text(kind.field(i).type) for i in range(kind.num_fields))


def open_parquet(path: str | os.PathLike, read_dictionary: Sequence[str] = ()) -> pq.ParquetFile:
    """``path`` opened as Parquet (``pre_buffer`` off; the pages' checksums verified where
    the writer wrote them: :data:`PARQUET_WRITE`), or an
    :class:`~paramill.errors.InputError` naming it: missing, not a regular file, or not Parquet
    (another format, or cut before its footer), where pyarrow's and polars' own errors name
    no file. ``read_dictionary``: columns (a struct's fields by their dotted paths) read as
    Arrow dictionaries where the file keeps them so."""
    check_regular_file(path)
    try:
        return pq.ParquetFile(path, pre_buffer=False, page_checksum_verification=True,
                              read_dictionary=list(read_dictionary) or None)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise InputError(path, None, f"not a readable Parquet file ({first_line(exc)})") from None


def schema_of(path: str | os.PathLike) -> pa.Schema:
    """The Arrow schema of a Parquet file (its footer, through :func:`open_parquet`: a file
    that is not one is an error naming it), read once while the file is unchanged."""
    stat = os.stat(path)
    return _schema(os.fspath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _schema(path: str, size: int, mtime: int) -> pa.Schema:
    return open_parquet(path).schema_arrow


def scan_scratch(paths: str | os.PathLike | Sequence[str | os.PathLike]):
    """A lazy polars scan of Parquet files a job wrote itself, in its own scratch space (the
    dedup's key spill, selection's parts, the lexicon's partitions), for the aggregations
    polars runs out of core. Anything else is read through :func:`iter_parquet_batches`,
    :func:`read_table` or :func:`read_frame`, which verify each page's checksum."""
    import polars as pl

    return pl.scan_parquet(paths)


#: the text a record batch of a file paramill did not write (:func:`iter_parquet_batches`'
#: ``guard``) may decode to, about: a batch holds fewer rows where its values are long
GUARD_BATCH_BYTES = 256 << 20


def _long_dictionaries(pf: pq.ParquetFile, names: Sequence[str], limit: int,
                       entries: _Entries) -> list[str]:
    """Those of the text columns ``names`` (a struct's fields by their dotted paths) whose
    dictionary in a row group of ``pf`` holds an entry longer than ``limit`` bytes: read as
    dictionaries, such an entry is decoded once, not for each row naming it (every other
    column as Arrow reads it best: as a dictionary, a column whose pages left theirs took 2.1
    times as long to read). Only a group whose column is over ``limit`` uncompressed (an
    entry is no longer than its dictionary) is looked into."""
    meta, found = pf.metadata, []
    for g in range(meta.num_row_groups):
        for j in range(meta.num_columns):
            chunk = meta.row_group(g).column(j)
            name = chunk.path_in_schema
            if (name in names and name not in found and chunk.has_dictionary_page
                    and chunk.physical_type == "BYTE_ARRAY" and chunk.total_uncompressed_size > limit
                    and entries.longest(g, name) > limit):
                found.append(name)
    return found


class _Entries:
    """The longest entry of a text column's dictionary in a row group, read with the group's
    first row, each column's file opened once (a file of 20,000 row groups opened anew for
    each took minutes: its footer parsed every time)."""

    def __init__(self, path: str | os.PathLike):
        self.path, self.files = path, {}
        self.known: dict[tuple[int, str], int] = {}  # (group, column): its longest entry

    def longest(self, group: int, name: str) -> int:
        """Bytes of the longest value in the dictionary of column ``name`` (a dotted path) in
        row group ``group`` (0 where it cannot be told: a list's items), looked into once."""
        if (group, name) not in self.known:
            self.known[group, name] = self._read(group, name)
        return self.known[group, name]

    def _read(self, group: int, name: str) -> int:
        import pyarrow.compute as pc

        try:
            if name not in self.files:
                self.files[name] = pq.ParquetFile(self.path, pre_buffer=False, read_dictionary=[name],
                                                  page_checksum_verification=True)
            probe = self.files[name]
            top, *inner = [name] if name in probe.schema_arrow.names else name.split(".")
            batch = next(probe.iter_batches(batch_size=1, row_groups=[group], columns=[top]), None)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(self.path, None, f"Parquet data cannot be read (row group {group + 1}, "
                                              f"column {name}: {first_line(exc)})") from None
        if batch is None or batch.num_columns == 0:
            return 0
        array = batch.column(0)
        for field in inner:
            if not pa.types.is_struct(array.type):
                return 0
            array = pc.struct_field(array, field)
        if not pa.types.is_dictionary(array.type) or len(array.dictionary) == 0:
            return 0
        return int(pc.max(pc.binary_length(array.dictionary)).as_py() or 0)


def _guarded_rows(pf: pq.ParquetFile, group: int, tops: Sequence[str], batch_size: int,
                  dictionaries: Sequence[str], entries: _Entries) -> int:
    """The rows a batch of row group ``group`` may hold for its text to decode to about
    :data:`GUARD_BATCH_BYTES` or less, each text column read to its share. A value the
    pages hold decodes from its page's bytes (a value never spans pages): a column over the
    bound uncompressed, or written
    ``DELTA_BYTE_ARRAY`` (each value a prefix of the last one's and its own end, so a page
    of 10 MB decoded to 10 MB a row: 1.7 GB from a 485-byte file), is bounded by its pages'
    headers (:func:`_page_rows`; a share of the column's size assumed values spread evenly,
    where a file may hold them all in its first rows). A dictionary's value is written once
    and named by each row that holds it in a few bits: a 786-byte file held one of 10 MB for
    1,000 rows, 10 GB decoded (the job asked for 11 GB and failed), so a batch holds no more
    rows than the longest entry fits in the bound (looked for only where the column's
    uncompressed size, which bounds the entry, could overrun it; ``dictionaries``: columns
    read as dictionaries, decoded only where used)."""
    meta = pf.metadata.row_group(group)
    rows = max(1, batch_size)
    texts = [j for j in range(meta.num_columns) if meta.column(j).physical_type == "BYTE_ARRAY"
             and (meta.column(j).path_in_schema in tops or meta.column(j).path_in_schema.split(".")[0] in tops)]
    bound = GUARD_BATCH_BYTES // max(1, len(texts))  # each text column its share of the batch's
    for j in texts:
        chunk = meta.column(j)
        name, size = chunk.path_in_schema, chunk.total_uncompressed_size
        if size > bound or ("DELTA_BYTE_ARRAY" in chunk.encodings and size * rows > bound):
            rows = _page_rows(pf, entries.path, group, j, rows, bound)
        if chunk.has_dictionary_page and name not in dictionaries and size * rows > bound:
            longest = entries.longest(group, name)
            if longest * rows > bound:
                rows = max(1, bound // longest)
    return rows


def _page_rows(pf: pq.ParquetFile, path: str | os.PathLike, group: int, column: int, rows: int,
               bound: int) -> int:
    """The most rows, ``rows`` at most, that a batch of column ``column`` in row group
    ``group`` may hold for the pages it touches to decode to ``bound`` bytes or less: a page
    to its size, one written ``DELTA_BYTE_ARRAY`` to its size a row it holds
    (:func:`_worst`); one row where a page alone is over the bound (the group then reads a
    row a batch: a page of 1 GB, which Arrow decompresses whole, may be one value). A column
    inside a list, whose pages count values, not rows, reads the share of the group's rows
    that the bound is of what its pages decode to at most. A page header that cannot be
    read is an :class:`~paramill.errors.InputError` naming the file, group and column."""
    from paramill.io.pagescan import PageError, data_pages

    meta = pf.metadata.row_group(group)
    chunk = meta.column(column)
    start = min((o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o), default=None)
    try:
        if start is None or start < 0:
            raise PageError(f"the footer gives the column's pages no place ({start})")
        pages = data_pages(path, start, chunk.total_compressed_size)
    except (OSError, PageError) as exc:
        raise InputError(path, None, f"Parquet page header cannot be read (row group {group + 1}, "
                                     f"column {chunk.path_in_schema}: {first_line(exc)})") from None
    if not pages:
        return rows
    if pf.schema.column(column).max_repetition_level > 0:
        decoded = sum(p.size * (p.rows if p.prefixed else 1) for p in pages)
        return min(rows, max(1, bound * meta.num_rows // decoded)) if decoded > bound else rows
    worst = _worst(pages)
    if worst(rows) <= bound:
        return rows
    low, high = 1, rows - 1  # worst grows with the rows: the most that fit, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if worst(middle) <= bound else (low, middle - 1)
    return low


def _worst(pages: Sequence) -> Callable[[int], int]:
    """The most bytes any ``rows`` consecutive rows decode from, by the pages they touch,
    as a function of ``rows``: a window that begins in the last row of a page touches every
    page that begins within ``rows - 1`` rows after it, and no window touches more."""
    import numpy as np

    counts = np.array([p.rows for p in pages], np.int64)
    sizes = np.array([p.size for p in pages], np.int64)
    prefixed = np.array([p.prefixed for p in pages], bool)
    starts = np.cumsum(counts) - counts
    lasts = starts + np.maximum(counts, 1) - 1

    def worst(rows: int) -> int:
        total = np.concatenate(([0], np.cumsum(np.where(prefixed, sizes * np.minimum(counts, rows), sizes))))
        ends = np.searchsorted(starts, lasts + rows - 1, side="right")
        return int((total[ends] - total[:len(pages)]).max())
    return worst


def _runs(pf: pq.ParquetFile, tops: Sequence[str], batch_size: int, dictionaries: Sequence[str],
          entries: _Entries) -> Iterator[tuple[int, list[int]]]:
    """``(batch rows, row groups)``: each run of consecutive row groups read in batches of the
    same size (:func:`_guarded_rows`), one read for the run."""
    run, size = [], 0
    for g in range(pf.metadata.num_row_groups):
        rows = _guarded_rows(pf, g, tops, batch_size, dictionaries, entries)
        if run and rows != size:
            yield size, run
            run = []
        run.append(g)
        size = rows
    if run:
        yield size, run


def iter_parquet_batches(paths: Sequence[str | os.PathLike], batch_size: int = 65536,
                         columns: Sequence[str] | None = None, guard: bool = False,
                         decode_once: tuple[Sequence[str], int] | None = None) -> Iterator[pa.RecordBatch]:
    """Yield record batches from Parquet files in order, never loading a whole file. A file
    that cannot be opened, whose data cannot be decoded (a corrupt page), or whose text is
    not UTF-8 (Parquet does not check it; polars panicked on it, pyarrow's ``to_pylist``
    raised an error naming no file) is an :class:`~paramill.errors.InputError` naming it and
    the rows read before.

    ``pre_buffer`` is off: with it Arrow prefetches every row group of the file at once,
    which made memory grow with the file's size. ``guard``, for a file paramill did not
    write: in batches whose text decodes to about :data:`GUARD_BATCH_BYTES` at most
    (:func:`_guarded_rows`, a run of row groups of the same bound read at once); with
    ``decode_once`` ``(columns, limit)``, those of the text columns (dotted paths inside a
    struct) whose dictionary holds an entry over ``limit`` bytes are read as Arrow
    dictionaries, each entry decoded once (:func:`_long_dictionaries`).
    """
    for path in paths:
        pf = open_parquet(path)
        missing = [c for c in columns or () if c not in pf.schema_arrow.names]
        if missing:  # pyarrow leaves out a column it does not find, without a word
            raise InputError(path, None, f"no column {', '.join(missing)} (it has "
                                         f"{', '.join(pf.schema_arrow.names)[:200]})")
        rows = 0
        tops = list(columns) if columns else pf.schema_arrow.names
        coded: list[str] = []
        entries = _Entries(path)  # each group's dictionaries looked into once, for both uses
        if guard and decode_once:
            coded = _long_dictionaries(pf, *decode_once, entries)
            if coded:  # a file made to hold such an entry: opened again to read them so
                pf = open_parquet(path, coded)
        runs = _runs(pf, tops, batch_size, coded, entries) if guard else [(batch_size, None)]
        try:
            for batch in (b for size, groups in runs for b in pf.iter_batches(
                    batch_size=size, row_groups=groups, columns=list(columns) if columns else None)):
                for name, column in zip(batch.schema.names, batch.columns):
                    if _has_text(column.type):
                        try:
                            column.validate(full=True)  # UTF-8 and offsets: 2.7 GB/s measured
                        except pa.ArrowException as exc:
                            raise InputError(path, None, f"column {name}, rows {rows + 1}-"
                                             f"{rows + batch.num_rows}: {first_line(exc)}") from None
                rows += batch.num_rows
                yield batch
        except (OSError, pa.ArrowException) as exc:
            raise InputError(path, None, f"Parquet data cannot be read after row {rows} "
                                         f"({first_line(exc)})") from None


def _same_kind(found: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a column of type ``found`` holds what ``expected`` does: text in any of
    Arrow's string layouts (a dictionary of strings too), lists of the same kind, else the
    same type."""
    if _has_text(expected) and not (pa.types.is_list(expected) or pa.types.is_large_list(expected)):
        return (pa.types.is_string(found) or pa.types.is_large_string(found)
                or pa.types.is_dictionary(found) and _same_kind(found.value_type, expected))
    if pa.types.is_list(expected) or pa.types.is_large_list(expected):
        return ((pa.types.is_list(found) or pa.types.is_large_list(found))
                and _same_kind(found.value_type, expected.value_type))
    return found == expected


def check_columns(path: str | os.PathLike, schema: pa.Schema, what: str,
                  names: Sequence[str] | None = None) -> pa.Schema:
    """The Parquet file's schema, read from its footer, once each column of ``schema`` (or
    of ``names`` among them) is found in it and of the same kind (numbers where text is
    meant are not); otherwise an :class:`~paramill.errors.InputError` naming the file and
    the column (polars' own error named neither)."""
    found = open_parquet(path).schema_arrow
    for field in schema:
        if names is not None and field.name not in names:
            continue
        if field.name not in found.names:
            raise InputError(path, None, f"not {what}: no column {field.name} (it has "
                                         f"{', '.join(found.names)[:200]})")
        if not _same_kind(found.field(field.name).type, field.type):
            raise InputError(path, None, f"not {what}: column {field.name} holds "
                                         f"{found.field(field.name).type}, not {field.type}")
    return found


#: the tables a verb's argument may be declared to hold (``arg(..., table=KIND)``): the module
#: and schema that define them, the columns every reader of them needs, and what to call them
TABLE_KINDS = {
    "candidates": ("paramill.nmt.tables", "CANDIDATES",
                   ("pair_id", "candidate_id", "en_ref", "candidate", "method", "rank"),
                   "a candidate table (`paramill nmt translate` or `paramill pairs ingest`)"),
    "bitext": ("paramill.bitext.tables", "BITEXT", ("pair_id", "cs", "en"),
               "a bitext shard (`paramill bitext clean`)"),
    "heldout": ("paramill.filters.heldout", "HELDOUT", None,
                "a held-out table (`paramill filters heldout`)"),
    "tokens": ("paramill.filters.token_table", "TOKENS", None,
               "a token table (`paramill filters tokens`)"),
}


def check_kind(paths: Sequence[str | os.PathLike], kind: str) -> None:
    """Each of ``paths`` holds the columns of a :data:`TABLE_KINDS` table (footers only)."""
    import importlib

    module, name, names, what = TABLE_KINDS[kind]
    schema = getattr(importlib.import_module(module), name)
    for path in paths:
        check_columns(path, schema, what, names)


def read_table(path: str | os.PathLike, schema: pa.Schema, what: str,
               added: Sequence[str] = ()) -> pa.Table:
    """The columns of ``schema`` from the Parquet file ``path``, cast to it; a file without
    one of them, or with one of another kind, is an :class:`~paramill.errors.InputError`
    naming the file and the column (:func:`check_columns`), as are the faults
    :func:`iter_parquet_batches` finds. ``added``: columns added to the contract after
    tables were written without them; a file that lacks one reads it as nulls."""
    lacks = set(added) - set(open_parquet(path).schema_arrow.names) if added else set()
    present = [name for name in schema.names if name not in lacks]
    found = check_columns(path, schema, what, present)
    batches = list(iter_parquet_batches([path], columns=present))
    table = pa.Table.from_batches(batches) if batches else empty_table(found).select(present)
    for name in (n for n in schema.names if n in lacks):
        table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
    return table.select(schema.names).cast(pa.schema([pa.field(f.name, f.type) for f in schema]))


def read_frame(path: str | os.PathLike, columns: Sequence[str] | None = None):
    """The Parquet file ``path`` (its ``columns``, or all) as a polars frame, read as
    :func:`iter_parquet_batches` reads: the pages' checksums verified, the text checked, a
    fault an :class:`~paramill.errors.InputError` naming the file (``pl.read_parquet``
    verifies no checksum: a flipped bit in a page reads as other text). For a file a step
    reads whole anyway: memory holds the frame, as it did."""
    import polars as pl

    batches = list(iter_parquet_batches([path], columns=columns))
    table = (pa.Table.from_batches(batches) if batches
             else empty_table(open_parquet(path).schema_arrow))
    return pl.from_arrow(table.select(list(columns)) if columns else table, rechunk=False)


def parquet_rows(paths: Sequence[str | os.PathLike]) -> int:
    """Row count from Parquet footers (no data read)."""
    return sum(open_parquet(p).metadata.num_rows for p in paths)
