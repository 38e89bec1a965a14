"""``paramill pairs ingest``: one pair corpus into candidate shards, cleaned and deduplicated.

Reads the corpus with :mod:`paramill.pairs.readers`, applies the English-side cleaning rules
(the bitext rules that concern English: empty sides, latin-1, token bounds), and
deduplicates normalised ``(reference, candidate)`` pairs within the corpus and against the
key files of the pair corpora configured before it (the first occurrence wins), in bounded
memory (the bitext cleaner's hash buckets). Writes, atomically:

- ``shard-NNNNN.parquet``: the candidate table (the back-translation contract, decoder
  columns null) plus ``given_score`` and ``label`` as the corpus gives them;
- ``rejected.parquet``: every candidate or line not kept, with ``reason`` and ``detail``;
- ``keys.parquet``: sorted 64-bit keys of the kept pairs, for later corpora;
- ``stats.json``: ``rows_in == kept + rejected`` per reason.

``pair_id`` = ``<corpus>-<digest of the source files>-<line>`` (the reference's line for
MT outputs), so every candidate leads back to the line of the file it came from;
``candidate_id`` = ``pair_id:method:rank``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.text import cleaning as rules
from paramill import text
from paramill.text.dedup import DUP_HERE, KEEP, KEYS, KeySpill, check_key_files, pair_keys
from paramill.run.job import output_job
from paramill.io.lines import BATCH_TEXT_CHARS
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.io.tablewrite import ShardWriter, TableWriter
from paramill.io.outputs import scratch_dir, sha256_file
from paramill.io.jsonfiles import write_json
from paramill.formats.rows import Candidate
from paramill.pairs.readers import PairCorpusSpec, read_pairs
from paramill.pairs.tables import PAIR_CANDIDATES, PAIR_REJECTED
from paramill.run.plan import rejection_line
from paramill.run.progress import note, progress
from paramill.provenance import Run
from paramill.config.typed import Settings, setting

STATS_NAME, REJECTED_NAME, KEYS_NAME = "stats.json", "rejected.parquet", "keys.parquet"


@dataclass(frozen=True)
class PairCleanSettings(Settings):
    normalize_punctuation: bool = setting(
        True, "Map Unicode punctuation (quotes, dashes, ellipsis, special spaces) to ASCII.")
    require_latin: bool = setting(
        False, "Keep only pairs whose two sides encode as latin-1 (ParaBank 2's rule for CzEng). "
        "Off: English news and MT output hold names latin-1 cannot spell (Škoda); turn it on "
        "to keep only Western European text.")
    min_tokens: int = setting(1, "Minimum tokens on each side.", minimum=1)
    max_tokens: int = setting(100, "Maximum tokens on each side.", minimum=1)
    dedup: bool = setting(
        True, "Exact deduplication of normalised (reference, candidate) pairs across the pair "
        "corpora, in config order (first occurrence kept).")
    bucket_rows: int = setting(
        2_000_000, "Rows per hash bucket in deduplication; bounds memory, no effect on results.",
        minimum=1000, launch=True)


@dataclass(frozen=True)
class PairIngestSettings(Settings):
    shard_size: int = setting(
        50000, "Candidates per shard: one scoring job per shard and filter. A 50M-pair corpus "
        "in 500k-pair shards is 100 jobs per filter.", minimum=1)
    max_line_bytes: int = setting(
        65536, "Longer lines are rejected (reason line_too_long) without being held in memory.",
        minimum=64)
    batch_rows: int = setting(
        50000, "Rows processed per batch; bounds memory, no effect on results.", minimum=1,
        launch=True)


#: the normalised sentences' token counts, which the rules read (dropped after)
TOKEN_COUNTS = {"en_ref": "_ref_tokens", "candidate": "_cand_tokens"}


def rule_expressions(settings: PairCleanSettings) -> tuple[list[pl.Expr], list[pl.Expr], pl.Expr]:
    """(normalising column expressions, the token counts' (:data:`TOKEN_COUNTS`), the ``reason``
    expression; null = keep), each for a ``with_columns`` of its own, in that order: the
    English-side rules of ``clean`` (:mod:`paramill.rules`) on both sentences."""
    normal = rules.normalised(("en_ref", "candidate"), settings.normalize_punctuation)
    ref, cand = pl.col("en_ref"), pl.col("candidate")
    checks: list[rules.Check] = [rules.empty(ref, "empty_ref"),
                                 rules.empty(cand, "empty_candidate")]
    if settings.require_latin:
        checks.append((ref.str.contains(text.NOT_LATIN1_PATTERN)
                       | cand.str.contains(text.NOT_LATIN1_PATTERN), "not_latin1"))
    checks += rules.token_bounds(*TOKEN_COUNTS.values(), settings.min_tokens,
                                 settings.max_tokens)[0]
    return normal, rules.token_counts(TOKEN_COUNTS), rules.first_reason(checks)


def source_digest(files: list[str], digests: dict[str, str]) -> str:
    """12 hex digits identifying the exact source bytes (every file of the corpus)."""
    if len(files) == 1:
        return digests[files[0]][:12]
    return hashlib.sha256("".join(digests[f] for f in files).encode()).hexdigest()[:12]


class _Rows:
    """Column buffers of read candidates, as a polars frame per batch."""

    NAMES = ("line_no", "en_ref", "candidate", "method", "rank", "given_score", "label",
             "source_file", "reason", "detail")

    def __init__(self) -> None:
        self.data: dict[str, list] = {n: [] for n in self.NAMES}
        self.chars = 0  # the text held: a batch is full at BATCH_TEXT_CHARS, whatever its rows

    def add(self, c: Candidate) -> None:
        d = self.data
        self.chars += len(c.en_ref or "") + len(c.candidate or "")
        for name, value in (("line_no", c.line_no), ("en_ref", c.en_ref),
                            ("candidate", c.candidate), ("method", c.method), ("rank", c.rank),
                            ("given_score", c.score), ("label", c.label),
                            ("source_file", c.source_file), ("reason", c.reason),
                            ("detail", c.detail)):
            d[name].append(value)

    def __len__(self) -> int:
        return len(self.data["line_no"])

    def full(self, rows: int) -> bool:
        return len(self) >= rows or self.chars >= BATCH_TEXT_CHARS

    def frame(self, corpus: str, prefix: str) -> pl.DataFrame:
        frame = pl.DataFrame(self.data, schema={
            "line_no": pl.Int64, "en_ref": pl.String, "candidate": pl.String, "method": pl.String,
            "rank": pl.Int32, "given_score": pl.Float64, "label": pl.Int8,
            "source_file": pl.String, "reason": pl.String, "detail": pl.String})
        for values in self.data.values():
            values.clear()
        self.chars = 0
        pair_id = pl.lit(prefix) + pl.col("line_no").cast(pl.String)
        return frame.with_columns(
            pair_id=pair_id, corpus=pl.lit(corpus),
            candidate_id=pair_id + ":" + pl.col("method") + ":" + pl.col("rank").cast(pl.String))


#: survivors between the passes: candidates and where each came from (for duplicates)
_SPILL = pa.schema([*PAIR_CANDIDATES, pa.field("corpus", pa.string()),
                    pa.field("source_file", pa.string()), pa.field("line_no", pa.int64())])


def _select(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    missing = [n for n in schema.names if n not in frame.columns]
    frame = frame.with_columns([pl.lit(None).alias(n) for n in missing])
    return frame.select(schema.names).to_arrow().cast(schema)


@dataclass
class _Tally:
    """What became of the candidates: rejections by reason, and by method (with the kept)."""

    reasons: Counter = field(default_factory=Counter)
    by_method: dict[str, Counter] = field(default_factory=dict)
    kept: Counter = field(default_factory=Counter)

    def reject(self, frame: pl.DataFrame) -> None:
        """Count ``frame``'s rows (with ``method`` and ``reason``) as rejected."""
        for method, why, n in frame.group_by("method", "reason").len().iter_rows():
            self.reasons[why] += n
            self.by_method.setdefault(method, Counter())[why] += n

    def summary(self) -> dict[str, dict[str, int]]:
        return {m: {"kept": self.kept[m], **dict(sorted(self.by_method.get(m, {}).items()))}
                for m in sorted(set(self.kept) | set(self.by_method))}


