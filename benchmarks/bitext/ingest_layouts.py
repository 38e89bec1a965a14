#!/usr/bin/env python3
"""Time and peak memory of ``paramill bitext ingest`` over one synthetic bitext written in
each layout that can hold it: two plain files (``moses``), CSV with a header and RFC 4180
quoting (``csv``), JSON Lines and Parquet with the sentences inside a ``translation`` object
or struct, as the Hugging Face Hub holds WMT (``jsonl``, ``parquet``, read with
``fields``). Each ingest in a child process (its peak RSS sampled with its children); the
shards' ``cs`` and ``en`` are checked to be the same for every layout.

    python benchmarks/bitext/ingest_layouts.py [--pairs 500000] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import emit, machine, run_paramill  # noqa: E402

STRUCT = {"cs": "translation.cs", "en": "translation.en"}


def write_layouts(where: Path, pairs: int, seed: int = 3) -> dict[str, dict]:
    """The same pairs (5-25 words a side; a comma or a quote in some) in each layout: the
    corpus spec that reads each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    words = {side: [f"{side}{i}" for i in range(5000)] + [',', '"', "a,b"] for side in ("cs", "en")}
    cs, en = ([" ".join(rng.choices(words[side], k=rng.randint(5, 25))) + "." for _ in range(pairs)]
              for side in ("cs", "en"))
    (where / "c.cs").write_text("\n".join(cs) + "\n", encoding="utf-8")
    (where / "c.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    with open(where / "c.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["cs", "en"])
        out.writerows(zip(cs, en))
    with open(where / "c.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"translation": {"cs": a, "en": b}}, ensure_ascii=False) + "\n"
                      for a, b in zip(cs, en))
    pq.write_table(pa.table({"translation": [{"cs": a, "en": b} for a, b in zip(cs, en)]}),
                   where / "c.parquet", row_group_size=100_000)
    return {"moses": {"format": "moses", "cs": str(where / "c.cs"), "en": str(where / "c.en")},
            "csv": {"format": "csv", "path": str(where / "c.csv")},
            "jsonl": {"format": "jsonl", "path": str(where / "c.jsonl"), "fields": STRUCT},
            "parquet": {"format": "parquet", "path": str(where / "c.parquet"), "fields": STRUCT}}


def ingest(spec: dict, out: Path, threads: int) -> dict:
    return run_paramill(["--threads", str(threads), "bitext", "ingest", "--corpus", "c",
                         "--out", str(out), "--spec", json.dumps(spec)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args()
    import polars as pl

    runs, sides = {}, {}
    with tempfile.TemporaryDirectory(prefix="paramill-ingest-layouts-") as tmp:
        specs = write_layouts(Path(tmp), args.pairs)
        for layout, spec in specs.items():
            out = Path(tmp) / f"out-{layout}"
            runs[layout] = ingest(spec, out, args.threads)
            runs[layout]["pairs_per_second"] = round(args.pairs / runs[layout]["seconds"])
            sides[layout] = pl.read_parquet(sorted(out.glob("shard-*.parquet"))).select("cs", "en")
    same = all(sides[k].equals(sides["moses"]) for k in sides)
    emit({"benchmark": "bitext ingest by layout: time and peak memory", "machine": machine(),
          "pairs": args.pairs, "threads": args.threads, "runs": runs,
          "same_pairs_in_every_layout": same,
          "seconds_against_moses": {k: round(v["seconds"] / runs["moses"]["seconds"], 2) for k, v in runs.items()}},
         args.out)


if __name__ == "__main__":
    main()
