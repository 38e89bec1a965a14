#!/usr/bin/env python3
"""Back-translation at Transformer-base size on a GPU: training and decoding, per engine.

1. Training: a Transformer-base CS->EN model (6+6 layers, 512/2048, 8 heads, 20k
   vocabularies: the sample's SentencePiece pieces padded with filler entries) through
   paramill's own training path and generated OpenNMT-py config, ``--steps`` steps at
   ``--batch-tokens`` per batch, in fp32 and (``--precision fp16``) mixed precision. Reports
   target tokens/s and source tokens/s as OpenNMT-py logs them (after the first report, which
   holds start-up), steps/s and the peak GPU memory nvidia-smi saw.
2. Decoding, the same model and input: beam ``--beam`` (ParaNMT: 12), 1-best, outputs forced
   to ``--length`` subwords (min = max length: a barely trained model does not stop on its
   own, and speed depends on length) with every engine that runs here: paramill's
   ``engine: auto`` (CTranslate2 where CUDA 12's cuBLAS loads, else the opennmt-py engine),
   the opennmt-py engine in float32 and float16, and OpenNMT-py's own ``onmt_translate``
   on the GPU. Then ParaBank 2's constrained top-k sampling (5 sets x 30 samples, k 10, dual
   scoring, clustering) per source.
3. The projection: GPU-hours to back-translate CzEng's 51M Czech sentences at beam 12, and to
   train both directions for the pipeline's default steps.

Needs the sample's NMT data (``make run`` makes ``work/nmt/data`` and ``work/nmt/spm``) and
a bitext shard (``work/shards/*/shard-*.parquet``).

    python benchmarks/nmt/nmt_gpu.py --out benchmarks/out/nmt_gpu.json
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import emit  # noqa: E402  (benchmarks/ is on sys.path when run)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from nmt import BASE, BASE_VOCAB, padded_vocab  # noqa: E402
from paramill.nmt import train as nmt_train  # noqa: E402
from paramill.nmt.convert import convert  # noqa: E402
from paramill.nmt.engine import select  # noqa: E402
from paramill.nmt.sampling import SampleSettings, sample_shard  # noqa: E402
from paramill.nmt.subwords import Segmenter  # noqa: E402
from paramill.nmt.translate import TranslateSettings, load_translator, translate_pieces  # noqa: E402

CZENG_SENTENCES = 51_000_000
_REPORT = re.compile(r"Step\s+(\d+)/\s*\d+;.*?(\d+)/\s*(\d+) tok/s;\s*(\d+) sec")


class GpuMemory:
    """The peak of nvidia-smi's memory.used (MiB) while it runs (a training subprocess)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                self.peak = max([self.peak, *(int(x) for x in out.split() if x.isdigit())])
            except (OSError, subprocess.SubprocessError):
                return
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


class Tee:
    """stderr, kept (paramill's training echoes OpenNMT-py's log there)."""

    def __init__(self, stream) -> None:
        self.stream, self.lines = stream, []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def train_base(data: Path, src_spm: str, tgt_spm: str, work: Path, steps: int, batch_tokens: int,
               precision: str, bucket_size: int = 262144) -> dict:
    model = nmt_train.ModelSettings(**BASE)
    settings = nmt_train.NmtTrainSettings(train_steps=steps, valid_steps=steps, save_checkpoint_steps=steps,
                                          batch_size=batch_tokens, warmup_steps=max(1, steps // 2),
                                          precision=precision, bucket_size=bucket_size)
    work.mkdir(parents=True, exist_ok=True)
    (work / "settings.sha256").write_text(
        nmt_train._fingerprint("cs-en", data, src_spm, tgt_spm, model, settings) + "\n")
    padded_vocab(src_spm, work / "vocab.src", BASE_VOCAB)
    padded_vocab(tgt_spm, work / "vocab.tgt", BASE_VOCAB)
    tee, saved = Tee(sys.stderr), sys.stderr
    sys.stderr = tee
    start = time.perf_counter()
    try:
        with GpuMemory() as memory:
            summary = nmt_train.train("cs-en", data, src_spm, tgt_spm, work / "model.pt", work, model,
                                      settings, rule="benchmark")
    finally:
        sys.stderr = saved
    seconds = time.perf_counter() - start
    reports = [(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)))
               for m in map(_REPORT.search, "".join(tee.lines).splitlines()) if m]
    steady = reports[1:] or reports
    # steps/s between the first and the last report (start-up and the first report left out)
    span = (reports[-1][3] - reports[0][3]) if len(reports) > 1 else 0
    steps_per_second = (reports[-1][0] - reports[0][0]) / span if span > 0 else None
    return {"precision": precision, "steps": steps, "batch_tokens": batch_tokens, "gpus": summary["gpus"],
            "seconds_with_startup": round(seconds, 1),
            "source_tokens_per_second": round(sum(r[1] for r in steady) / len(steady)) if steady else None,
            "target_tokens_per_second": round(sum(r[2] for r in steady) / len(steady)) if steady else None,
            "steps_per_second": round(steps_per_second, 2) if steps_per_second else None,
            "reports": reports, "peak_gpu_memory_mib": memory.peak, "checkpoint": str(work / "model.pt")}


