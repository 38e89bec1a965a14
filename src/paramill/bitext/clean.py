"""``paramill clean``: ParaBank 2 §3.1 cleaning of one ingested corpus, with exact dedup.

Rules, in the order a row is tested (the first that fails is its ``reason``):

``empty_cs``/``empty_en``  a side is empty after normalisation
``identical``              both sides equal (untranslated text)
``not_latin1_en``          English side not encodable in latin-1
``not_latin2_cs``          Czech side not encodable in latin-2
``not_czech``              the language identifier finds the Czech side Czech with
                           probability below ``min_czech`` (fastText lid.176)
``too_short``/``too_long`` a side has fewer than ``min_tokens`` / more than ``max_tokens``
``length_ratio``           longer side / shorter side above ``max_length_ratio`` (tokens)
``duplicate``              the normalised pair was already kept (earlier in this corpus,
                           or in an earlier corpus: ``detail`` says which)

Deduplication runs in bounded memory: 64-bit keys (BLAKE2b of the normalised pair) are
spilled to hash buckets on disk, each bucket is deduplicated on its own against the
sorted key files of earlier corpora, and a one-byte-per-row mark decides the final pass.
The kept keys are written sorted so the next corpus can read just its key range.

Rows rejected by a rule keep their raw text in the rejected table; duplicates show the
normalised text that matched.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.text import cleaning as rules
from paramill import text
from paramill.bitext.ingest import REJECTED_NAME, STATS_NAME
from paramill.bitext.tables import BITEXT, REJECTED
from paramill.text.dedup import (
    DUP_HERE,
    KEEP,
    KEYS,
    bucket_bits,
    check_key_files,
    dedup_buckets,
    pair_keys,
    spill,
)
from paramill.run.job import output_job
from paramill.errors import InputError
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.io.tablewrite import ShardWriter, TableWriter
from paramill.io.outputs import scratch_dir
from paramill.io.jsonfiles import write_json
from paramill.run.plan import rejection_line
from paramill.run.pools import ordered_map
from paramill.run.progress import note, progress
from paramill.provenance import Run
from paramill.io.jsonfiles import COUNT, COUNTS, read_json_as
from paramill.config.typed import Settings, setting



@dataclass(frozen=True)
class CleanSettings(Settings):
    normalize_punctuation: bool = setting(
        True, "Map Unicode punctuation (quotes, dashes, ellipsis, special spaces) to ASCII.")
    require_latin: bool = setting(
        True, "Keep only pairs whose English side encodes as latin-1 and Czech side as latin-2.")
    drop_identical: bool = setting(
        True, "Drop pairs whose two sides are identical after normalisation (untranslated text).")
    min_czech: float = setting(
        0.1, "Reject a pair whose Czech side the language identifier (fastText lid.176) finds "
        "Czech with probability below this (not_czech): an English or other-language line in "
        "the Czech column. 0: off.", minimum=0, maximum=1)
    min_tokens: int = setting(1, "Minimum tokens on each side.", minimum=1)
    max_tokens: int = setting(100, "Maximum tokens on each side.", minimum=1)
    max_length_ratio: float = setting(
        3.0, "Maximum ratio of the longer side's token count to the shorter side's.",
        exclusiveMinimum=1)
    dedup: bool = setting(
        True,
        "Exact deduplication of normalised pairs across all corpora (first occurrence kept).")
    bucket_rows: int = setting(
        2_000_000, "Rows per hash bucket in deduplication; bounds memory, no effect on results.",
        minimum=1000, launch=True)



#: the normalised sides' token counts, which the rules read and the candidates keep
TOKEN_COUNTS = {"cs": "cs_tokens", "en": "en_tokens"}


def rule_expressions(settings: CleanSettings) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr]:
    """(normalising column expressions, the token counts' (:data:`TOKEN_COUNTS`), the ``reason``
    expression; null = keep), each for a ``with_columns`` of its own, in that order."""
    normal = rules.normalised(("cs", "en"), settings.normalize_punctuation)
    cs, en = pl.col("cs"), pl.col("en")
    checks: list[rules.Check] = [rules.empty(cs, "empty_cs"), rules.empty(en, "empty_en")]
    if settings.drop_identical:
        checks.append((cs == en, "identical"))
    if settings.require_latin:
        checks.append((en.str.contains(text.NOT_LATIN1_PATTERN), "not_latin1_en"))
        checks.append((cs.str.contains(text.NOT_LATIN2_PATTERN), "not_latin2_cs"))
    if settings.min_czech > 0:
        checks.append(rules.not_in_language("cs", "cs", settings.min_czech, "not_czech"))
    bounds, shorter, longer = rules.token_bounds(*TOKEN_COUNTS.values(), settings.min_tokens,
                                                 settings.max_tokens)
    checks += [*bounds, (longer.cast(pl.Float64) > shorter.cast(pl.Float64)
                         * settings.max_length_ratio, "length_ratio")]
    return normal, rules.token_counts(TOKEN_COUNTS), rules.first_reason(checks)


def apply_rules(frame: pl.DataFrame, settings: CleanSettings) -> pl.DataFrame:
    """Normalise ``cs``/``en``, count their tokens (``cs_tokens``/``en_tokens``) and add
    ``reason`` (null where the row passes every rule).

    The original text is kept in ``cs_raw``/``en_raw`` for the rejected table.
    """
    normal, counts, reason = rule_expressions(settings)
    return (frame.with_columns(pl.col("cs").alias("cs_raw"), pl.col("en").alias("en_raw"))
            .with_columns(normal).with_columns(counts).with_columns(reason))


@dataclass
class _Tally:
    """What became of the rows: rejections by reason, and per input shard (with the kept)."""

    reasons: Counter
    by_shard: dict[str, Counter]
    sums: dict[str, int] = field(default_factory=lambda: {"cs_tokens": 0, "en_tokens": 0})


def _rule_pass(corpus: str, in_shards: list[Path], settings: CleanSettings, batch_rows: int,
               rejected: TableWriter, candidates: TableWriter, bits: int, bucket_fhs: list,
               tally: _Tally, total: int, threads: int = 1) -> tuple[int, list[int]]:
    """Apply the rules shard by shard: rejected rows written, survivors spilled in order
    with their keys. Returns the survivors' count and each ingest shard's first position.
    With ``threads`` > 1 the rules run on that many worker processes, a batch each
    (the language identifier holds the GIL), the results taken in order."""
    position = 0
    bounds: list[int] = []  # first candidate position of each ingest shard
    for shard in in_shards:
        tally.by_shard.setdefault(shard.name, Counter())
    batches = ((i, batch) for i, shard in enumerate(in_shards)
               for batch in iter_parquet_batches([shard], batch_rows))
    bar = progress(f"clean {corpus}", total=total)
    # the settings travel as a dict: a worker imports this module (and polars) only once it
    # has set its one thread
    for (index, table), rows in ordered_map(_rules_of_batch, batches, threads,
                                            context=(asdict(settings),),
                                            size=lambda chunk: chunk[1].num_rows,
                                            doing=f"cleaning {corpus}",
                                            holds=f"a batch of {batch_rows:,} rows"):
        while len(bounds) <= index:  # this shard's first row (and empty shards' before it)
            bounds.append(position)
        counts = tally.by_shard[in_shards[index].name]
        frame = pl.from_arrow(table)
        bad = frame.filter(pl.col("reason").is_not_null())
        if bad.height:
            for reason, n in bad.group_by("reason").len().iter_rows():
                tally.reasons[reason] += n
                counts[reason] += n
            rejected.write(bad.with_columns(cs=pl.col("cs_raw"), en=pl.col("en_raw"),
                                            detail=pl.lit(None, pl.String)).to_arrow())
        good = frame.filter(pl.col("reason").is_null())
        if good.height:
            candidates.write(good.to_arrow())
            if settings.dedup:
                _spill_keys(good, position, bits, bucket_fhs)
            position += good.height
        bar.update(rows)
    bounds += [position] * (len(in_shards) - len(bounds))
    bar.close()
    return position, bounds


def _rules_of_batch(settings: dict[str, Any], chunk: tuple[int, pa.RecordBatch]
                    ) -> tuple[int, pa.Table]:
    """(shard index, the batch with the rules applied: :func:`apply_rules`), in a worker or here."""
    index, batch = chunk
    return index, apply_rules(pl.from_arrow(batch), CleanSettings.from_dict(settings)).to_arrow()


def _keep_pass(candidates: Path, marks: np.ndarray, bounds: list[int], in_shards: list[Path],
               shards: ShardWriter, rejected: TableWriter, tally: _Tally,
               batch_rows: int) -> None:
    """Kept rows into the shards, duplicates into the rejected table (saying whose)."""
    offset = 0
    for batch in iter_parquet_batches([candidates], batch_rows):
        frame = pl.from_arrow(batch)
        mark = pl.Series("mark", marks[offset:offset + frame.height])
        source = np.searchsorted(bounds, np.arange(offset, offset + frame.height), "right") - 1
        offset += frame.height
        frame = frame.with_columns(mark, pl.Series("source", source))
        for src, m, n in frame.group_by("source", "mark").len().iter_rows():
            tally.by_shard[in_shards[src].name]["kept" if m == KEEP else "duplicate"] += n
        kept = frame.filter(pl.col("mark") == KEEP)
        shards.write(kept.to_arrow())
        tally.sums["cs_tokens"] += int(kept["cs_tokens"].sum() or 0)
        tally.sums["en_tokens"] += int(kept["en_tokens"].sum() or 0)
        dups = frame.filter(pl.col("mark") != KEEP)
        if dups.height:
            tally.reasons["duplicate"] += dups.height
            rejected.write(dups.with_columns(
                reason=pl.lit("duplicate"),
                detail=pl.when(pl.col("mark") == DUP_HERE)
                .then(pl.lit("duplicate of an earlier pair in this corpus"))
                .otherwise(pl.lit("duplicate of a pair in an earlier corpus"))).to_arrow())


#: an ingest's stats.json, as far as `bitext clean` reads it
INGEST_STATS = {"type": "object", "required": ["rows_in", "rejected"],
                "properties": {"rows_in": COUNT, "rejected": COUNTS}}


def clean(corpus: str, ingest_dir: str | Path, shards_dir: str | Path, rejected_path: str | Path,
          keys_path: str | Path, stats_path: str | Path, prior_key_files: list[str | Path] = (),
          settings: CleanSettings = CleanSettings(), shard_size: int = 1000,
          batch_rows: int = 50000, rule: str = "clean", threads: int = 1) -> dict[str, Any]:
    """Clean the shards in ``ingest_dir``; write shards, rejected rows, sorted keys, stats.
    ``threads``: worker processes for the rules (see :func:`_rule_pass`)."""
    ingest_dir = Path(ingest_dir)
    in_shards = sorted(ingest_dir.glob("shard-*.parquet"))
    ingest_stats = read_json_as(ingest_dir / STATS_NAME, INGEST_STATS,
                                "an ingest's stats (`paramill bitext ingest`)")
    prior = [Path(p) for p in prior_key_files]
    check_key_files(prior)  # before any work
    run = Run(rule=rule, params={"corpus": corpus, **asdict(settings), "shard_size": shard_size},
              inputs=[ingest_dir, *prior])
    n_in = parquet_rows(in_shards)
    unread = sum(ingest_stats["rejected"].values())
    if ingest_stats["rows_in"] != n_in + unread:
        raise InputError(ingest_dir / STATS_NAME, None, f"says {ingest_stats['rows_in']} rows in, but "
                         f"the folder's shards hold {n_in} and it rejected {unread}: the folder is not "
                         "as its ingest wrote it (a shard added, removed or replaced, or the stats "
                         "edited). Ingest the corpus again")
    tally = _Tally(Counter(ingest_stats["rejected"]),
                   {"(unreadable lines)": Counter(ingest_stats["rejected"])})
    # buckets sized by this corpus and the earlier corpora's keys read against it
    bits = bucket_bits(n_in + parquet_rows(prior), settings.bucket_rows)
    outputs = [Path(shards_dir), Path(rejected_path), Path(keys_path), Path(stats_path)]
    with output_job(run, *outputs) as job, \
            scratch_dir(Path(keys_path).parent, "paramill-clean-") as spill:
        t_shards, t_rejected, t_keys, t_stats = job.paths
        rejected = TableWriter(t_rejected, REJECTED)
        # ingest's own rejected rows come first, so one table holds every dropped row
        for batch in iter_parquet_batches([ingest_dir / REJECTED_NAME], batch_rows):
            rejected.write(batch)
        # pass 1: rules; survivors spilled in order with their keys
        candidates = TableWriter(spill / "candidates.parquet",
                                 pa.schema([*BITEXT, pa.field("cs_tokens", pa.int32()),
                                            pa.field("en_tokens", pa.int32())]))
        bucket_files = [spill / f"bucket-{b:05d}.u64" for b in range(1 << bits)]
        bucket_fhs = [open(p, "wb") for p in bucket_files] if settings.dedup else []
        position, bounds = _rule_pass(corpus, in_shards, settings, batch_rows, rejected,
                                      candidates, bits, bucket_fhs, tally, n_in, threads)
        candidates.close()
        for fh in bucket_fhs:
            fh.close()
        # pass 2: duplicates, bucket by bucket
        marks = np.zeros(position, dtype=np.uint8)
        keys_out = TableWriter(t_keys, KEYS)
        if settings.dedup:
            dedup_buckets(bucket_files, bits, marks, prior, keys_out)
        keys_out.close()
        # pass 3: kept rows into shards, duplicates into the rejected table
        shards = ShardWriter(t_shards, BITEXT, shard_size)
        _keep_pass(candidates.path, marks, bounds, in_shards, shards, rejected, tally, batch_rows)
        shard_paths = shards.close()
        rejected.close()
        kept_rows = shards.rows
        rows_in = ingest_stats["rows_in"]
        sums, reasons = tally.sums, tally.reasons
        stats = {
            "corpus": corpus,
            "stage": "clean",
            "rows_in": rows_in,
            "kept": kept_rows,
            "rejected": dict(sorted(reasons.items())),
            "rejected_total": sum(reasons.values()),
            "shards": {p.name: n for p, n in zip(shard_paths, _shard_rows(shard_paths))},
            "by_input_shard": {name: dict(sorted(c.items()))
                               for name, c in tally.by_shard.items() if c},
            "avg_tokens_cs": round(sums["cs_tokens"] / kept_rows, 3) if kept_rows else None,
            "avg_tokens_en": round(sums["en_tokens"] / kept_rows, 3) if kept_rows else None,
            "settings": asdict(settings),
        }
        if rows_in != kept_rows + stats["rejected_total"]:
            raise RuntimeError(f"clean {corpus}: rows do not add up: {rows_in} in, {kept_rows} "
                               f"kept, {stats['rejected_total']} rejected")
        write_json(t_stats, stats)
        job.rows_in, job.rows_out = rows_in, kept_rows
    if line := rejection_line(f"bitext clean {corpus}", rows_in, stats["rejected"], str(rejected_path)):
        note(line)
    return stats


def _spill_keys(good: pl.DataFrame, position: int, bits: int, bucket_fhs: list) -> None:
    """Append (key, position) pairs of surviving rows to their hash buckets on disk."""
    spill(pair_keys(good["cs"], good["en"]),
          np.arange(position, position + good.height, dtype=np.uint64), bits, bucket_fhs)


def _shard_rows(paths: list[Path]) -> list[int]:
    return [parquet_rows([p]) for p in paths]
