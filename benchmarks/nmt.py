#!/usr/bin/env python3
"""Faithfulness and speed of CTranslate2 decoding against OpenNMT-py's own translator.

On the same model, input and beam (length penalty off), translate the Czech side of the
cleaned sample shards with `onmt_translate` and with CTranslate2 (the converted model),
and report the share of identical outputs, sentences/s and target tokens/s for each, and
the throughput ratio. Extrapolates the hours for a CzEng-size run (51M sentences) from the
measured CTranslate2 speed: GPU-hours when a GPU is visible, otherwise CPU-hours (labelled).

Needs a trained model: run the default pipeline first (`make run`), or pass --checkpoint,
--src-spm, --tgt-spm and --shards.

    python benchmarks/nmt.py --out benchmarks/out/nmt.json
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import emit  # noqa: E402  (benchmarks/ is on sys.path when run)

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paramill import device  # noqa: E402
from paramill.nmt.convert import convert  # noqa: E402
from paramill.nmt.subwords import Segmenter  # noqa: E402
from paramill.nmt.translate import TranslateSettings, load_translator, translate_pieces  # noqa: E402

CZENG_SENTENCES = 51_000_000


def onmt_translate(checkpoint: Path, src: Path, out: Path, beam: int, batch: int, threads: int) -> float:
    tool = Path(sys.executable).parent / "onmt_translate"
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    subprocess.run([str(tool), "-model", str(checkpoint), "-src", str(src), "-output", str(out),
                    "-beam_size", str(beam), "-batch_size", str(batch), "-batch_type", "sents",
                    "-length_penalty", "none", "-max_length", "256", "-gpu", "-1"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default="work/nmt/cs-en/model.pt")
    parser.add_argument("--src-spm", default="work/nmt/spm/cs.model")
    parser.add_argument("--tgt-spm", default="work/nmt/spm/en.model")
    parser.add_argument("--shards", default="work/shards/*/shard-*.parquet")
    parser.add_argument("--beam", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, default=0, help="at most this many sentences (0: all)")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()

    files = sorted(glob.glob(args.shards))
    if not files or not Path(args.checkpoint).exists():
        raise SystemExit("no model or shards: run `make run` first, or pass --checkpoint/--shards")
    sources = pl.scan_parquet(files).select("cs").collect()["cs"].to_list()
    if args.limit:
        sources = sources[: args.limit]
    src_seg, tgt_seg = Segmenter(args.src_spm), Segmenter(args.tgt_spm)
    pieces = src_seg.encode(sources)
    settings = TranslateSettings(beam_size=args.beam, n_best=1, batch_size=args.batch,
                                 length_penalty=0.0, device="auto")
    with tempfile.TemporaryDirectory(prefix="paramill-bench-nmt-") as tmp:
        tmp = Path(tmp)
        convert(args.checkpoint, args.src_spm, args.tgt_spm, tmp / "ct2")
        translator = load_translator(tmp / "ct2", settings, threads=args.threads)
        translate_pieces(translator, pieces[:64], settings)  # warm-up
        start = time.perf_counter()
        hyps = translate_pieces(translator, pieces, settings)
        ct2_seconds = time.perf_counter() - start
        ct2_out = [tgt_seg.decode([h[0][0]])[0] if h else "" for h in hyps]
        target_tokens = sum(len(h[0][0]) for h in hyps if h)

        src_file = tmp / "src.sp"
        src_file.write_text("".join(" ".join(p) + "\n" for p in pieces))
        small = tmp / "small.sp"
        small.write_text("".join(" ".join(p) + "\n" for p in pieces[:8]))
        overhead = onmt_translate(Path(args.checkpoint), small, tmp / "small.out", args.beam,
                                  args.batch, args.threads)
        onmt_wall = onmt_translate(Path(args.checkpoint), src_file, tmp / "onmt.out", args.beam,
                                   args.batch, args.threads)
        onmt_seconds = max(onmt_wall - overhead, 1e-9)
        onmt_out = [tgt_seg.decode([line.split()])[0]
                    for line in (tmp / "onmt.out").read_text().splitlines()]

    n = len(sources)
    identical = sum(a == b for a, b in zip(ct2_out, onmt_out)) / n
    dev = device.pick("auto")
    ct2_rate = n / ct2_seconds
    report = {
        "benchmark": "back-translation: CTranslate2 vs onmt_translate",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "device": dev},
        "model": str(args.checkpoint),
        "sentences": n,
        "beam_size": args.beam,
        "length_penalty": "off",
        "identical_outputs": round(identical, 4),
        "ctranslate2": {"seconds": round(ct2_seconds, 2), "sentences_per_second": round(ct2_rate, 1),
                        "target_tokens_per_second": round(target_tokens / ct2_seconds, 1),
                        "threads": args.threads},
        "onmt_translate": {"seconds": round(onmt_seconds, 2),
                           "seconds_with_startup": round(onmt_wall, 2),
                           "sentences_per_second": round(n / onmt_seconds, 1)},
        "throughput_ratio": round(ct2_rate / (n / onmt_seconds), 2),
        "extrapolation": {
            "sentences": CZENG_SENTENCES,
            ("gpu_hours" if dev == "cuda" else "cpu_hours_this_machine"):
                round(CZENG_SENTENCES / ct2_rate / 3600, 1),
            "note": ("measured on a GPU" if dev == "cuda" else
                     "no GPU here: CPU figure for this tiny model only; measure GPU-hours on a "
                     "GPU node with a full-size model"),
        },
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
