"""Diversity of paraphrases by rank (ParaBank 2 Tables 1 and 2).

Against the reference, for each rank r (1..n): 1 − BLEU (sacrebleu's corpus BLEU of the
rank-r paraphrases against their references, on SentencePiece pieces), the mean bag-of-pieces
intersection over union (multisets: Σ min / Σ max of the piece counts), and the mean length
ratio (pieces of the paraphrase / pieces of the reference). Collective diversity: the same
two measures between a source's own paraphrases, for every pair of ranks (r < s, rank s
scored against rank r), and their mean.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from paramill.io import write_json
from paramill.job import output_job
from paramill.nmt.subwords import Segmenter
from paramill.provenance import Run


def bag_iou(a: list[str], b: list[str]) -> float:
    ca, cb = Counter(a), Counter(b)
    union = sum((ca | cb).values())
    return sum((ca & cb).values()) / union if union else 1.0


def _bleu(hyps: list[list[str]], refs: list[list[str]]) -> float:
    import sacrebleu

    if not hyps:
        return float("nan")
    # pieces are tokens by design: force stops sacrebleu's warning, three lines a rank
    # pair, that lines ending in " ." look tokenised (the score is the same)
    return sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                 tokenize="none", force=True).score / 100.0


def _measures(hyps: list[list[str]], refs: list[list[str]]) -> dict[str, float]:
    return {"one_minus_bleu": round(1.0 - _bleu(hyps, refs), 4),
            "bag_iou": round(sum(bag_iou(h, r) for h, r in zip(hyps, refs)) / len(hyps), 4),
            "length_ratio": round(sum(len(h) / max(1, len(r)) for h, r in zip(hyps, refs)) / len(hyps), 4)}


def diversity(candidate_files: list[str | Path], spm: str | Path) -> dict[str, Any]:
    """Measures from the candidate tables (rank = the paraphrase's rank for its source)."""
    seg = Segmenter(spm)
    frame = (pl.scan_parquet([str(p) for p in candidate_files])
             .select("pair_id", "en_ref", "candidate", "rank").collect())
    by_rank: dict[int, tuple[list, list]] = {}
    per_source: dict[str, dict[int, list[str]]] = {}
    for pair_id, ref, cand, rank in frame.iter_rows():
        h, r = seg.encode([cand, ref])
        hyps, refs = by_rank.setdefault(rank, ([], []))
        hyps.append(h)
        refs.append(r)
        per_source.setdefault(pair_id, {})[rank] = h
    ranks = sorted(by_rank)
    rows = [{"rank": k, "n": len(by_rank[k][0]), **_measures(*by_rank[k])} for k in ranks]
    pairs = []
    for r, s in itertools.combinations(ranks, 2):
        both = [(v[s], v[r]) for v in per_source.values() if r in v and s in v]
        if both:
            m = _measures([a for a, _ in both], [b for _, b in both])
            pairs.append({"ranks": f"{r}-{s}", "n": len(both), "one_minus_bleu": m["one_minus_bleu"],
                          "bag_iou": m["bag_iou"]})
    collective = ({k: round(sum(p[k] for p in pairs) / len(pairs), 4) for k in ("one_minus_bleu", "bag_iou")}
                  if pairs else None)
    return {"by_rank": rows, "between_ranks": pairs, "collective": collective,
            "sources": len(per_source), "candidates": frame.height}


def write_diversity(candidate_files: list[str | Path], spm: str | Path, tsv: str | Path,
                    json_out: str | Path, png: str | Path | None = None, plot=None,
                    rule: str = "diversity_stats") -> dict[str, Any]:
    run = Run(rule=rule, params={}, inputs=[*candidate_files, spm])
    result = diversity(candidate_files, spm)
    outs = [tsv, json_out] + ([png] if png else [])
    with output_job(run, *outs, rows_in=result["candidates"], each=True) as job:
        files = job.paths
        pl.DataFrame(result["by_rank"]).write_csv(files[0], separator="\t")
        write_json(files[1], result)
        if png:
            plot(result, files[2])
        job.rows_out = len(result["by_rank"])
    return result
