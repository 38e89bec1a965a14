#!/usr/bin/env python3
"""paramill's embedding training beside the authors' PyTorch reference, on the same pairs.

Side by side in one run, on the Twitter URL corpus train positives (the tokenised,
lowercased release; identical pairs dropped):

- **reference**: jwieting/paraphrastic-representations-at-scale (``fetch`` it; ``--reference``
  is a checkout). Its own ``preprocess/text2HDF5.py`` makes the HDF5 data and vocabulary, its
  own ``main.py`` trains (``--model avg``; the preprocessing needs one numpy-2 shim, see
  ``CHILD_PREPROCESS``), in a child process with ``PYTHONPATH`` holding the
  checkout and ``--deps`` (a ``pip install --target`` of ``h5py sacremoses``, which it
  needs). Its per-epoch STS evaluation reads the authors' STS folders, which are not here, so
  the child replaces ``models.evaluate_sts`` with a no-op before running ``main.py``; nothing
  else of it is changed.
- **paramill**: ``paramill.embed.train`` with the same model (word averaging), dimensions,
  batch, mega-batch size (fixed: the reference's annealing off), epochs, learning rate,
  margin and gradient clipping; for WORD twice, with paramill's initial embeddings
  (N(0, 0.1^2)) and with the reference's (torch's N(0, 1): ``embed.model.init_std: 1.0``).

With ``--units sp`` each side first trains its own SentencePiece model on the pairs: the
reference with its own ``preprocess/paranmt/preprocess_data.py`` (run as written, its input
already lower-cased), paramill with ``units: sp`` and the same SentencePiece settings.

Both trained models are scored by one function on STS Benchmark dev: each sentence
lower-cased and split by paramill's tokeniser (or, with ``--units sp``, by the model's own
SentencePiece model), units looked up in the model's vocabulary
(unknown ones skipped, as the reference's ``zero_unk``), embeddings averaged, cosine, Pearson
and Spearman x100. Pairs/s is pairs x epochs / the training loop's seconds (each tool's own
timer: the reference's "Total Time", paramill's ``seconds``), plus each side's wall time
and peak RSS as a child process. Both use the same threads (``--threads``).

    python benchmarks/embed/embed_reference.py --reference /tmp/refrepo --deps /tmp/refdeps \\
        [--megabatch 20] [--epochs 5] [--units word|sp] [--out benchmarks/out/embed_reference.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import PEAK_RSS_MB, REPO, SHARED, emit, machine, twitter_positive_pairs  # noqa: E402

CHILD_REFERENCE = """
import resource, sys, runpy
import models
models.evaluate_sts = lambda *a, **k: None   # the authors' STS folders are not here
import torch
torch.set_num_threads({threads})
sys.argv = ["main.py"] + {argv!r}
try:
    runpy.run_path("main.py", run_name="__main__")
finally:
    print("PEAK_RSS_MB", {peak})
"""

#: the reference's preprocessing, run as written; its ``np.array(list of ragged pairs)`` relied
#: on numpy < 1.24 making an object array by itself, which numpy 2 refuses, so ``np.array``
#: gets that old fallback and nothing else
CHILD_PREPROCESS = """
import runpy, sys
import numpy as np
_array = np.array
def array(obj, *a, **k):
    try:
        return _array(obj, *a, **k)
    except ValueError:
        return _array(obj, *a, dtype=object, **{{x: y for x, y in k.items() if x != "dtype"}})
np.array = array
sys.argv = ["text2HDF5.py", {data!r}, "2"]
runpy.run_path("preprocess/text2HDF5.py", run_name="__main__")
"""

CHILD_PARAMILL = """
import json, sys
sys.path.insert(0, {src!r})
from paramill.run import device
device.limit_threads({threads})
from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings, train
from paramill.embed.data import PairSource
s = EmbedTrainSettings(epochs={epochs}, batch_size={batch}, megabatch={megabatch}, margin=0.4,
                  learning_rate=0.001, grad_clip=1.0, scramble_rate=0.0, seed=1,
                  device={device!r})
summary = train(PairSource.from_files([{pairs!r}], drop_identical=False), {out!r},
                ModelSpec(components=({component!r},), dim={dim}, hidden={hidden}, init_std={init_std},
                          units={units!r}), s)
