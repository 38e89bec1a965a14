"""The id store of a model whose units are all SentencePiece pieces, in one pass.

For other units the vocabulary needs every sentence counted before any sentence can be
turned into vocabulary ids: a counting pass, then the id store's (:mod:`paramill.embed.data`).
SentencePiece already gives each piece an id, so here one pass counts the pieces and writes
those ids (:func:`paramill.embed.featurise.raw_part`), and the store is mapped to the
vocabulary's ids when it is read (:class:`RawIds`): each sentence is encoded once, not twice,
and the same ids reach training. Both layouts reuse a store and start a new one through
:func:`reused_pairs` and :func:`new_parts`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paramill.io.arrowcols import int64s
from paramill.embed.features import Featurizer, Vocab
from paramill.embed.featurise import (UNKNOWN_KEY, id_lists, ordered_map, raw_lookup,
                                      raw_part)
from paramill.io.outputs import atomic_output
from paramill.io.jsonfiles import read_json, write_json
from paramill.io.tableread import schema_of

#: what :func:`write_raw_store` writes: SentencePiece's own ids, mapped when read
RAW_LAYOUT = "sp-raw-1"


def one_pass(featurizers: dict[str, Featurizer]) -> bool:
    """Whether a model's units are all SentencePiece pieces: then counting and the id store
    are one pass (:func:`write_raw_store`), not two."""
    return set(featurizers) == {"sp"}


def write_raw_store(f: Featurizer, source: Any, store: str | Path, chunk_pairs: int,
                    key: dict, workers: int = 1) -> tuple[int, Counter | None]:
    """The id store of a model whose units are all SentencePiece pieces, written in the pass
    that counts them (``source``: a :class:`paramill.embed.data.PairSource`, which imports
    this module): the pairs, and the units' counts (as :func:`count_units` gives them;
    None where a store with the same ``key`` and SentencePiece model was already there and
    is reused). The parts hold the SentencePiece model's own ids (:func:`raw_part`), which
    :func:`epoch_buffers` maps to the vocabulary's: the store does not depend on the
    vocabulary, so it is written before there is one, and each sentence is encoded once
    instead of twice."""
    store = Path(store)
    meta = {"key": json.loads(json.dumps(key)), "layout": RAW_LAYOUT, "chunk_pairs": chunk_pairs,
            "sentencepiece": f.model_digest}
    if (pairs := reused_pairs(store, meta)) is not None:
        return pairs, None
    schema = pa.schema([pa.field(f"sp_{side}", pa.list_(pa.int32())) for side in (1, 2)])
    made = not store.exists()
    by_id, unknown, rows = np.zeros(f.piece_size, dtype=np.int64), Counter(), []
    try:  # this pass also reads the input first: a bad line leaves no store behind
        with new_parts(store) as tmp:
            chunks = ((s1, s2, k) for k, (s1, s2) in enumerate(source.arrow_chunks()))
            for (n, counts, texts), _ in ordered_map(raw_part, chunks, workers,
                                                     context=(f, schema, str(tmp), chunk_pairs),
                                                     what="embed counting units, writing ids",
                                                     total=source.rows()):
                rows.append(n)
                by_id += counts
                unknown.update(texts)
    except BaseException:
        if made:
            shutil.rmtree(store, ignore_errors=True)
        raise
    write_json(store / "meta.json", {**meta, "pairs": sum(rows), "parts": rows})
    counted = f.counter(by_id)
    counted.update(unknown)
    return sum(rows), counted


def reused_pairs(store: Path, meta: dict) -> int | None:
    """The pairs of the id store under ``store`` where its ``meta.json`` holds ``meta`` (the
    same key, layout and model) and its parts are there: it is reused. None otherwise (no
    store, another one, or a ``meta.json`` of another shape, edited or another tool's)."""
    if not (store / "meta.json").exists():
        return None
    old = read_json(store / "meta.json")
    if (isinstance(old, dict) and {k: old.get(k) for k in meta} == meta
            and type(old.get("pairs")) is int and (store / "parts").is_dir()):
        return old["pairs"]
    return None


@contextlib.contextmanager
def new_parts(store: Path) -> Iterator[Path]:
    """The temporary folder of a new store's parts, renamed to ``parts`` when the block ends
    well; the old store's files (of this layout or another) are removed first, so its disk is
    free before the new one is written."""
    store.mkdir(parents=True, exist_ok=True)
    for stale in (store / "meta.json", store / "ids.parquet"):
        stale.unlink(missing_ok=True)
    shutil.rmtree(store / "parts", ignore_errors=True)
    with atomic_output(store / "parts") as (tmp,):
        tmp.mkdir()
        yield tmp


@functools.lru_cache(maxsize=4)
def piece_lookup(featurizer: Featurizer, vocab: Vocab) -> np.ndarray:
    """``featurizer.lookup(vocab)``, read-only, once for a model (the same objects: every
    epoch reads the store through it). Made anew, it took ~25 ms an epoch here (a piece at a
    time out of SentencePiece), 220 µs a step of 100 pairs when an epoch is 11,167 pairs."""
    lookup = featurizer.lookup(vocab)
    lookup.flags.writeable = False
    return lookup


class RawIds:
    """Maps the row groups of a store of SentencePiece's own ids to vocabulary ids, a part at a
    time (each part lists the texts the model does not know in its metadata)."""

    def __init__(self, vocabs: dict[str, Vocab] | None, featurizers: dict[str, Featurizer] | None):
        if not vocabs or not featurizers:
            raise ValueError("an id store of SentencePiece ids is read with the model's "
                             "vocabulary and featurizer")
        self.vocab = vocabs["sp"]
        self.pieces = piece_lookup(featurizers["sp"], self.vocab)  # piece id -> vocabulary id
        self.last: tuple[Path | None, np.ndarray | None] = (None, None)

    def __call__(self, path: Path, table: pa.Table) -> pa.Table:
        if self.last[0] != path:  # the part's own texts the model does not know
            meta = schema_of(path).metadata or {}
            self.last = (path, raw_lookup(self.vocab, self.pieces,
                                          json.loads(meta.get(UNKNOWN_KEY, b"[]"))))
        lookup = self.last[1]
        columns = []
        for name in table.column_names:
            ids = table.column(name).combine_chunks()
            columns.append(id_lists(lookup[int64s(ids.flatten())], np.diff(int64s(ids.offsets))))
        return pa.table(dict(zip(table.column_names, columns)))
