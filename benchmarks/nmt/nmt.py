#!/usr/bin/env python3
"""Faithfulness and speed of CTranslate2 decoding against OpenNMT-py's own translator.

On the same model, input and beam (length penalty off), translate the Czech side of the
cleaned sample shards with `onmt_translate` and with CTranslate2 (the converted model),
and report the share of identical outputs, sentences/s and target tokens/s for each, and
the throughput ratio. Extrapolates the hours for a CzEng-size run (51M sentences) from the
measured CTranslate2 speed: GPU-hours when a GPU is visible, otherwise CPU-hours (labelled).

Needs a trained model: run the default pipeline first (`make run`), or pass --checkpoint,
--src-spm, --tgt-spm and --shards.

    python benchmarks/nmt/nmt.py --out benchmarks/out/nmt.json
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import emit  # noqa: E402  (benchmarks/ is on sys.path when run)

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from paramill.run import device  # noqa: E402
from paramill.nmt.convert import convert  # noqa: E402
from paramill.nmt.subwords import Segmenter  # noqa: E402
from paramill.nmt.translate import TranslateSettings, load_translator, translate_pieces  # noqa: E402

CZENG_SENTENCES = 51_000_000


def onmt_translate(checkpoint: Path, src: Path, out: Path, beam: int, batch: int, threads: int,
                   max_length: int = 256, min_length: int = 0) -> float:
    # OpenNMT-py's translator through paramill's launcher (placeholders for the packages only
    # its unused transforms import)
    tool = [sys.executable, "-m", "paramill.nmt.launch", "translate", "1"]
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    subprocess.run([*tool, "-model", str(checkpoint), "-src", str(src), "-output", str(out),
                    "-beam_size", str(beam), "-batch_size", str(batch), "-batch_type", "sents",
                    "-length_penalty", "none", "-max_length", str(max_length),
                    "-min_length", str(min_length), "-gpu", "-1"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - start


#: what users decode with (Transformer base, 20k vocabularies)
BASE = {"layers": 6, "hidden_size": 512, "heads": 8, "ff_size": 2048, "dropout": 0.1}
BASE_VOCAB = 20_000


def padded_vocab(spm_model: str, path: Path, size: int) -> None:
    """An OpenNMT vocabulary of ``size`` entries: every SentencePiece piece, then filler
    tokens (the sample cannot train a 20k SentencePiece model; the filler gives the
    embedding and output layers their real size, which is what decoding speed depends on)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=spm_model)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
              if not (sp.is_control(i) or sp.is_unknown(i))]
    pieces += [f"<filler{i}>" for i in range(size - len(pieces))]
    path.write_text("".join(f"{p}\t1\n" for p in pieces[:size]), encoding="utf-8")