def _rule_pass(spec: PairCorpusSpec, clean: PairCleanSettings, settings: PairIngestSettings,
               prefix: str, dedup: bool, rejected: TableWriter, survivors: TableWriter,
               keys: KeySpill, tally: _Tally) -> tuple[int, int, int]:
    """Read the corpus, apply the cleaning rules, write the rejected rows and spill the
    survivors (and their keys, when deduplicating). Returns (rows in, lines, survivors)."""
    normal, counts, reason = rule_expressions(clean)
    rows_in = lines = position = 0
    last_line = None
    buffer = _Rows()
    bar = progress(f"pairs ingest {spec.name}", unit="candidates")

    def flush() -> None:
        nonlocal position
        if not len(buffer):
            return
        frame = buffer.frame(spec.name, prefix)
        bad = frame.filter(pl.col("reason").is_not_null())
        frame = frame.filter(pl.col("reason").is_null()).drop("reason")
        frame = (frame.with_columns(pl.col("en_ref").alias("_ref_raw"),
                                    pl.col("candidate").alias("_cand_raw"))
                 .with_columns(normal).with_columns(counts).with_columns(reason))
        ruled = frame.filter(pl.col("reason").is_not_null()).with_columns(
            en_ref=pl.col("_ref_raw"), candidate=pl.col("_cand_raw"))
        for part in (bad, ruled):
            if part.height:
                tally.reject(part)
                rejected.write(_select(part, PAIR_REJECTED))
        good = frame.filter(pl.col("reason").is_null())
        if good.height:
            survivors.write(_select(good, _SPILL))
            if dedup:
                keys.add(pair_keys(good["en_ref"], good["candidate"]))
            position += good.height

    for cand in read_pairs(spec, settings.max_line_bytes, settings.batch_rows):
        rows_in += 1
        if cand.line_no != last_line:
            lines, last_line = lines + 1, cand.line_no
        buffer.add(cand)
        if buffer.full(settings.batch_rows):
            bar.update(len(buffer))
            flush()
    bar.update(len(buffer))
    flush()
    bar.close()
    return rows_in, lines, position


