"""``paramill ingest``: stream one corpus into Parquet shards of the bitext schema.

Every input line becomes either a shard row or a rejected row (structural problems
only: invalid UTF-8, column count, over-long line); cleaning is a separate step. The
output directory holds ``shard-*.parquet``, ``rejected.parquet`` and ``stats.json`` and
appears only when complete. ``pair_id`` = ``<corpus>-<digest of the source files>-<line>``,
so the same input gives the same ids and the same bytes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.bitext.readers import CorpusSpec, read_corpus
from paramill.bitext.tables import BITEXT, REJECTED
from paramill.run.job import output_job
from paramill.io.lines import BATCH_TEXT_CHARS
from paramill.io.tablewrite import ShardWriter, TableWriter
from paramill.io.outputs import sha256_file
from paramill.io.jsonfiles import write_json
from paramill.run.plan import rejection_line
from paramill.run.progress import note, progress
from paramill.provenance import Run
from paramill.config.typed import Settings, setting

STATS_NAME = "stats.json"
REJECTED_NAME = "rejected.parquet"


@dataclass(frozen=True)
class IngestSettings(Settings):
    shard_size: int = setting(
        1000, "Rows per shard (ingested and cleaned). One translation job runs per cleaned shard.",
        minimum=1)
    max_line_bytes: int = setting(
        65536, "Longer lines are rejected (reason line_too_long) without being held in memory.",
        minimum=64)
    batch_rows: int = setting(
        50000, "Rows processed per batch; bounds memory, no effect on results.", minimum=1,
        launch=True)



def source_digest(spec: CorpusSpec, digests: dict[str, str]) -> str:
    """12 hex digits identifying the exact source bytes (both files for Moses)."""
    joined = "".join(digests[f] for f in spec.files)
    if len(spec.files) == 1:
        return joined[:12]
    return hashlib.sha256(joined.encode()).hexdigest()[:12]


class _Columns:
    """Column buffers for one batch of rows, and the characters of their two sides."""

    def __init__(self, names: list[str]):
        self.names = names
        self.data: dict[str, list] = {n: [] for n in names}
        self.chars = 0

    def __len__(self) -> int:
        return len(self.data[self.names[0]])

    def full(self, rows: int) -> bool:
        """Whether the batch holds ``rows`` rows or :data:`~paramill.io.BATCH_TEXT_CHARS`."""
        return len(self) >= rows or self.chars >= BATCH_TEXT_CHARS

    def table(self, schema: pa.Schema) -> pa.Table:
        table = pa.table({n: self.data[n] for n in self.names}, schema=schema)
        for values in self.data.values():
            values.clear()
        self.chars = 0
        return table


def ingest(spec: CorpusSpec, out_dir: str | Path, settings: IngestSettings = IngestSettings(),
           rule: str = "ingest") -> dict[str, Any]:
    """Read ``spec`` into ``out_dir``; returns the stats written to ``stats.json``."""
    digests = {f: sha256_file(f) for f in spec.files}
    prefix = f"{spec.name}-{source_digest(spec, digests)}-"
    run = Run(rule=rule, params={"corpus": spec.name, "spec": spec.record(), **asdict(settings)},
              inputs=spec.files, known_digests=digests)
    reasons: Counter[str] = Counter()
    rows_in = 0
    with output_job(run, out_dir) as job:
        (tmp,) = job.paths
        shards = ShardWriter(tmp, BITEXT, settings.shard_size)
        rejected = TableWriter(tmp / REJECTED_NAME, REJECTED)
        good = _Columns(BITEXT.names)
        bad = _Columns(REJECTED.names)
        bar = progress(f"ingest {spec.name}", unit="lines")
        source = spec.source_file
        for pair in read_corpus(spec, settings.max_line_bytes):
            rows_in += 1
            target = good if pair.reason is None else bad
            d = target.data
            d["pair_id"].append(prefix + str(pair.line_no))
            d["cs"].append(pair.cs)
            d["en"].append(pair.en)
            target.chars += len(pair.cs or "") + len(pair.en or "")
            d["corpus"].append(spec.name)
            d["source_file"].append(source)
            d["line_no"].append(pair.line_no)
            if pair.reason is not None:
                d["reason"].append(pair.reason)
                d["detail"].append(pair.detail)
                reasons[pair.reason] += 1
            if good.full(settings.batch_rows):
                bar.update(len(good))
                shards.write(good.table(BITEXT))
            if bad.full(settings.batch_rows):
                rejected.write(bad.table(REJECTED))
        bar.update(len(good))
        bar.close()
        if len(good):
            shards.write(good.table(BITEXT))
        if len(bad):
            rejected.write(bad.table(REJECTED))
        paths = shards.close()
        rejected.close()
        stats = {
            "corpus": spec.name,
            "stage": "ingest",
            "rows_in": rows_in,
            "rows_out": shards.rows,
            "rejected": dict(sorted(reasons.items())),
            "shards": [p.name for p in paths],
            "source_files": {f: digests[f] for f in spec.files},
        }
        assert rows_in == shards.rows + sum(reasons.values())
        write_json(tmp / STATS_NAME, stats)
        job.rows_in, job.rows_out = rows_in, shards.rows
    if line := rejection_line(f"bitext ingest {spec.name}", rows_in, stats["rejected"],
                              str(Path(out_dir) / "rejected.parquet")):
        note(line)
    return stats
