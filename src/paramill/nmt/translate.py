"""Back-translation of one bitext shard: the Czech side into English, with CTranslate2 or
(on a GPU CTranslate2 cannot use) OpenNMT-py's model in torch (:mod:`paramill.nmt.engine`).

``beam``: beam search, the ``n_best`` best kept (ParaNMT: beam 12, 1-best).
``kbest``: every entry of the final beam is a candidate (Wieting 2017: beam 50).

Each candidate's ``fwd_nll`` is its translation cost: the negative log-likelihood per
target subword, end-of-sentence included (CTranslate2 returns the summed log-probability
when ``length_penalty`` and ``min_decoding_length`` are 0, so the cost is exact; otherwise
the search's score is penalised or renormalised (end-of-sentence masked at the first step)
and the cost is recomputed with ``score_batch``, one cheap forward pass; the opennmt-py engine
masks end-of-sentence without renormalising, so its scores are exact whenever
``length_penalty`` is 0). A hypothesis cut
at ``max_decoding_length`` has no end-of-sentence and is normalised by its own length.
Empty outputs are dropped. The output appears only when the whole shard is done. A batch
that runs out of GPU memory is decoded again at half the ``batch_size``, which the rest of
the shard keeps (:func:`paramill.device.fit_gpu_memory`; in the provenance: a batch's
padding can change CTranslate2's outputs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from paramill.run import device
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.run.job import table_job
from paramill.nmt.engine import Engine, announce, open_translator, select
from paramill.nmt.tables import CANDIDATES
from paramill.nmt.subwords import Segmenter, check_fits
from paramill.run.plan import DISTINCT_SHARE
from paramill.run.progress import note
from paramill.provenance import Run
from paramill.config.typed import Device, setting, Settings

METHODS = ("beam", "kbest")  # "sample" is paramill.nmt.sampling


@dataclass(frozen=True)
class TranslateSettings(Settings):
    method: Literal["beam", "kbest", "sample"] = setting(
        "beam",
        "beam: keep n_best of the beam (ParaNMT: 1-best of 12); kbest: every entry of the beam "
        "(Wieting 2017: 50); sample: ParaBank 2's constrained top-k sampling, dual scoring and "
        "clustering (settings in nmt.sample).")
    beam_size: int = setting(12, "Beam size.", minimum=1)
    n_best: int = setting(1, "Hypotheses kept per source with method beam.", minimum=1)
    batch_size: int = setting(
        64, "A decoding batch's size, in batch_type units: sentences, or source subwords.", minimum=1)
    batch_type: Literal["examples", "tokens"] = setting(
        "examples", 'examples: batch_size sentences a decoding batch; tokens: as many of the '
                    "shard's sources, longest first, as fit batch_size padded subwords, a bound "
                    "on a batch's memory that long sentences cannot break (e.g. batch_size 2048)."
                    ' Changing it re-translates every shard.', quiet_default=True)
    length_penalty: float = setting(
        0.0, "Length penalty (0 = off, as onmt_translate's default).", minimum=0)
    max_decoding_length: int = setting(256, "Maximum output length in subwords.", minimum=1)
    min_decoding_length: int = setting(
        1, "Minimum output length (1: never an empty translation; 0: the search's scores are the "
        "exact costs, no rescoring).", minimum=0)
    compute_type: Literal["default", "auto", "int8", "int8_float32", "int8_float16",
                          "int8_bfloat16", "int16", "float16", "bfloat16", "float32"] = setting(
        "default", "CTranslate2 compute type: default, int8, float16, ...")
    device: Device = setting("auto", "auto: cuda when a GPU is visible, else cpu.")
    engine: Literal["auto", "ctranslate2", "opennmt-py"] = setting(
        "auto",
        "auto: CTranslate2, or on a GPU it cannot use (no CUDA 12 cuBLAS) OpenNMT-py's model in "
        "torch; ctranslate2 or opennmt-py: that engine only.")

    def hypotheses(self) -> int:
        return self.beam_size if self.method == "kbest" else self.n_best


def load_translator(model_dir: str | Path, settings: TranslateSettings, threads: int,
                    engine: Engine | None = None):
    """A translator on the device ``settings.device`` resolves to, from the engine
    ``settings.engine`` resolves to (:func:`paramill.nmt.engine.select`; a GPU no engine can use
    is an error, not the CPU)."""
    return open_translator(model_dir, engine or select(settings.device, engine=settings.engine,
                                                        models=[model_dir]),
                           threads, settings.compute_type)


def translate_pieces(translator, pieces: list[list[str]], settings: TranslateSettings
                     ) -> list[list[tuple[list[str], float]]]:
    """Per source: [(target pieces, NLL per target piece incl. EOS)], best first."""
    if settings.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {settings.method!r}")
    n = settings.hypotheses()
    if n > settings.beam_size:
        raise ValueError(f"n_best ({n}) cannot exceed beam_size ({settings.beam_size})")
    results = translator.translate_batch(
        pieces, beam_size=settings.beam_size, num_hypotheses=n, return_scores=True,
        length_penalty=settings.length_penalty, max_decoding_length=settings.max_decoding_length,
        min_decoding_length=settings.min_decoding_length, max_batch_size=settings.batch_size,
        batch_type=settings.batch_type)
    out = []
    for src, result in zip(pieces, results):
        hyps = result.hypotheses
        if settings.length_penalty == 0 and (settings.min_decoding_length == 0
                                             or getattr(translator, "exact_scores", False)):
            scores = result.scores
        else:  # the returned score is length-penalised or renormalised: score plainly
            scored = translator.score_batch([src] * len(hyps), hyps, max_batch_size=settings.batch_size,
                                            batch_type=settings.batch_type)
            scores = [sum(s.log_probs[:len(h) + _eos(h, settings)]) for s, h in zip(scored, hyps)]
        out.append([(h, -score / (len(h) + _eos(h, settings))) for h, score in zip(hyps, scores)])
    return out


def read_rows(settings: TranslateSettings) -> int:
    """Sources a ``translate_batch`` call gets (sorted by length and cut into batches there):
    eight batches of sentences, or of 16-subword sentences, and at least 256."""
    return max(256, settings.batch_size * 8 // (16 if settings.batch_type == "tokens" else 1))


def _eos(pieces: list[str], settings: TranslateSettings) -> int:
    """1 when the hypothesis ended with EOS (scored too), 0 when cut at the length limit."""
    return 0 if len(pieces) >= settings.max_decoding_length else 1


def _rows(batch: pa.RecordBatch, translator, src_seg: Segmenter, tgt_seg: Segmenter,
          settings: TranslateSettings) -> Iterator[dict[str, Any]]:
    pair_ids = batch.column("pair_id").to_pylist()
    refs = batch.column("en").to_pylist()
    sources = batch.column("cs").to_pylist()
    for pair_id, ref, hyps in zip(pair_ids, refs,
                                  translate_pieces(translator, src_seg.encode(sources), settings)):
        seen: set[str] = set()
        rank = 0
        for pieces, nll in hyps:
            text = tgt_seg.decode([pieces])[0] if pieces else ""
            if not text.strip() or text in seen:  # empty, or the same string again: skip
                continue
            seen.add(text)
            rank += 1
            yield {"pair_id": pair_id, "candidate_id": f"{pair_id}:{settings.method}:{rank}",
                   "en_ref": ref, "candidate": text, "method": settings.method, "rank": rank,
                   "fwd_nll": nll, "bwd_nll": None, "n_tokens": len(pieces),
                   "constraint_set": None, "cluster": None}


def translate_shard(shard: str | Path, model_dir: str | Path, src_spm: str | Path,
                    tgt_spm: str | Path, out: str | Path, settings: TranslateSettings = TranslateSettings(),
                    threads: int = 1, rule: str = "nmt_translate") -> dict[str, Any]:
    """Translate the ``cs`` column of ``shard``; write the candidate table to ``out``."""
    # before any work: a GPU no engine can use stops here
    engine = select(settings.device, engine=settings.engine, models=[model_dir])
    announce(engine, "nmt translate")
    src_seg, tgt_seg = Segmenter(src_spm), Segmenter(tgt_spm)
    check_fits(src_seg, tgt_seg, model_dir)
    translator = load_translator(model_dir, settings, threads, engine)
    n_in = parquet_rows([shard])
    run = Run(rule=rule, params={**asdict(settings), "threads": threads},
              inputs=[shard, model_dir, src_spm, tgt_spm])
    target_pieces, done, halved, best = 0, 0, [], Counter()
    size = settings.batch_size  # halved for the rest of the shard when a batch does not fit
    with table_job(run, out, CANDIDATES, f"translate {Path(shard).name}", n_in, unit="sent") as job:
        for batch in iter_parquet_batches([shard], batch_size=read_rows(settings),
                                          columns=["pair_id", "cs", "en"]):
            rows, size = device.fit_gpu_memory(
                lambda n: list(_rows(batch, translator, src_seg, tgt_seg, replace(settings, batch_size=n))),
                size, "batch_size", "paramill nmt translate", f"{Path(shard).name} row {done}", halved)
            job.write(pa.Table.from_pylist(rows, schema=CANDIDATES), done=batch.num_rows)
            target_pieces += sum(r["n_tokens"] for r in rows if r["rank"] == 1)
            best.update(r["candidate"] for r in rows if r["rank"] == 1)
            done += batch.num_rows
        seconds = job.elapsed
        stats = {"sources": n_in, "candidates": job.rows, "seconds": round(seconds, 3),
                 "sentences_per_second": round(n_in / seconds, 2) if seconds else None,
                 "target_tokens_per_second": round(target_pieces / seconds, 2) if seconds else None,
                 "device": engine.device, "engine": engine.record(), "out_of_gpu_memory": halved}
        job.extra["translation"] = stats
    note(distinct_line("nmt translate", best))
    return stats


def distinct_line(what: str, best: Counter) -> str:
    """How many of a shard's best translations are distinct, and the one repeated most: a
    model too small or too little trained for its corpus says the same few sentences."""
    n = sum(best.values())
    if not n:
        return f"{what}: no source translated"
    text, count = min(best.items(), key=lambda item: (-item[1], item[0]))
    share = len(best) / n
    line = (f"{what}: {len(best):,} distinct best translations of {n:,} sources ({share:.1%}); "
            f"the most repeated, {count:,} times: {text!r}")
    if share < DISTINCT_SHARE:
        line = (f"{what}: warning: degenerate translations, {len(best):,} distinct of {n:,} "
                f"({share:.1%}); the most repeated, {count:,} times: {text!r}. The models are "
                "likely too small or too little trained for this corpus")
    return line
