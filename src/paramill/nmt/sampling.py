"""Diverse paraphrases (ParaBank 2 §2, §3.3): constrained top-k sampling, dual scoring,
Levenshtein clustering.

For each Czech source with English reference:

1. **Constraints.** ``constraint_sets`` (5) random subsets of the reference's word tokens
   (``constraint_fraction`` of them, at least one), seeded per pair; each token becomes its
   SentencePiece Viterbi segmentation, passed to CTranslate2 as ``suppress_sequences``.
   Because that option holds for a whole ``translate_batch`` call, every (source, set) is
   its own call: ``per_call`` asks for ``samples`` hypotheses of one source, ``replicate``
   repeats the source ``samples`` times with one hypothesis each (both measured,
   benchmarks/records/README.md; ``per_call`` is the default). The opennmt-py engine takes a suppression
   list per source, so it samples every (source, set) of a block in one batch.
2. **Sampling.** ``beam_size=1``, ``sampling_topk`` = ``k`` (10), ``samples`` (30) per set:
   150 candidates per source; identical strings are kept once (the best-scored copy).
3. **Dual scoring.** ``fwd_nll`` (CS→EN) and ``bwd_nll`` (EN→CS: the Czech source given the
   candidate), each the model's own mean NLL per token with EOS (``score_batch``) of the
   candidate's Viterbi segmentation; the score is their sum; candidates above
   ``threshold`` (3.5) are dropped.
4. **Clustering.** :mod:`paramill.nmt.cluster`: ``clusters`` (8) centres furthest-first
   plus the reference's cluster; the best-scored candidate of each non-reference cluster,
   ranked, top ``n`` (5), with its cluster id.

Determinism: CTranslate2 seeds the random generator of a translator's worker thread when the
thread starts, so each block of ``block`` sources gets a translator of its own, created just
after ``set_random_seed(seed of the block)`` (the seed hashes ``seed`` and the block's first
``pair_id``; the opennmt-py engine reseeds its own generator with the same value). Blocks run in worker processes (``threads``), so the output does not depend
on how many run at once. On a GPU one process runs the blocks in turn.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import random
import re
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from paramill.run.device import fit_gpu_memory
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.run.job import table_job
from paramill.nmt.cluster import best_per_cluster, cluster_units, kmedoids
from paramill.nmt.engine import Engine, announce, open_translator, select
from paramill.nmt.tables import CANDIDATES
from paramill.nmt.score import load_scorer, nll_per_token
from paramill.nmt.subwords import Segmenter, check_fits, model_vocabulary
from paramill.run.pools import lost_workers
from paramill.provenance import Run
from paramill.config.typed import Device, setting, Settings
from paramill.text import tokenize

STRATEGIES = ("per_call", "replicate")
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class SampleSettings(Settings):
    constraint_sets: int = setting(5, "Sets of random negative constraints per source.", minimum=1)
    constraint_fraction: float = setting(
        0.3,
        "Share of the reference's word tokens in each set (at least one; the paper does not give "
        "its value).", exclusiveMinimum=0, maximum=1)
    k: int = setting(10, "Top-k sampling.", minimum=1)
    samples: int = setting(30, "Samples per constraint set.", minimum=1)
    threshold: float = setting(3.5, "Candidates whose fwd_nll + bwd_nll is above this are dropped.")
    clusters: int = setting(
        8,
        "Clusters besides the reference's (ParaBank 2 §3.3 used 8 including it: set 7 to match).",
        minimum=1)
    n: int = setting(5, "Paraphrases kept per source.", minimum=1)
    max_iter: int = setting(20, "k-means iterations at most.", minimum=1)
    strategy: Literal["per_call", "replicate"] = setting(
        "per_call",
        "One translate_batch call per (source, constraint set): per_call asks for `samples` "
        "hypotheses, replicate repeats the source.")
    block: int = setting(
        256, "Sources per seeded block (one translator each; larger on GPU).", minimum=1)
    batch_size: int = setting(64, "Scoring batch size.", minimum=1)
    max_decoding_length: int = setting(256, "Maximum output length in subwords.", minimum=1)
    seed: int = setting(13, "Seed of constraints and sampling.")
    device: Device = setting("auto", "auto: cuda when a GPU is visible.")
    engine: Literal["auto", "ctranslate2", "opennmt-py"] = setting(
        "auto", "As nmt.translate.engine: auto is CTranslate2, or OpenNMT-py's model in torch on a "
        "GPU CTranslate2 cannot use.")


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=4).digest(), "big")


def constraint_tokens(reference: str, n_sets: int, fraction: float, seed: int, pair_id: str
                      ) -> list[list[str]]:
    """``n_sets`` seeded random subsets of the reference's word tokens (punctuation never)."""
    words = list(dict.fromkeys(t for t in tokenize(reference) if _WORD.search(t)))
    rng = random.Random(_seed(seed, pair_id, "constraints"))
    sets = []
    for _ in range(n_sets):
        if not words:
            sets.append([])
            continue
        size = max(1, round(fraction * len(words)))
        sets.append(sorted(rng.sample(words, min(size, len(words))), key=words.index))
    return sets


