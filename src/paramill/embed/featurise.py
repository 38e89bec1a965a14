"""Featurising chunks of pairs, here or in worker processes: unit counts and id columns.

Kept apart from :mod:`paramill.embed.data` so that a spawned worker imports only this
module, numpy, pyarrow and the featurizers (not torch, nor pandas: :func:`id_lists`): a
pool starts in well under a second, which a training pays twice (counting, then the id
store), or once where its units are all SentencePiece pieces (:func:`raw_part`, both in one
pass).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paramill.run import pools
from paramill.io.arrowcols import column
from paramill.embed.features import Featurizer, Vocab
from paramill.io.tablewrite import PARQUET_WRITE


def texts(chunk: tuple) -> tuple[list[str], list[str]]:
    """A chunk's two sides (lists of strings or Arrow string arrays, as
    :meth:`PairSource.arrow_chunks` gives them) as lists of strings, made here, in the worker."""
    return tuple(x.to_pylist() if isinstance(x, (pa.Array, pa.ChunkedArray)) else x
                 for x in chunk[:2])


def chunk_counts(featurizers: dict[str, Featurizer], chunk: tuple[list[str] | pa.Array, ...]
                  ) -> dict[str, Counter | tuple[np.ndarray, Counter]]:
    """Unit counts of a chunk's sentences: a Counter of units, or for SentencePiece units an
    array of counts by piece id (summed by the caller, turned into pieces once at the end:
    :meth:`Featurizer.counter`) with a Counter of the text the model does not know."""
    s1, s2 = texts(chunk)
    return {unit: f.piece_counts(s1 + s2) if unit == "sp" else
            Counter(u for sentence in s1 + s2 for u in f(sentence))
            for unit, f in featurizers.items()}


def ordered_map(fn, chunks: Iterable[tuple], workers: int, window: int | None = None,
                context: tuple = (), what: str | None = None, total: int | None = None
                ) -> Iterator[tuple[Any, int]]:
    """:func:`_ordered_map` with a progress bar named ``what`` (pairs done of ``total``, where
    the source knows it): a pass over tens of millions of pairs takes minutes."""
    if what is None:
        yield from _ordered_map(fn, chunks, workers, window, context)
        return
    from paramill.run.progress import progress  # the trainer's; a worker never imports tqdm

    bar = progress(what, unit="pairs", total=total)
    try:
        for result, size in _ordered_map(fn, chunks, workers, window, context):
            bar.update(size)
            yield result, size
    finally:
        bar.close()


def _ordered_map(fn, chunks: Iterable[tuple], workers: int, window: int | None = None,
                 context: tuple = ()) -> Iterator[tuple[Any, int]]:
    """:func:`paramill.pools.ordered_map` over chunks of pairs (each chunk's size its pairs).
    ``context`` (the featurizers, vocabularies) goes to each worker once, when it starts: sent
    with each chunk, a worker would rebuild the SentencePiece model and the vocabularies per
    chunk and keep each copy's id table (:data:`_LOOKUPS` is keyed by the objects), growing
    with the corpus."""
    return pools.ordered_map(fn, chunks, workers, window=window, context=context,
                             doing="the training pairs were featurised",
                             holds="its chunks of pairs and a copy of the featurizers and vocabularies")


#: SentencePiece id -> vocabulary id tables, one per (vocabulary, featurizer) a process uses
_LOOKUPS: dict[tuple[Vocab, Featurizer], np.ndarray] = {}


def _sp_ids(vocab: Vocab, f: Featurizer, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Vocabulary ids and lengths of SentencePiece units, a sentence without pieces as one
    :data:`UNK` (as :meth:`Vocab.ids`): the piece ids of the whole chunk mapped by one table."""
    if (vocab, f) not in _LOOKUPS:  # keyed by the objects themselves (identity)
        if len(_LOOKUPS) >= 8:  # a process that featurises for many models in turn
            _LOOKUPS.clear()
        _LOOKUPS[vocab, f] = f.lookup(vocab)
    flat, lengths = f.piece_ids(sentences)
    ids = _LOOKUPS[vocab, f][flat]
    hits, surfaces = f.unknown(sentences, flat, lengths)  # text the model does not know: the
    if len(hits):  # vocabulary may hold it as a unit of its own (it was counted as one)
        ids[hits] = [vocab.index.get(u, 1) for u in surfaces]
    return _one_id_for_empty(ids, lengths, 1)


def _one_id_for_empty(ids: np.ndarray, lengths: np.ndarray, value: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """A sentence without units gets one id ``value`` (the unknown id), inserted where it
    starts."""
    empty = np.flatnonzero(lengths == 0)
    if len(empty):
        starts = np.cumsum(lengths)[empty] - lengths[empty]
        ids = np.insert(ids, starts, value).astype(np.int32)
        lengths = np.maximum(lengths, 1)
    return ids, lengths


def _ids_column(vocab: Vocab, f: Featurizer, sentences: list[str]) -> pa.Array:
    if f.unit == "sp":
        ids, lengths = _sp_ids(vocab, f, sentences)
    else:
        index, unk = vocab.index, 1
        lengths = np.empty(len(sentences), dtype=np.int64)
        found: list[int] = []
        for i, sentence in enumerate(sentences):
            units = [index.get(u, unk) for u in f(sentence)] or [unk]
            lengths[i] = len(units)
            found.extend(units)
        ids = np.asarray(found, dtype=np.int32)
    return id_lists(ids, lengths)


def id_lists(ids: np.ndarray, lengths: np.ndarray) -> pa.ListArray:
    """Flat ids and each sentence's length as an Arrow list column (int32 ids), the numpy
    memory taken as it is. Not ``pa.array``: pyarrow converts a numpy array through its pandas
    shim, which imports pandas where it is installed (it is: datasets and the SLURM plugin
    need it) -- about 50 MB more in each featurising worker (measured: 51 MB RSS to
    ``pa.array`` of ten ints; README, Featurising 10M pairs)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(column(offsets, pa.int32()), column(ids, pa.int32()))


def ids_table(vocabs: dict[str, Vocab], featurizers: dict[str, Featurizer], schema: pa.Schema,
              chunk: tuple[list[str], list[str]]) -> pa.Table:
    s1, s2 = chunk
    return pa.table({f"{u}_{side}": _ids_column(vocabs[u], featurizers[u], sents)
                     for u in sorted(vocabs) for side, sents in ((1, s1), (2, s2))}, schema=schema)


def part_name(index: int) -> str:
    """The file of the id store's ``index``-th chunk (they sort in chunk order)."""
    return f"part-{index:06d}.parquet"


def ids_part(vocabs: dict[str, Vocab], featurizers: dict[str, Featurizer], schema: pa.Schema,
             directory: str, chunk_pairs: int, chunk: tuple) -> int:
    """Write chunk ``(s1s, s2s, index)``'s id table to ``directory``/:func:`part_name`, in row
    groups of ``chunk_pairs`` pairs (the last one the rest); returns its rows. Run in the
    featurising worker, so the Parquet encoding (most of the id store's cost) is spread over
    the job's cores and the table never travels back to the trainer."""
    return _write_part(ids_table(vocabs, featurizers, schema, texts(chunk)),
                       Path(directory) / part_name(chunk[2]), chunk_pairs)


def _write_part(table: pa.Table, path: Path, chunk_pairs: int) -> int:
    with pq.ParquetWriter(path, table.schema, **PARQUET_WRITE) as writer:
        for start in range(0, table.num_rows, chunk_pairs):
            writer.write_table(table.slice(start, chunk_pairs))
    return table.num_rows


# -- SentencePiece units in one pass: the model's own ids, counted as they are stored -------

#: the part file's metadata key of the texts the SentencePiece model does not know
UNKNOWN_KEY = b"paramill.unknown"


def raw_part(f: Featurizer, schema: pa.Schema, directory: str, chunk_pairs: int,
             chunk: tuple) -> tuple[int, np.ndarray, Counter]:
    """One pass over chunk ``(s1s, s2s, index)`` for a model whose units are all SentencePiece
    pieces: write its ids as the SentencePiece model gives them (not yet vocabulary ids, which
    need every chunk counted first) and return its rows with the counts
    :func:`chunk_counts` gives. In the part, id ``size`` (the model's piece count) stands for
    the vocabulary's unknown id (a sentence without pieces, as :meth:`Vocab.ids`), and
    ``size + 1 + k`` for the ``k``-th distinct text the model does not know, listed in the
    file's metadata (:data:`UNKNOWN_KEY`); :func:`raw_lookup` turns them into vocabulary ids
    when the store is read."""
    size = f.piece_size
    known: dict[str, int] = {}
    counts, unknown = np.zeros(size, dtype=np.int64), Counter()
    columns = {}
    for side, sentences in zip((1, 2), texts(chunk)):
        flat, lengths = f.piece_ids(sentences)
        counts += np.bincount(flat, minlength=size)
        hits, surfaces = f.unknown(sentences, flat, lengths)
        unknown.update(surfaces)
        if len(hits):
            flat[hits] = [size + 1 + known.setdefault(u, len(known)) for u in surfaces]
        columns[f"sp_{side}"] = id_lists(*_one_id_for_empty(flat, lengths, size))
    counts[f.unk_id] = 0
    table = pa.table(columns, schema=schema.with_metadata({UNKNOWN_KEY: json.dumps(list(known))}))
    return _write_part(table, Path(directory) / part_name(chunk[2]), chunk_pairs), counts, unknown


def raw_lookup(vocab: Vocab, pieces: np.ndarray, unknown: list[str]) -> np.ndarray:
    """The ids of a part :func:`raw_part` wrote -> ``vocab`` ids (the same ids :func:`ids_part`
    would have written), from ``pieces`` (:meth:`Featurizer.lookup`) and the part's list of
    texts the SentencePiece model does not know."""
    extra = np.array([1, *(vocab.index.get(u, 1) for u in unknown)], dtype=np.int64)
    return np.concatenate([pieces.astype(np.int64), extra])