def _dedup_pass(survivors: Path, marks: np.ndarray, shards: ShardWriter, rejected: TableWriter,
                tally: _Tally, batch_rows: int) -> None:
    """The survivors, in order, into the shards, less the duplicates ``marks`` names (which
    go to the rejected rows, saying whose duplicate they are)."""
    offset = 0
    for batch in iter_parquet_batches([survivors], batch_rows):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        mark = pl.Series("_mark", marks[offset:offset + frame.height])
        offset += frame.height
        frame = frame.with_columns(mark)
        kept = frame.filter(pl.col("_mark") == KEEP).drop("_mark")
        if kept.height:
            shards.write(_select(kept, PAIR_CANDIDATES))
            for method, n in kept.group_by("method").len().iter_rows():
                tally.kept[method] += n
        dups = frame.filter(pl.col("_mark") != KEEP).with_columns(
            reason=pl.lit("duplicate"),
            detail=pl.when(pl.col("_mark") == DUP_HERE)
            .then(pl.lit("duplicate of an earlier pair in this corpus"))
            .otherwise(pl.lit("duplicate of a pair in an earlier pair corpus")))
        if dups.height:
            tally.reject(dups)
            rejected.write(_select(dups, PAIR_REJECTED))


def ingest_pairs(spec: PairCorpusSpec, out_dir: str | Path,
                 clean: PairCleanSettings = PairCleanSettings(),
                 settings: PairIngestSettings = PairIngestSettings(),
                 prior_key_files: list[str | Path] = (), rule: str = "pairs_ingest"
                 ) -> dict[str, Any]:
    """Read, clean and deduplicate ``spec`` into ``out_dir``; returns its ``stats.json``."""
    files = spec.files
    digests = {f: sha256_file(f) for f in files}
    prefix = f"{spec.name}-{source_digest(files, digests)}-"
    prior = [p / KEYS_NAME if p.is_dir() else p for p in map(Path, prior_key_files)]
    check_key_files(prior)  # before any work
    run = Run(rule=rule, params={"corpus": spec.name, "spec": spec.record(),
                                 "clean": asdict(clean), **asdict(settings)},
              inputs=[*files, *prior], known_digests=digests)
    dedup = clean.dedup and spec.dedup
    tally = _Tally()
    out_dir = Path(out_dir)
    with output_job(run, out_dir) as job, \
            scratch_dir(out_dir.parent, f"paramill-pairs-{spec.name}-") as spill:
        (tmp,) = job.paths
        tmp.mkdir(parents=True, exist_ok=True)
        rejected = TableWriter(tmp / REJECTED_NAME, PAIR_REJECTED)
        survivors = TableWriter(spill / "survivors.parquet", _SPILL)
        keys = KeySpill(spill / "buckets", clean.bucket_rows)  # survivors' keys, in order
        rows_in, lines, position = _rule_pass(spec, clean, settings, prefix, dedup, rejected,
                                              survivors, keys, tally)
        survivors.close()
        # dedup: bucket the spilled keys by their top bits, then mark duplicates per bucket
        keys_out = TableWriter(tmp / KEYS_NAME, KEYS)
        marks = (keys.marks(prior, keys_out, prior_rows=sum(_rows(p) for p in prior)) if dedup
                 else np.zeros(position, dtype=np.uint8))
        keys_out.close()
        shards = ShardWriter(tmp, PAIR_CANDIDATES, settings.shard_size)
        _dedup_pass(survivors.path, marks, shards, rejected, tally, settings.batch_rows)
        paths = shards.close()
        rejected.close()
        kept_rows = shards.rows
        stats = {
            "corpus": spec.name,
            "stage": "pairs_ingest",
            "format": spec.format,
            "lines_in": lines,
            "rows_in": rows_in,
            "kept": kept_rows,
            "rejected": dict(sorted(tally.reasons.items())),
            "rejected_total": sum(tally.reasons.values()),
            "by_method": tally.summary(),
            "shards": [p.name for p in paths],
            "source_files": {f: digests[f] for f in files},
        }
        if rows_in != kept_rows + stats["rejected_total"]:
            raise RuntimeError(f"pairs ingest {spec.name}: rows do not add up: {rows_in} in, "
                               f"{kept_rows} kept, {stats['rejected_total']} rejected")
        write_json(tmp / STATS_NAME, stats)
        job.rows_in, job.rows_out = rows_in, kept_rows
    if line := rejection_line(f"pairs ingest {spec.name}", rows_in, stats["rejected"],
                              str(Path(out_dir) / REJECTED_NAME)):
        note(line)
    return stats


def _rows(path: Path) -> int:
    return parquet_rows([path])