print("SUMMARY", json.dumps(summary))
print("PEAK_RSS_MB", {peak})
"""


def positives(out: Path) -> int:
    """The train positives as ``s1\ts2`` lines, spaces folded, identical pairs left out."""
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for x, y in twitter_positive_pairs(SHARED):
            x, y = " ".join(x.split()), " ".join(y.split())
            if x and y and x != y:
                fh.write(f"{x}\t{y}\n")
                n += 1
    return n


def run(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[str, float]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(cmd[:3])} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return done.stdout + done.stderr, wall


def sts_scores(vectors_of, sts: list[tuple[str, str, float]]) -> dict:
    from scipy.stats import pearsonr, spearmanr

    a = vectors_of([s1 for s1, _, _ in sts])
    b = vectors_of([s2 for _, s2, _ in sts])
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cos = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    gold = [g for _, _, g in sts]
    return {"pearson": round(100 * float(pearsonr(cos, gold)[0]), 2),
            "spearman": round(100 * float(spearmanr(cos, gold)[0]), 2), "n": len(sts)}


def splitter(sp_model: str | bytes | None = None):
    """Units of a sentence: paramill's lower-cased tokens, or (``sp_model``, a file or its
    bytes) the lower-cased sentence's SentencePiece pieces, as both tools' encoders make them."""
    if sp_model is None:
        sys.path.insert(0, str(REPO / "src"))
        from paramill.embed.features import words
        return words
    import sentencepiece as spm

    sp = (spm.SentencePieceProcessor(model_proto=sp_model) if isinstance(sp_model, bytes)
          else spm.SentencePieceProcessor(model_file=sp_model))
    return lambda s: sp.encode(s.lower(), out_type=str)


def averager(weights: np.ndarray, index: dict[str, int], units=None):
    """Mean of the known units' vectors (zeros when none is known); units: ``splitter()``."""
    units = units or splitter()

    def vectors_of(sentences: list[str]) -> np.ndarray:
        out = np.zeros((len(sentences), weights.shape[1]), dtype=np.float64)
        for i, s in enumerate(sentences):
            ids = [index[w] for w in units(s) if w in index]
            if ids:
                out[i] = weights[ids].mean(0)
        return out
    return vectors_of


def train_paramill(args, tmp: Path, data: Path, sts: list, init_std: float) -> dict:
    """paramill's training in a child process; its speed, memory and STS-B dev scores."""
    import torch

    model_path = tmp / f"paramill-{init_std}.pt"
    out, ours_wall = run([sys.executable, "-c", CHILD_PARAMILL.format(
        src=str(REPO / "src"), threads=args.threads, epochs=args.epochs, batch=args.batch,
        megabatch=args.megabatch, pairs=str(data), out=str(model_path), dim=args.dim,
        component={"word": "word", "lstm": "blstm", "trigram": "trigram"}[args.model],
        hidden=args.hidden, init_std=init_std, units=args.units, peak=PEAK_RSS_MB,
        device=args.device)], cwd=tmp,
        env={**os.environ, "PARAMILL_PROGRESS": "0"})
    summary = json.loads(re.search(r"SUMMARY (.*)", out).group(1))
    peak = float(re.search(r"PEAK_RSS_MB ([0-9.]+)", out).group(1))
    ours = {"init_std": init_std, "seconds": summary["seconds"], "wall_seconds": round(ours_wall, 1),
            "peak_rss_mb": round(peak), "pairs_per_second": summary["pairs_per_second"]}
    if args.model == "word":
        data_ckpt = torch.load(model_path, map_location="cpu", weights_only=True)
        weights = data_ckpt["state_dict"]["parts.0.embedding.weight"].numpy()
        index = {u: i for i, u in enumerate(data_ckpt["vocabs"][args.units]) if i > 1}
        proto = data_ckpt.get("sp_proto")
        units = splitter(proto.numpy().tobytes() if args.units == "sp" else None)
        ours["sts_benchmark_dev"] = sts_scores(averager(weights, index, units), sts)
    sys.path.insert(0, str(REPO / "src"))
    from paramill.embed.model import load_model
    from paramill.evaluate.sts import read, score
    own = score(load_model(model_path, "cpu"), read("stsbenchmark-dev", "dev", "stsbenchmark", args.sts))
    ours["sts_benchmark_dev_paramill_evaluator"] = {"pearson": own["pearson"],
                                                    "spearman": own["spearman"], "n": own["n"]}
    return ours