def suppressions(tokens: list[str], segmenter: Segmenter, vocabulary: set[str] | None = None
                 ) -> list[list[str]]:
    """Viterbi segmentations of the constraint tokens, as they appear inside a sentence
    (word-initial, with the ``▁`` mark) — the sequences CTranslate2 must not produce. A
    segmentation with a piece outside the model's target vocabulary cannot be produced
    anyway (and CTranslate2 refuses it), so it is left out."""
    out = [pieces for pieces in segmenter.encode(tokens) if pieces]
    if vocabulary is not None:
        out = [pieces for pieces in out if all(p in vocabulary for p in pieces)]
    return out


def target_vocabulary(model_dir: str | Path) -> set[str] | None:
    """The target (or shared) vocabulary of a CTranslate2 model directory."""
    tokens = model_vocabulary(model_dir, "target")
    return None if tokens is None else set(tokens)


def contains(pieces: list[str], sequence: list[str]) -> bool:
    m = len(sequence)
    return any(pieces[i:i + m] == sequence for i in range(len(pieces) - m + 1))


def sample_set(translator, source: list[str], suppress: list[list[str]], settings: SampleSettings
               ) -> list[list[str]]:
    """``samples`` top-k samples (target pieces) of one source under one constraint set."""
    common = dict(beam_size=1, sampling_topk=settings.k, suppress_sequences=suppress or None,
                  max_decoding_length=settings.max_decoding_length, return_scores=False)
    if settings.strategy == "per_call":
        result = translator.translate_batch([source], num_hypotheses=settings.samples, **common)
        return [h for h in result[0].hypotheses]
    if settings.strategy == "replicate":
        results = translator.translate_batch([source] * settings.samples, num_hypotheses=1,
                                             max_batch_size=settings.batch_size, **common)
        return [r.hypotheses[0] for r in results]
    raise ValueError(f"nmt.sample.strategy must be one of {STRATEGIES}, not {settings.strategy!r}")


@dataclass
class _Models:
    fwd: str
    bwd: str
    cs_spm: str
    en_spm: str


_STATE: dict[str, Any] = {}


def _init(models: _Models, settings: SampleSettings, engine: Engine) -> None:
    _STATE.pop("score_batch", None)  # a size halved for another shard's card is not this one's
    _STATE.update(models=models, settings=settings, cs=Segmenter(models.cs_spm),
                  vocabulary=target_vocabulary(models.fwd),
                  en=Segmenter(models.en_spm), engine=engine,
                  fwd_scorer=load_scorer(models.fwd, engine=engine),
                  bwd_scorer=load_scorer(models.bwd, engine=engine))


