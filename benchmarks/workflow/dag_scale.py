#!/usr/bin/env python3
"""The DAG at corpus scale: `snakemake -n` with 100, 1,000 and 5,000 shards, and a no-op rerun.

For each shard count N, a scratch copy of the project gets the sample config with one
synthetic Czech-English corpus of 2N distinct sentence pairs and `bitext.ingest.shard_size:
2`, so its clean checkpoint writes N real shards (ingest and clean run for real, in the
measured copy; that part is not timed). Then the whole default DAG is planned with
`snakemake -n` (one back-translation job and one scoring job per enabled filter for every
shard, selection, embeddings, lexicon, report): wall seconds and the peak RSS of the
Snakemake process (GNU time), and the number of jobs in the plan.

The no-op rerun: the default pipeline on the sample is run to the end, then `snakemake`
again with nothing to do (wall seconds, peak RSS). Goals (issue 12 · 4): 5,000 shards
planned in <= 60 s, a no-op rerun of the default DAG in <= 10 s.

    python benchmarks/workflow/dag_scale.py --out benchmarks/out/dag_scale.json
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import REPO, copy_project, emit, machine  # noqa: E402

CS = ["Pes", "Kočka", "Dům", "Strom", "Auto", "Řeka", "Město", "Kniha"]
EN = ["dog", "cat", "house", "tree", "car", "river", "town", "book"]


def synthetic_corpus(folder: Path, pairs: int) -> dict[str, str]:
    """``pairs`` distinct, clean sentence pairs (a number makes each one unique)."""
    folder.mkdir(parents=True, exist_ok=True)
    cs, en = folder / "scale.cs", folder / "scale.en"
    with open(cs, "w", encoding="utf-8") as fc, open(en, "w", encoding="utf-8") as fe:
        for i in range(pairs):
            fc.write(f"{CS[i % 8]} číslo {i} je velmi pěkný.\n")
            fe.write(f"The {EN[i % 8]} number {i} is very nice.\n")
    return {"format": "moses", "cs": str(cs.relative_to(folder.parent.parent)),
            "en": str(en.relative_to(folder.parent.parent))}


def timed(root: Path, *args: str) -> dict[str, float | int | str]:
    """Wall seconds and peak RSS (MB) of one snakemake process; its output."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PARAMILL_PROGRESS": "0"}
    stats = root / ".time"
    done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", str(stats), sys.executable, "-m",
                           "snakemake", "--cores", "2", *args], cwd=root, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    seconds, rss_kb = stats.read_text().split()[-2:]
    return {"seconds": float(seconds), "peak_rss_mb": round(int(rss_kb) / 1024, 1),
            "output": done.stdout + done.stderr}


def planned_jobs(output: str) -> int:
    found = re.search(r"^total\s+(\d+)", output, re.M)
    return int(found.group(1)) if found else 0


def dry_run(shards: int, tmp: Path) -> dict[str, float | int]:
    root = copy_project(tmp / f"shards-{shards}")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["bitext"]["corpora"] = {"scale": synthetic_corpus(root / "data" / "scale", 2 * shards)}
    config["bitext"]["ingest"]["shard_size"] = 2
    config["nmt"]["train_corpora"] = config["filters"]["heldout"]["corpora"] = []  # all corpora
    (root / "scale.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    prepare = timed(root, "--configfile", "scale.yaml", "--until", "clean")
    made = len(list((root / "work" / "shards" / "scale").glob("shard-*.parquet")))
    if made != shards:
        raise SystemExit(f"expected {shards} shards, the clean checkpoint wrote {made}")
    plan = timed(root, "--configfile", "scale.yaml", "-n", "--quiet", "rules")
    return {"shards": shards, "jobs_planned": planned_jobs(plan["output"]),
            "dry_run_seconds": plan["seconds"], "dry_run_peak_rss_mb": plan["peak_rss_mb"],
            "ingest_and_clean_seconds": prepare["seconds"]}


def noop_rerun(tmp: Path) -> dict[str, float | int]:
    root = copy_project(tmp / "default")
    first = timed(root)
    again = timed(root)
    if "Nothing to be done" not in again["output"]:
        raise SystemExit("the rerun of the default DAG was not a no-op:\n" + again["output"][-3000:])
    return {"first_run_seconds": first["seconds"], "noop_rerun_seconds": again["seconds"],
            "noop_rerun_peak_rss_mb": again["peak_rss_mb"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", default="100,1000,5000", help="shard counts to plan")
    parser.add_argument("--no-rerun", action="store_true", help="skip the default run and its no-op rerun")
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paramill-bench-dag-") as tmp:
        plans = [dry_run(int(n), Path(tmp)) for n in args.shards.split(",")]
        rerun = None if args.no_rerun else noop_rerun(Path(tmp))
    import snakemake

    emit({"benchmark": "snakemake -n at 100-5,000 shards; a no-op rerun of the default DAG",
          "machine": machine(), "snakemake": snakemake.__version__,
          "goals": {"dry_run_5000_shards_seconds": 60, "noop_rerun_seconds": 10},
          "dry_runs": plans, "default_dag": rerun}, args.out)


if __name__ == "__main__":
    main()