def decode(bundle: Path, pieces: list[list[str]], settings: TranslateSettings) -> dict:
    import torch

    engine = select(settings.device, engine=settings.engine, models=[bundle])
    translator = load_translator(bundle, settings, threads=1, engine=engine)
    translate_pieces(translator, pieces[:settings.batch_size], settings)  # warm-up
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    hyps = translate_pieces(translator, pieces, settings)
    seconds = time.perf_counter() - start
    tokens = sum(len(h[0][0]) for h in hyps if h)
    return {"engine": engine.describe(), "compute_type": settings.compute_type, "batch": settings.batch_size,
            "seconds": round(seconds, 2), "sentences_per_second": round(len(pieces) / seconds, 1),
            "target_tokens_per_second": round(tokens / seconds, 1),
            "peak_torch_memory_mib": (round(torch.cuda.max_memory_allocated() / 2**20)
                                      if torch.cuda.is_available() else None),
            "outputs": [h[0][0] for h in hyps]}


def onmt_translate(checkpoint: Path, src: Path, out: Path, beam: int, batch: int, length: int,
                   gpu: bool) -> float:
    cmd = [sys.executable, "-m", "paramill.nmt.launch", "translate", "1", "-model", str(checkpoint),
           "-src", str(src), "-output", str(out), "-beam_size", str(beam), "-batch_size", str(batch),
           "-batch_type", "sents", "-length_penalty", "none", "-max_length", str(length),
           "-min_length", str(length), "-gpu", "0" if gpu else "-1"]
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                          os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def sampling(table: pa.Table, bundle: Path, args, tmp: Path, batched: bool) -> dict:
    """ParaBank 2's path on ``--sample-sources`` sources (``--sample-per-call`` of them when
    not ``batched``: one engine call per (source, constraint set), as CTranslate2 must)."""
    from paramill.nmt import sampling as sampling_mod

    count = args.sample_sources if batched else args.sample_per_call
    shard = tmp / f"sample-{count}.parquet"
    pq.write_table(table.slice(0, count), shard)
    settings = SampleSettings(max_decoding_length=args.length, block=count, threshold=args.sample_threshold)
    saved = sampling_mod.sample_block
    if not batched:
        sampling_mod.sample_block = lambda translator, sources, banned, st: [
            sampling_mod.sample_set(translator, src, ban, st) for src, ban in zip(sources, banned)]
    try:
        start = time.perf_counter()
        stats = sample_shard(shard, bundle, bundle, args.src_spm, args.tgt_spm, tmp / f"sampled-{count}.parquet",
                             settings)
        seconds = time.perf_counter() - start
    finally:
        sampling_mod.sample_block = saved
    return {"batched": batched, "sources": stats["sources"], "sampled": stats["sampled"],
            "output": stats["output"], "engine": stats["engine"], "seconds": round(seconds, 2),
            "sources_per_second": round(stats["sources"] / seconds, 2),
            "settings": "5 constraint sets x 30 samples, top-10, dual scoring, clustering; "
                        f"max {args.length} subwords, threshold {args.sample_threshold:g}"}


