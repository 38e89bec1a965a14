#!/usr/bin/env python3
"""How faithful the opennmt-py engine (the stand-in on a GPU CTranslate2 cannot use) is to
CTranslate2, on the same converted model and sources.

Both engines decode through :func:`paramill.nmt.translate.translate_pieces` (what
``nmt translate`` runs), for each beam size and length penalty asked. Reported per setting:
how many 1-best outputs are the same, the largest difference of their costs (NLL per target
piece), and for each source where they differ, both 1-bests' log-probabilities under
CTranslate2's own scoring, raw and divided by their length (with EOS), so a reader sees which
search found the better hypothesis.

Needs a trained model: run the default pipeline first (`make run`).

    python benchmarks/nmt/nmt_standin.py --out benchmarks/records/nmt_standin-cpu.json
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import emit, machine  # noqa: E402  (benchmarks/ is on sys.path when run)

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from paramill.nmt.engine import open_translator, select  # noqa: E402
from paramill.nmt.subwords import Segmenter  # noqa: E402
from paramill.nmt.translate import TranslateSettings, translate_pieces  # noqa: E402

ENGINES = ("ctranslate2", "opennmt-py")


def compare(model: str, pieces: list[list[str]], beam: int, length_penalty: float,
            threads: int, device: str) -> dict:
    settings = TranslateSettings(beam_size=beam, n_best=1, length_penalty=length_penalty,
                                 device=device)
    translators = {e: open_translator(model, select(device, engine=e, models=[model]), threads,
                                      settings.compute_type) for e in ENGINES}
    best = {e: [h[0] for h in translate_pieces(t, pieces, settings)] for e, t in translators.items()}
    same = [i for i, (a, b) in enumerate(zip(*best.values())) if a[0] == b[0]]
    differing = []
    for i in sorted(set(range(len(pieces))) - set(same)):
        hyps = [best[e][i][0] for e in ENGINES]
        scored = translators["ctranslate2"].score_batch([pieces[i]] * 2, hyps)
        logprob = [sum(s.log_probs) for s in scored]
        differing.append({"source": i, **{
            e: {"pieces": len(h), "logprob": round(lp, 4), "logprob_per_piece": round(lp / (len(h) + 1), 4)}
            for e, h, lp in zip(ENGINES, hyps, logprob)}})
    return {"beam_size": beam, "length_penalty": length_penalty,
            "same_1best": len(same), "of": len(pieces),
            "max_cost_difference_same_1best": max(
                (abs(best["ctranslate2"][i][1] - best["opennmt-py"][i][1]) for i in same), default=None),
            "differing": differing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="work/nmt/cs-en/ct2", help="a converted model (nmt convert)")
    parser.add_argument("--src-spm", default="work/nmt/spm/cs.model")
    parser.add_argument("--shards", default="work/shards/grammar/shard-00000.parquet")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--beams", type=int, nargs="+", default=[12, 4])
    parser.add_argument("--length-penalties", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    files = sorted(glob.glob(args.shards))
    if not files or not Path(args.model).exists():
        raise SystemExit("no model or shards: run `make run` first, or pass --model/--shards")
    sources = pl.scan_parquet(files).select("cs").head(args.sentences).collect()["cs"].to_list()
    pieces = Segmenter(args.src_spm).encode(sources)
    runs = [compare(args.model, pieces, beam, lp, args.threads, args.device)
            for lp in args.length_penalties for beam in args.beams]
    emit({"benchmark": "opennmt-py engine (stand-in) vs CTranslate2: the same 1-best?",
          "machine": machine(), "model": args.model, "device": args.device,
          "threads": args.threads, "runs": runs}, args.out)


if __name__ == "__main__":
    main()