def sample_block(translator, sources: list[list[str]], banned: list[list[list[str]]],
                 settings: SampleSettings) -> list[list[list[str]]]:
    """The samples of each (source, constraint set): one batch for the whole block where the
    engine takes a suppression list per source (the opennmt-py engine's ``sample_sets``),
    else one CTranslate2 call per (source, set) (:func:`sample_set`)."""
    if hasattr(translator, "sample_sets"):
        return translator.sample_sets(sources, banned, settings.samples, settings.k,
                                      settings.max_decoding_length)
    return [sample_set(translator, src, ban, settings) for src, ban in zip(sources, banned)]


def process_block(block: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Sample, score and cluster one block of sources (in a worker process)."""
    models: _Models = _STATE["models"]
    settings: SampleSettings = _STATE["settings"]
    cs_seg: Segmenter = _STATE["cs"]
    en_seg: Segmenter = _STATE["en"]
    seed = _seed(settings.seed, block[0]["pair_id"], "sample") or 1
    if hasattr(_STATE["fwd_scorer"], "seed"):  # the opennmt-py engine: one model, reseeded per block
        translator = _STATE["fwd_scorer"]
        translator.seed(seed)
    else:  # CTranslate2 seeds a translator's thread when it starts: a translator per block
        translator = open_translator(models.fwd, _STATE["engine"], threads=1, seed=seed)
    stats = {"sources": len(block), "sampled": 0, "unique": 0, "below_threshold": 0, "output": 0}
    sources = cs_seg.encode([row["cs"] for row in block])
    jobs: list[tuple[int, int, list[list[str]]]] = []  # (row, constraint set, suppressed)
    for i, row in enumerate(block):
        sets = constraint_tokens(row["en"], settings.constraint_sets, settings.constraint_fraction,
                                 settings.seed, row["pair_id"])
        jobs.extend((i, set_id, suppressions(tokens, en_seg, _STATE["vocabulary"]))
                    for set_id, tokens in enumerate(sets))
    samples = sample_block(translator, [sources[i] for i, _, _ in jobs], [b for _, _, b in jobs], settings)
    found: list[dict[str, int]] = [{} for _ in block]  # per source: text -> its constraint set
    decoded = iter(en_seg.decode([h for hyps in samples for h in hyps]))  # one call for the block
    for (i, set_id, _), hyps in zip(jobs, samples):
        for hyp in hyps:
            stats["sampled"] += 1
            text = next(decoded)
            if hyp and text.strip() and text not in found[i]:
                found[i][text] = set_id
    # scored on the Viterbi segmentation of the text, so a candidate's score depends on its
    # text only (not on which segmentation the sampler happened to produce first); the whole
    # block in one call per direction
    texts = [list(f) for f in found]
    flat = [t for ts in texts for t in ts]
    segmented = iter(en_seg.encode(flat))
    hyps = [[next(segmented) for _ in ts] for ts in texts]
    pairs = [(sources[i], h) for i in range(len(block)) for h in hyps[i]]
    cs_side, en_side = [a for a, _ in pairs], [b for _, b in pairs]

    def both(size: int) -> tuple[list[float], list[float]]:
        return (nll_per_token(_STATE["fwd_scorer"], cs_side, en_side, size),
                nll_per_token(_STATE["bwd_scorer"], en_side, cs_side, size))

    halved: list[dict[str, Any]] = []  # a scoring batch out of GPU memory: the rest at half
    (fwd_all, bwd_all), _STATE["score_batch"] = fit_gpu_memory(
        both, _STATE.get("score_batch", settings.batch_size), "batch_size", "paramill nmt sample",
        f"the block from {block[0]['pair_id']}", halved)
    # the clustering units (lower-cased text) of every candidate and reference, in one call
    lowered = iter(en_seg.encode([t.lower() for t in flat] + [row["en"].lower() for row in block]))
    units_all = [[cluster_units(next(lowered)) for _ in ts] for ts in texts]
    references = [cluster_units(next(lowered)) for _ in block]
    rows: list[dict[str, Any]] = []
    at = 0
    for i, row in enumerate(block):
        fwd, bwd = fwd_all[at:at + len(texts[i])], bwd_all[at:at + len(texts[i])]
        at += len(texts[i])
        stats["unique"] += len(texts[i])
        keep = [j for j in range(len(texts[i])) if fwd[j] + bwd[j] <= settings.threshold]
        stats["below_threshold"] += len(keep)
        if not keep:
            continue
        clustering = kmedoids([units_all[i][j] for j in keep], references[i], settings.clusters,
                              settings.max_iter)
        scores = [fwd[j] + bwd[j] for j in keep]
        for rank, (c, cluster) in enumerate(best_per_cluster(clustering, scores, settings.n), start=1):
            j = keep[c]
            rows.append({"pair_id": row["pair_id"], "candidate_id": f"{row['pair_id']}:sample:{rank}",
                         "en_ref": row["en"], "candidate": texts[i][j], "method": "sample", "rank": rank,
                         "fwd_nll": fwd[j], "bwd_nll": bwd[j], "n_tokens": len(hyps[i][j]),
                         "constraint_set": found[i][texts[i][j]], "cluster": cluster})
    stats["output"] = len(rows)
    return rows, {**stats, "out_of_gpu_memory": halved}


def _blocks(shard: str | Path, size: int) -> Iterator[list[dict[str, Any]]]:
    for batch in iter_parquet_batches([shard], batch_size=size, columns=["pair_id", "cs", "en"]):
        yield batch.to_pylist()


def sample_shard(shard: str | Path, fwd_model: str | Path, bwd_model: str | Path,
                 cs_spm: str | Path, en_spm: str | Path, out: str | Path,
                 settings: SampleSettings = SampleSettings(), threads: int = 1,
                 rule: str = "nmt_translate") -> dict[str, Any]:
    """The diverse candidate table (up to ``n`` per source) of one bitext shard."""
    if settings.strategy not in STRATEGIES:
        raise ValueError(f"nmt.sample.strategy must be one of {STRATEGIES}, not {settings.strategy!r}")
    models = _Models(str(fwd_model), str(bwd_model), str(cs_spm), str(en_spm))
    n_in = parquet_rows([shard])
    run = Run(rule=rule, params={**asdict(settings), "threads": threads},
              inputs=[shard, fwd_model, bwd_model, cs_spm, en_spm])
    engine = select(settings.device, "nmt.sample", settings.engine, [fwd_model, bwd_model])  # before any work
    announce(engine, "nmt translate (sample)")
    workers = 1 if engine.device != "cpu" else max(1, threads)
    totals: dict[str, Any] = {"sources": 0, "sampled": 0, "unique": 0, "below_threshold": 0,
                              "output": 0, "out_of_gpu_memory": []}
    with table_job(run, out, CANDIDATES, f"sample {Path(shard).name}", n_in, unit="sent") as job:
        # the models opened here first: one a worker cannot read would break the pool in its
        # initializer (a worker "ended abruptly", naming nothing) rather than name the model;
        # the SentencePiece models checked against both once, not again in each worker
        cs, en = Segmenter(cs_spm), Segmenter(en_spm)
        check_fits(cs, en, fwd_model)
        check_fits(en, cs, bwd_model)
        _init(models, settings, engine)
        if workers == 1:
            results: Iterator = map(process_block, _blocks(shard, settings.block))
            pool = None
        else:
            _STATE.clear()
            # spawn, not fork: a forked child of a process that already ran CTranslate2 or
            # torch threads can hang
            pool = ProcessPoolExecutor(workers, initializer=_init, initargs=(models, settings, engine),
                                       mp_context=multiprocessing.get_context("spawn"))
            results = pool.map(process_block, _blocks(shard, settings.block))
        try:
            with (lost_workers(pool, f"{Path(shard).name} was sampled", "the translation "
                               "models and a block of sources with its samples")
                  if pool is not None else contextlib.nullcontext()):
                for rows, stats in results:
                    job.write(pa.Table.from_pylist(rows, schema=CANDIDATES), done=stats["sources"])
                    for key, value in stats.items():
                        totals[key] += value
        finally:
            if pool is not None:
                pool.shutdown()
        totals["seconds"] = round(job.elapsed, 2)
        totals["engine"] = engine.record()
        job.extra["sampling"] = totals
    return totals