def build_base_model(data: Path, src_spm: str, tgt_spm: str, work: Path, steps: int) -> Path:
    """A Transformer-base CS->EN checkpoint with 20k vocabularies, trained ``steps`` steps
    on the sample by paramill's own training path (its workspace prepared with the padded
    vocabularies, so OpenNMT-py's vocabulary step is skipped)."""
    from paramill.nmt import train as nmt_train

    model = nmt_train.ModelSettings(**BASE)
    settings = nmt_train.NmtTrainSettings(train_steps=steps, valid_steps=steps, save_checkpoint_steps=steps,
                                       batch_size=1024, warmup_steps=steps)
    work.mkdir(parents=True, exist_ok=True)
    (work / "settings.sha256").write_text(
        nmt_train._fingerprint("cs-en", data, src_spm, tgt_spm, model, settings) + "\n")
    padded_vocab(src_spm, work / "vocab.src", BASE_VOCAB)
    padded_vocab(tgt_spm, work / "vocab.tgt", BASE_VOCAB)
    out = work / "model.pt"
    start = time.perf_counter()
    nmt_train.train("cs-en", data, src_spm, tgt_spm, out, work, model, settings, rule="benchmark")
    print(f"base model: {steps} steps in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return out


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
    parser.add_argument("--model-size", choices=["sample", "base"], default="sample",
                        help="sample: the trained sample model (--checkpoint); base: build a "
                             "Transformer-base model (6x512, 8 heads, 20k vocabularies) from the "
                             "sample's data in a few steps and decode with it")
    parser.add_argument("--base-steps", type=int, default=20, help="training steps of the base model")
    parser.add_argument("--max-length", type=int, default=256,
                        help="maximum output length, both tools (a barely trained model may not stop)")
    parser.add_argument("--min-length", type=int, default=0,
                        help="minimum output length, both tools (with --max-length equal to it, every "
                             "output has that length: a barely trained model's speed at a real length)")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="paramill-bench-nmt-base-")
    if args.model_size == "base":
        if not Path("work/nmt/data").exists():
            raise SystemExit("no sample NMT data: run `make run` first")
        args.checkpoint = str(build_base_model(Path("work/nmt/data"), args.src_spm, args.tgt_spm,
                                               Path(scratch.name) / "train", args.base_steps))

    files = sorted(glob.glob(args.shards))
    if not files or not Path(args.checkpoint).exists():
        raise SystemExit("no model or shards: run `make run` first, or pass --checkpoint/--shards")
    sources = pl.scan_parquet(files).select("cs").collect()["cs"].to_list()
    if args.limit:
        sources = sources[: args.limit]
    src_seg, tgt_seg = Segmenter(args.src_spm), Segmenter(args.tgt_spm)
    pieces = src_seg.encode(sources)
    settings = TranslateSettings(beam_size=args.beam, n_best=1, batch_size=args.batch,
                                 length_penalty=0.0, max_decoding_length=args.max_length,
                                 min_decoding_length=args.min_length, device="auto")
    with tempfile.TemporaryDirectory(prefix="paramill-bench-nmt-") as tmp:
        tmp = Path(tmp)
        convert(args.checkpoint, args.src_spm, args.tgt_spm, tmp / "ct2")
        ct2 = {}
        for compute in ("float32", "int8"):  # the same converted model, quantised at load
            run_settings = dataclasses.replace(settings, compute_type=compute)
            translator = load_translator(tmp / "ct2", run_settings, threads=args.threads)
            translate_pieces(translator, pieces[:64], run_settings)  # warm-up
            start = time.perf_counter()
            hyps = translate_pieces(translator, pieces, run_settings)
            ct2[compute] = (time.perf_counter() - start,
                            [tgt_seg.decode([h[0][0]])[0] if h else "" for h in hyps],
                            sum(len(h[0][0]) for h in hyps if h))
        # the other way to use the threads: one batch at a time on all of them (for a large
        # model this may beat paramill's one-batch-per-thread default; measured, not assumed)
        import ctranslate2

        intra = ctranslate2.Translator(str(tmp / "ct2"), device="cpu", inter_threads=1,
                                       intra_threads=args.threads, compute_type="float32")
        start = time.perf_counter()
        intra_hyps = translate_pieces(intra, pieces, settings)
        ct2["float32_intra"] = (time.perf_counter() - start,
                                [tgt_seg.decode([h[0][0]])[0] if h else "" for h in intra_hyps], 0)
        ct2_seconds, ct2_out, target_tokens = ct2["float32"]

        src_file = tmp / "src.sp"
        src_file.write_text("".join(" ".join(p) + "\n" for p in pieces))
        small = tmp / "small.sp"
        small.write_text("".join(" ".join(p) + "\n" for p in pieces[:8]))
        overhead = onmt_translate(Path(args.checkpoint), small, tmp / "small.out", args.beam,
                                  args.batch, args.threads, args.max_length, args.min_length)
        onmt_wall = onmt_translate(Path(args.checkpoint), src_file, tmp / "onmt.out", args.beam,
                                   args.batch, args.threads, args.max_length, args.min_length)
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
        "model": (f"Transformer base ({BASE['layers']}x{BASE['hidden_size']}, {BASE['heads']} heads, "
                  f"ff {BASE['ff_size']}, {BASE_VOCAB} vocabularies), {args.base_steps} training steps "
                  "on the sample" if args.model_size == "base" else str(args.checkpoint)),
        "max_length": args.max_length, "min_length": args.min_length,
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
        "ctranslate2_one_batch_on_all_threads": {
            "seconds": round(ct2["float32_intra"][0], 2),
            "sentences_per_second": round(n / ct2["float32_intra"][0], 1),
            "throughput_ratio_to_onmt": round((n / ct2["float32_intra"][0]) / (n / onmt_seconds), 2)},
        "ctranslate2_int8": {
            "seconds": round(ct2["int8"][0], 2), "sentences_per_second": round(n / ct2["int8"][0], 1),
            "identical_to_float32": round(sum(a == b for a, b in zip(ct2["int8"][1], ct2_out)) / n, 4),
            "throughput_ratio_to_onmt": round((n / ct2["int8"][0]) / (n / onmt_seconds), 2)},
        "extrapolation": {
            "sentences": CZENG_SENTENCES,
            ("gpu_hours" if dev == "cuda" else "cpu_hours_this_machine"):
                round(CZENG_SENTENCES / ct2_rate / 3600, 1),
            ("cpu_hours_this_machine_int8" if dev != "cuda" else "gpu_hours_int8"):
                round(CZENG_SENTENCES / (n / ct2["int8"][0]) / 3600, 1),
            "note": ("measured on a GPU" if dev == "cuda" else
                     "no GPU here: CPU figures, for the model measured; measure GPU-hours on a "
                     "GPU node (this script, same options)"),
        },
    }
    scratch.cleanup()
    emit(report, args.out)


if __name__ == "__main__":
    main()