def partial(report: dict, out: str | None) -> None:
    """What is measured so far, written to ``out`` (a run cut short still leaves it)."""
    if out:
        import json

        Path(out).write_text(json.dumps(report, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="work/nmt/data")
    parser.add_argument("--src-spm", default="work/nmt/spm/cs.model")
    parser.add_argument("--tgt-spm", default="work/nmt/spm/en.model")
    parser.add_argument("--shards", default="work/shards/*/shard-*.parquet")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--precision", nargs="+", default=["fp32", "fp16"], choices=["fp32", "fp16"])
    parser.add_argument("--sentences", type=int, default=2000, help="sources decoded at beam --beam")
    parser.add_argument("--beam", type=int, default=12)
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 256], help="decoding batch sizes")
    parser.add_argument("--length", type=int, default=24, help="forced output length in subwords")
    parser.add_argument("--sample-sources", type=int, default=256)
    parser.add_argument("--sample-per-call", type=int, default=0,
                        help="also time this many sources one engine call per (source, set)")
    parser.add_argument("--sample-threshold", type=float, default=1e9,
                        help="dual-score threshold (default: keep all, so clustering's work is "
                             "measured too; a barely trained model's scores are all above 3.5)")
    parser.add_argument("--sampling-only", action="store_true", help="train, then sampling only")
    parser.add_argument("--bucket-size", type=int, default=262144,
                        help="OpenNMT-py's bucket (examples): small for the sample, whose few "
                             "thousand pairs otherwise fill a bucket by reading the corpus many times")
    parser.add_argument("--no-onmt", action="store_true", help="skip onmt_translate")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    report: dict = {
        "benchmark": "back-translation at Transformer-base size: training and decoding per engine",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if gpu else None},
        "model": (f"Transformer base ({BASE['layers']}+{BASE['layers']} layers, {BASE['hidden_size']}/"
                  f"{BASE['ff_size']}, {BASE['heads']} heads, {BASE_VOCAB} vocabularies)"),
    }
    files = sorted(glob.glob(args.shards))
    if not files or not Path(args.data).exists():
        raise SystemExit("no sample NMT data or shards: run `make run` first, or pass --data/--shards")
    with tempfile.TemporaryDirectory(prefix="paramill-bench-nmt-gpu-") as tmp:
        tmp = Path(tmp)
        report["training"] = [train_base(Path(args.data), args.src_spm, args.tgt_spm, tmp / f"train-{p}",
                                         args.steps, args.batch_tokens, p, args.bucket_size)
                              for p in args.precision]
        partial(report, args.out)
        checkpoint = Path(report["training"][0]["checkpoint"])
        convert(checkpoint, args.src_spm, args.tgt_spm, tmp / "bundle")
        bundle = tmp / "bundle"
        table = pa.concat_tables([pq.read_table(f, columns=["pair_id", "cs", "en"]) for f in files])
        table = table.filter(pc.greater(pc.utf8_length(table["cs"]), 0))
        sources = table["cs"].to_pylist()
        sources = (sources * (args.sentences // max(1, len(sources)) + 1))[:args.sentences]
        pieces = Segmenter(args.src_spm).encode(sources)
        base = TranslateSettings(beam_size=args.beam, n_best=1, length_penalty=0.0,
                                 max_decoding_length=args.length, min_decoding_length=args.length,
                                 device="auto")
        runs = []
        for batch in ([] if args.sampling_only else args.batch):
            for engine, compute in (("auto", "default"), ("opennmt-py", "float32"), ("opennmt-py", "float16")):
                settings = dataclasses.replace(base, engine=engine, compute_type=compute, batch_size=batch)
                try:
                    runs.append(decode(bundle, pieces, settings))
                except Exception as exc:  # an engine that cannot run here is reported, not fatal
                    runs.append({"engine": engine, "compute_type": compute, "batch": batch, "error": str(exc)})
        reference = next((r["outputs"] for r in runs if "outputs" in r), [])
        for run in runs:
            if "outputs" in run:
                run["identical_to_first"] = round(sum(a == b for a, b in zip(run.pop("outputs"), reference))
                                                  / len(pieces), 4)
        report["decoding"] = {"sentences": len(pieces), "beam_size": args.beam, "length": args.length,
                              "runs": runs}
        partial(report, args.out)
        if not args.no_onmt and not args.sampling_only:
            src_file, small = tmp / "src.sp", tmp / "small.sp"
            src_file.write_text("".join(" ".join(p) + "\n" for p in pieces))
            small.write_text("".join(" ".join(p) + "\n" for p in pieces[:8]))
            batch = args.batch[0]
            overhead = onmt_translate(checkpoint, small, tmp / "small.out", args.beam, batch, args.length, gpu)
            wall = onmt_translate(checkpoint, src_file, tmp / "onmt.out", args.beam, batch, args.length, gpu)
            seconds = max(wall - overhead, 1e-9)
            report["decoding"]["onmt_translate"] = {
                "batch": batch, "device": "cuda" if gpu else "cpu", "seconds": round(seconds, 2),
                "seconds_with_startup": round(wall, 2),
                "sentences_per_second": round(len(pieces) / seconds, 1)}
        # ParaBank 2 sampling: the CS->EN model stands in for EN->CS too (same shapes, same work)
        report["sampling"] = [sampling(table, bundle, args, tmp, batched=True)]
        if args.sample_per_call:  # the same path one (source, constraint set) per call, as CTranslate2 must
            report["sampling"].append(sampling(table, bundle, args, tmp, batched=False))
        partial(report, args.out)
    if not runs:
        emit(report, args.out)
        return
    best = max((r for r in runs if "sentences_per_second" in r), key=lambda r: r["sentences_per_second"])
    fastest_train = max(report["training"], key=lambda t: t["target_tokens_per_second"] or 0)
    steps_per_second = (fastest_train["steps_per_second"]
                        or fastest_train["steps"] / fastest_train["seconds_with_startup"])
    default_steps = nmt_train.NmtTrainSettings().train_steps
    report["projection"] = {
        "czeng_sentences": CZENG_SENTENCES,
        "beam12_gpu_hours": round(CZENG_SENTENCES / best["sentences_per_second"] / 3600, 1),
        "beam12_from": f"{best['engine']} {best['compute_type']} batch {best['batch']}",
        "sampling_gpu_hours": round(CZENG_SENTENCES / report["sampling"][0]["sources_per_second"] / 3600, 1),
        "train_both_directions_gpu_hours": round(2 * default_steps / steps_per_second / 3600, 1),
        "train_from": (f"{default_steps} steps (nmt.train.train_steps default) at the measured "
                       f"{fastest_train['precision']} rate ({steps_per_second:.2f} steps/s), batch "
                       f"{args.batch_tokens} tokens"),
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