def stage(report: dict, out: str | None, key: str, figures: dict | None) -> None:
    """One side's figures as soon as they are measured: a line on stderr, and the report so
    far in ``--out`` (``"complete": false``), so a run cut off by a time limit still says
    what it measured."""
    report[key] = figures
    print(f"{key}: {json.dumps(figures)}", file=sys.stderr, flush=True)
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps({**report, "complete": False}, indent=2) + "\n")
        tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True,
                        help="checkout of jwieting/paraphrastic-representations-at-scale")
    parser.add_argument("--deps", required=True, help="pip --target folder with h5py, sacremoses")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--megabatch", type=int, default=20)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--model", choices=["word", "lstm", "trigram"], default="word",
                        help="word: averaging (both, STS by one shared scorer); lstm: the "
                             "reference's BiLSTM (directions concatenated) beside paramill's blstm "
                             "(directions averaged), hidden --hidden; trigram: paramill only (the "
                             "reference's main.py asserts ngrams == 0)")
    parser.add_argument("--hidden", type=int, default=150, help="LSTM hidden size (both)")
    parser.add_argument("--units", choices=["word", "sp"], default="word",
                        help="sp: SentencePiece pieces, each tool training its own model on the "
                             "pairs (the reference: its preprocess/paranmt/preprocess_data.py, "
                             "vocabulary 50,000 soft, coverage 0.995; paramill: units sp with "
                             "the same settings)")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="both sides train here: paramill's device, and the reference's "
                             "--gpu 1 on cuda (--gpu 0 on cpu)")
    parser.add_argument("--sts", default=str(SHARED / "stsbenchmark" / "sts-dev.csv"))
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch

    ref = Path(args.reference).resolve()
    try:
        commit = subprocess.run(["git", "-C", str(ref), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except FileNotFoundError:  # no git where it runs (a bare GPU machine): the carried note
        note = ref / "COMMIT"
        commit = note.read_text().strip() if note.exists() else ""
    sts = []
    for line in Path(args.sts).read_text(encoding="utf-8").splitlines():
        f = line.split("\t")
        if len(f) >= 7:
            sts.append((f[5], f[6], float(f[4])))
    report: dict = {"benchmark": "embedding training: paramill vs the authors' reference",
                    "machine": machine(), "threads": args.threads, "device": args.device,
                    "reference": {"repo": "jwieting/paraphrastic-representations-at-scale",
                                  "commit": commit},
                    "settings": {"model": args.model, "units": args.units, "dim": args.dim, "hidden": args.hidden, "batch": args.batch,
                                 "megabatch": args.megabatch, "epochs": args.epochs,
                                 "margin": 0.4, "lr": 0.001, "grad_clip": 1.0}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "train.txt"
        n = positives(data)
        report["pairs"] = n
        env = {**os.environ, "PYTHONPATH": f"{ref}:{args.deps}", "OMP_NUM_THREADS": str(args.threads)}
        # the reference: its preprocessing (SentencePiece first, for --units sp), then training
        prep_wall, ref_data, ref_sp = 0.0, data, None
        if args.units == "sp":
            _, prep_wall = run([sys.executable, str(ref / "preprocess" / "paranmt" / "preprocess_data.py"),
                                "--paranmt-file", data.name, "--name", "ref", "--lower-case", "0"],
                               cwd=tmp, env=env)
            ref_data, ref_sp = tmp / "train.final.txt", str(tmp / "paranmt.ref.model")
        _, wall = run([sys.executable, "-c", CHILD_PREPROCESS.format(data=str(ref_data))],
                      cwd=ref, env=env)
        prep_wall += wall
        reference = None
        if args.model != "trigram":
            argv = ["--data-file", str(ref_data.with_suffix(".h5")),
                    "--vocab-file", str(ref_data.with_suffix(".vocab")),
                    "--gpu", "1" if args.device == "cuda" else "0", "--model", "avg" if args.model == "word" else "lstm",
                    "--hidden-dim", str(args.hidden), "--dim", str(args.dim),
                    "--epochs", str(args.epochs), "--batchsize", str(args.batch),
                    "--megabatch-size", str(args.megabatch), "--megabatch-anneal", "0",
                    "--grad-clip", "1.0", "--lr", "0.001", "--delta", "0.4", "--save-final", "1",
                    "--save-interval", "0", "--outfile", str(tmp / "ref")]
            out, ref_wall = run([sys.executable, "-c", CHILD_REFERENCE.format(
                threads=args.threads, argv=argv, peak=PEAK_RSS_MB)], cwd=ref, env=env)
            seconds = float(re.search(r"Total Time: ([0-9.]+)", out).group(1))
            peak = float(re.search(r"PEAK_RSS_MB ([0-9.]+)", out).group(1))
            reference = {"seconds": round(seconds, 1), "wall_seconds": round(ref_wall, 1),
                         "preprocess_seconds": round(prep_wall, 1), "peak_rss_mb": round(peak),
                         "pairs_per_second": round(n * args.epochs / seconds, 1)}
            if args.model == "word":
                checkpoint = torch.load(tmp / f"ref_{args.epochs}.pt", map_location="cpu",
                                        weights_only=False)
                weights = checkpoint["state_dict"]["embedding.weight"].numpy()
                reference["sts_benchmark_dev"] = sts_scores(
                    averager(weights, checkpoint["vocab"], splitter(ref_sp)), sts)
            stage(report, args.out, "reference_run", reference)
        # paramill, same data file: its default initialisation, and (WORD) the reference's
        ours = train_paramill(args, tmp, data, sts, 0.1)
        stage(report, args.out, "paramill_run", ours)
        if args.model == "word":
            stage(report, args.out, "paramill_run_with_the_reference_init",
                  train_paramill(args, tmp, data, sts, 1.0))
    report.setdefault("reference_run", None)  # stage() put each measured side there
    if reference:
        report["ratio_pairs_per_second"] = round(ours["pairs_per_second"] / reference["pairs_per_second"], 2)
    if reference and "sts_benchmark_dev" in reference:
        ref_pearson = reference["sts_benchmark_dev"]["pearson"]
        report["sts_dev_pearson_difference"] = round(ours["sts_benchmark_dev"]["pearson"] - ref_pearson, 2)
        same = report["paramill_run_with_the_reference_init"]["sts_benchmark_dev"]["pearson"]
        report["sts_dev_pearson_difference_with_the_reference_init"] = round(same - ref_pearson, 2)
    report["complete"] = True
    emit(report, args.out)


if __name__ == "__main__":
    main()
