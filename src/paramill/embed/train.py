"""Training with the margin loss of Wieting et al. (2016-2018).

For a paraphrase pair (s, s') and hardest negatives t, t' from the mega-batch:

    max(0, margin - cos(g(s), g(s')) + cos(g(s), g(t))) + max(0, margin - cos(g(s), g(s')) + cos(g(s'), g(t')))

A mega-batch pools M mini-batches; each sentence's negative is the most similar other
sentence in the pool (its own pair excluded), found with the current model without
gradients. M=1 is plain in-batch negatives. Recurrent components see sentences whose words
are shuffled with probability ``scramble_rate``. A checkpoint is written after every epoch,
so a killed job resumes at the next epoch with the same data order and random state (and
raising ``epochs`` continues a finished run).

The pairs are never all in memory: their unit ids are computed once into an id store on
disk and each epoch streams it back in shuffled buffers of ``buffer_pairs``
(:mod:`paramill.embed.data`); memory is the vocabularies, the model and one buffer.
"""

from __future__ import annotations

import functools
import itertools
import os
import resource
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from paramill.run import device
from paramill.embed.data import (PairSource, Waited, count_units, prefetched, run_buffers,
                                 write_ids)
from paramill.embed.megabatch import (LossPeek, averaging_steps, check_finite, negatives,
                                      recurrent_steps)
from paramill.embed.rawstore import one_pass, write_raw_store
from paramill.embed.graphstep import (EagerStep, GraphStep, PassGraphStep, ReplayedStep, adam)
from paramill.embed.model import (RNG, ModelSpec, build_from_counts, featurizers,
                                  needs_sentencepiece, sentencepiece_for)
from paramill.embed.resume import Checkpoints, resumed
from paramill.errors import InputError
from paramill.io.outputs import atomic_output, check_writable
from paramill.run.job import output_job
from paramill.run.progress import note, progress
from paramill.provenance import Run
from paramill.config.typed import Device, setting, Settings


#: pairs per row group of the id store (the unit the epoch order permutes)
CHUNK_PAIRS = 10_000

@dataclass(frozen=True)
class EmbedTrainSettings(Settings):
    epochs: int = setting(5, "Passes over the pairs.", minimum=1)
    batch_size: int = setting(100, "Pairs per mini-batch.", minimum=2)
    megabatch: int = setting(
        1, "Mini-batches pooled to find hardest negatives (M; 1 = in-batch).", minimum=1)
    margin: float = setting(0.4, "Margin of the hinge loss.", minimum=0)
    learning_rate: float = setting(0.001, "Adam learning rate.", exclusiveMinimum=0, maximum=1000)
    scramble_rate: float = setting(
        0.3, "Probability of shuffling a sentence's words (recurrent components only).", minimum=0,
        maximum=1)
    grad_clip: float = setting(1.0, "Gradient norm clipping (0 = off).", minimum=0)
    max_pairs: int = setting(0, "Train on at most this many pairs (0 = all).", minimum=0)
    max_chars: int = setting(
        1000, 'Leave out training pairs with a side longer than this many characters (0: keep '
              "all). A very long side (a pasted article) pads a recurrent model's every step to "
              'its length; ParaNMT trained on sentences of at most 30 tokens.', minimum=0)
    buffer_pairs: int = setting(
        100_000, "Pairs shuffled together in memory (bounds memory; at least the corpus size "
        "gives one shuffle of every pair). Training data is streamed from an id store on disk.",
        minimum=1)
    seed: int = setting(13, "Random seed.")
    linked_negatives: Literal["auto", "keep", "skip"] = setting(
        "auto", "Whether a pair's hardest negative may come from a pair linked to it by a shared "
                "sentence (tweets of one URL). keep: the papers' rule; skip: never; auto: skip "
                'for models with a recurrent component, keep for averaging ones (the methods page'
                ' says why).')
    device: Device = setting("auto", "auto: cuda when a GPU is visible.")
    recurrent_pass_rows: int = setting(
        0, 'Rows a recurrent model (LSTM, BLSTM, GRAN) takes in one pass of a step, sorted by '
           "length and padded to the pass's longest. 0: one pass of 4 x batch_size where the step"
           ' is replayed from CUDA graphs, else passes of batch_size. The same arithmetic either '
           'way.', minimum=0)
    cuda_graph: bool = setting(
        True, "On CUDA, replay an averaging model's (WORD, TRIGRAM) training step from one CUDA "
              'graph: one launch a step instead of about a hundred, the same arithmetic. Turn off'
              ' to launch every operation one by one (for debugging).', launch=True)
    recurrent_cuda_graph: bool = setting(
        False, "On CUDA, replay a recurrent model's (LSTM, BLSTM, GRAN) step from a CUDA graph "
               'recorded for each padded width (up to 24, each with its own memory). Needs one '
               'pass a step: recurrent_pass_rows 0 or at least 4 x batch_size.', launch=True)
    tf32: bool = setting(
        False, "On CUDA, run the matrix products outside cuDNN (GRAN's gates, the negatives' "
        "similarities) in TF32 (torch.backends.cuda.matmul.allow_tf32) during training, as "
        "cuDNN's LSTM already does by torch's default. Off: full FP32.")
    checkpoint_minutes: float = setting(
        30.0, "Minutes between checkpoints within an epoch, written at the next mega-batch's end "
              "(0: at epochs' ends only). A killed job resumes there. Lower it where jobs are "
              'killed without warning; SIGTERM always writes one.', minimum=0, launch=True)

    def __post_init__(self):
        if self.recurrent_cuda_graph and 0 < self.recurrent_pass_rows < 4 * self.batch_size:
            raise ValueError(
                f"recurrent_cuda_graph replays one pass a step: set recurrent_pass_rows to at "
                f"least 4 x batch_size ({4 * self.batch_size}), not {self.recurrent_pass_rows}")

    def replays(self, dev: str, recurrent: bool) -> bool:
        """Whether training replays its steps from CUDA graphs, on CUDA: an averaging model's
        with ``cuda_graph``, a recurrent model's with ``recurrent_cuda_graph``."""
        return dev == "cuda" and (self.recurrent_cuda_graph if recurrent else self.cuda_graph)

    def pass_rows(self, dev: str) -> int:
        """A recurrent model's rows a pass: ``recurrent_pass_rows``, or where it is 0, one pass a
        step where the step is replayed from CUDA graphs, else a batch's (four passes)."""
        return self.recurrent_pass_rows or self.batch_size * (4 if self.replays(dev, True) else 1)


def read_pairs(paths: list[str | Path], max_pairs: int = 0, drop_identical: bool = True
               ) -> list[tuple[str, str]]:
    """Paraphrase pairs from Parquet (``s1``/``s2``, or a candidate table's ``en_ref``/
    ``candidate`` with only rank 1) or TSV files (``s1\\ts2[\\t...]``, read without quoting),
    as a list (training itself streams them: :class:`paramill.embed.data.PairSource`)."""
    source = PairSource.from_files(paths, max_pairs=max_pairs, drop_identical=drop_identical)
    return [pair for s1, s2 in source for pair in zip(s1, s2)]


def skips_linked(settings: EmbedTrainSettings, spec: ModelSpec) -> bool:
    """Whether training leaves linked pairs' sentences out of the negatives (its setting,
    ``auto`` resolved by the model's components)."""
    return settings.linked_negatives == "skip" or (settings.linked_negatives == "auto"
                                                   and spec.recurrent)


def _stepper(model, optimizer, settings: EmbedTrainSettings, spec: ModelSpec, dev: str) -> EagerStep:
    if not settings.replays(dev, spec.recurrent):
        return EagerStep(model, optimizer, settings.margin, settings.grad_clip, dev)
    if spec.recurrent:
        return PassGraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                             rows=4 * settings.batch_size)
    return GraphStep(model, optimizer, settings.margin, settings.grad_clip, dev,
                     rows=4 * settings.batch_size, slots=settings.megabatch)


def _clock() -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds (every thread) and its finished children's."""
    own, done = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), own.ru_utime + own.ru_stime, done.ru_utime + done.ru_stime


def _phase(what: str, started: tuple[float, float, float]) -> None:
    """Log a data phase's seconds, with the CPU seconds of the trainer and of its featurising
    workers (a pool's are counted when it closes): the trainer's share is what more cores
    cannot shorten (benchmarks/embed/embed_scale.py reads these lines)."""
    wall, own, workers = (b - a for a, b in zip(started, _clock()))
    print(f"embed train: {what} in {wall:.1f} s (CPU: trainer {own:.1f} s, workers {workers:.1f} s)",
          file=sys.stderr)


def _too_few(source: PairSource, n: int) -> ValueError:
    files = f"{', '.join(source.paths)}: " if source.paths else ""
    return ValueError(f"{files}training needs at least two paraphrase pairs, got {n} (a TSV "
                      "line needs two tab-separated fields; identical sides are dropped)")


def _built(spec: ModelSpec, settings: EmbedTrainSettings, source: PairSource, dev: str,
           store: Path, key: dict):
    """A new model: its SentencePiece model (on a seeded sample) where its units need one, and
    its vocabularies from the units counted over the training pairs; where the units are all
    SentencePiece pieces, the pass that counts them also writes the id store."""
    proto = None
    if needs_sentencepiece(spec):  # trained on a seeded sample of the training sentences
        started = _clock()
        print(f"embed train: sampling up to {spec.sp_input_sentences:,} sentences and training a "
              "SentencePiece model on them (one read of the pairs)", file=sys.stderr)
        sample = (s for s in source.sentences(spec.sp_input_sentences, settings.seed) if s.strip())
        first = next(sample, None)
        if first is None:  # SentencePiece's own error says only "!sentences_.empty()"
            raise _too_few(source, 0)
        proto = sentencepiece_for(spec, itertools.chain([first], sample), settings.seed,
                                  device.threads())
        _phase("SentencePiece model trained", started)
    started = _clock()
    feats, counts, what = featurizers(spec, proto), None, "units counted"
    if one_pass(feats):
        n, counted = write_raw_store(feats["sp"], source, store, CHUNK_PAIRS, key, device.threads())
        if counted is not None:  # None: a store of a killed run reused, counted below
            counts, what = {"sp": counted}, "id store written and units counted"
    if counts is None:
        counts, n = count_units(feats, source, workers=device.threads())
    for path, (line, names) in source.headers.items():
        print(f"embed train: {path}: line {line} names the columns ({', '.join(names)}), skipped",
              file=sys.stderr)
    for path, lines in source.skipped.items():
        if lines:
            print(f"embed train: {path}: {lines} lines without two tab-separated sentences (no "
                  "tab, or an empty side) skipped", file=sys.stderr)
    if source.too_long:
        note(f"embed train: {source.too_long:,} pair{'s' * (source.too_long != 1)} with a side "
             f"over {source.max_chars:,} characters left out (embed.train.max_chars)")
    if n < 2:
        shutil.rmtree(store, ignore_errors=True)  # the one pass stored what there was
        raise _too_few(source, n)
    _phase(f"{n} pairs' {what}", started)
    return build_from_counts(spec, counts, proto, fits=functools.partial(_fits, spec, dev)).to(dev).train()


#: what training holds a parameter in: its weight, its gradient and Adam's two moments, float32
TRAINING_BYTES_PER_PARAMETER = 16


def _fits(spec: ModelSpec, dev: str, parameters: int, vocabularies: dict[str, int]) -> None:
    """A model whose parameters alone need more memory to train than ``dev`` has is an
    error before any is allocated (a ``dim`` of 300,000,000 took the machine's 22 GB and was
    killed in its first epoch), naming the settings that size it."""
    limit = device.memory_limit(dev)
    need = parameters * TRAINING_BYTES_PER_PARAMETER
    if limit is not None and need > limit[0]:
        units = ", ".join(f"{unit} {size:,}" for unit, size in vocabularies.items())
        raise ValueError(f"the model's {parameters:,} parameters (units: {units}; dim {spec.dim}, "
                         f"hidden {spec.hidden}) need {_size(need)} to train (weight, gradient and "
                         f"Adam's two moments, 4 bytes each), more than the {_size(limit[0])} of "
                         f"{limit[1]}: lower embed.model's dim, hidden or max_vocab")


def _size(count: int) -> str:
    """``count`` bytes in the largest binary unit it holds whole (``53.6 GiB``)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):,.1f} {unit}"
    return f"{count} bytes"


def _epoch(model, step: EagerStep, buffers: Iterator, settings: EmbedTrainSettings,
           spec: ModelSpec, epoch: int, n: int, dev: str, within: dict | None = None,
           checkpoints: Checkpoints | None = None) -> float:
    """One epoch over the id store's shuffled buffers, from ``buffers`` up to the epoch's end
    (:func:`~paramill.embed.data.run_buffers`); returns the mean loss. ``within``: where a
    checkpoint left it (buffers done, not in ``buffers``; pairs done of the next);
    ``checkpoints`` is told of each mega-batch done (:mod:`paramill.embed.resume`).

    Each mega-batch: its pool encoded and its hardest negatives found on the device
    (:func:`~paramill.embed.megabatch.negatives`), then its steps, over inputs assembled there
    from ids moved once a buffer (:mod:`paramill.embed.megabatch`). An averaging model's
    steps are flat runs (no padding between rows), all of a mega-batch's at once, at a room
    that grows rarely, as a CUDA graph wants fixed shapes; on CUDA nothing of theirs is read
    back, so the host queues the next mega-batch while the device works. A recurrent model
    runs over every position, so its rows go through it sorted by length in passes
    (:meth:`EmbedTrainSettings.pass_rows`), each padded to its own longest: its negatives
    come back to the host once a mega-batch for that, and scrambling's random numbers go the other way
    (:func:`paramill.embed.megabatch.scramble`). The loss is read back once an epoch (the
    progress bar's without waiting: :class:`~paramill.embed.megabatch.LossPeek`)."""
    mega = settings.batch_size * settings.megabatch
    skip_linked = skips_linked(settings, spec)
    bar = progress(f"embed epoch {epoch + 1}/{settings.epochs}", unit="pairs", total=n)
    within = within or {"buffers": 0, "batches": 0, "pairs": 0, "loss_total": 0.0}
    step.total.fill_(within["loss_total"])
    batches, done, offset = within["batches"], within["buffers"], within.get("offset", 0)
    pairs = within["pairs"] - offset  # of the buffers done
    bar.update(within["pairs"])
    peek = LossPeek(step.total)
    for buffer, order in iter(buffers.__next__, None):  # None: the epoch's end
        buffer.place(dev)
        start, offset = offset, 0  # a resumed epoch's first buffer: from its checkpoint's place
        for m in range(start, buffer.n, mega):
            idx = order[m:m + mega]
            pool = np.concatenate([idx, buffer.n + idx])  # pool position -> sentence row
            negs = negatives(model, buffer, pool, spec, dev,
                             buffer.links[idx] if skip_linked else None)
            if (shown := peek(batches)) is not None:
                bar.set_postfix(loss=f"{shown:.4f}", refresh=False)
            if spec.recurrent:
                steps = recurrent_steps(buffer, idx, pool, negs, settings.batch_size,
                                        settings.pass_rows(dev),
                                        spec.units, settings.scramble_rate, dev)
                for b, args in zip(range(0, len(idx), settings.batch_size), steps):
                    step(*args)
                    batches += 1
                    bar.update(min(settings.batch_size, len(idx) - b))
            else:  # blocks: the mega-batch's full steps, then a short last one
                block = 0
                for runs, count in averaging_steps(buffer, idx, pool, negs, settings.batch_size, step):
                    step.over(runs, count)
                    batches += count
                    bar.update(min(count * settings.batch_size, len(idx) - block))
                    block += count * settings.batch_size
            if checkpoints is not None:
                end = min(m + mega, buffer.n)
                checkpoints.after(epoch, done, end, buffer.n, batches, pairs + end, step.total)
        done, pairs = done + 1, pairs + buffer.n
    loss = step.total.item() / max(1, batches)
    bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
    bar.close()
    return loss


def train(source: PairSource | list[tuple[str, str]], out: str | Path, spec: ModelSpec,
          settings: EmbedTrainSettings = EmbedTrainSettings(), resume: str | Path | None = None,
          inputs: list[str | Path] = (), rule: str = "embed_train",
          store: str | Path | None = None) -> dict[str, Any]:
    """Train an encoder on ``source`` (files or pairs); write the final checkpoint to ``out``.

    ``resume`` is the checkpoint (default ``<out>.resume.pt``; each epoch's, and within
    epochs every ``checkpoint_minutes``: :mod:`paramill.embed.resume`), used and updated;
    ``store`` the id store (default ``<out>.ids``), kept while a run is unfinished so a
    resumed run reads it again, removed when training ends.
    """
    if not isinstance(source, PairSource):
        source = PairSource.from_pairs(list(source), max_pairs=settings.max_pairs,
                                       drop_identical=False)
    source = replace(source, max_chars=settings.max_chars)
    out = Path(out)
    resume = Path(resume) if resume else out.with_name(out.name + ".resume.pt")
    store = Path(store) if store else out.with_name(out.name + ".ids")
    dev = device.pick(settings.device)
    rng = RNG(settings.seed)
    rng.seed_all()
    device.deterministic()  # deterministic kernels, the rule's thread count
    data = source.describe()
    known = {str(Path(p)): d for p, d in zip(source.paths, data.get("files", []))}  # hashed once
    run = Run(rule=rule, params={"spec": asdict(spec), "train": asdict(settings)}, inputs=list(inputs),
              known_digests=known)
    run.check_outputs([out, resume, store])  # before hours of training, not after
    run.check_inputs()
    for path in (out, resume):
        if path.is_dir() and not path.is_symlink():
            raise InputError(path, None, "is a folder; the model is a file: give its path")
    check_writable(out, resume, store)  # before the SentencePiece model and the counting
    model, state = resumed(resume, spec, settings, data, dev)
    start_epoch, history = (state["epoch"], state["history"]) if state is not None else (0, [])
    within = state.get("within_epoch") if state is not None else None  # resumed mid-epoch
    key = {"data": data, "spec": asdict(spec)}
    if model is None:
        model = _built(spec, settings, source, dev, store, key)
    optimizer = adam(model, settings.learning_rate, capturable=settings.replays(dev, spec.recurrent))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        RNG.restore(state["rng"])
    started = _clock()
    if one_pass(model.featurizers):  # written while counting, or reused, or (resumed) now
        n = write_raw_store(model.featurizers["sp"], source, store, CHUNK_PAIRS, key,
                            device.threads())[0]
    else:
        n = write_ids(model.vocabs, model.featurizers, source, store, CHUNK_PAIRS, key=key,
                      workers=device.threads())
    _phase(f"id store of {n} pairs ready", started)
    started = time.perf_counter()
    step = _stepper(model, optimizer, settings, spec, dev)
    if dev == "cuda":  # the epochs' peak, for the summary (what a job's GPU must hold)
        torch.cuda.reset_peak_memory_stats()
    epoch_seconds, trained = [], 0  # the epochs' own seconds (without writing their
    # checkpoints), and the pairs they trained (a resumed epoch's rest only)
    waited = Waited()  # of those, the seconds the steps waited for a buffer to be read

    def state(epoch: int, **extra) -> dict:  # what a checkpoint and the model file hold
        return model.checkpoint(train=asdict(settings), optimizer=optimizer.state_dict(), epoch=epoch,
                                history=history, rng=rng.capture(), pairs=n, data=data, **extra)

    def save(epoch: int, within: dict | None = None) -> None:
        with atomic_output(resume) as (tmp,):
            torch.save(state(epoch, **({"within_epoch": within} if within else {})), tmp)

    checkpoints = Checkpoints(settings.checkpoint_minutes, save)
    reading = run_buffers(store, sorted(model.vocabs), settings.seed, range(start_epoch, settings.epochs),
                          settings.buffer_pairs, model.vocabs, model.featurizers,
                          skip=within["buffers"] if within else 0)
    with closing(prefetched(reading, waited)) as buffers, device.matmul_tf32(dev == "cuda" and settings.tf32), \
            checkpoints.stopping():
        for epoch in range(start_epoch, settings.epochs):
            began = time.perf_counter()
            loss = _epoch(model, step, buffers, settings, spec, epoch, n, dev, within, checkpoints)
            check_finite(loss, epoch, settings.learning_rate, settings.margin)  # before any writing
            epoch_seconds.append(round(time.perf_counter() - began, 6))
            trained, within = trained + n - (within["pairs"] if within else 0), None
            history.append({"epoch": epoch + 1, "loss": loss})
            save(epoch + 1)
            checkpoints.written()
    seconds = time.perf_counter() - started
    summary = {"pairs": n, "pairs_too_long": source.too_long, "epochs": settings.epochs,
               "history": history, "device": dev,
               "dim": model.dim, "seconds": round(seconds, 2),
               "pairs_per_second": round(trained / seconds, 1) if seconds > 0 and trained else None,
               # reading the id store and the steps alone: what an epoch of millions of pairs
               # runs at, where an epoch's checkpoint is a small share
               "epoch_pairs_per_second": round(trained / sum(epoch_seconds), 1)
               if sum(epoch_seconds) > 0 else None,
               # checkpoints written within epochs (embed.train.checkpoint_minutes), and the
               # seconds that took (of the epochs' seconds; on CUDA with the wait for the steps)
               "checkpoints_within_epochs": checkpoints.within_written,
               "checkpoints_within_epochs_seconds": round(checkpoints.within_seconds, 3),
               # each epoch's (the first of a run also records its CUDA graphs); not in the
               # history, which the checkpoint keeps: the same run gives the same bytes
               "epoch_seconds": epoch_seconds,
               # of the epochs' seconds, those spent waiting for a buffer to be read: each is
               # read while the one before trains, so only the first of an epoch should show
               "buffer_wait_seconds": round(waited.seconds, 6),
               "cuda_graph": isinstance(step, ReplayedStep),
               # CUDA graphs recorded (a recurrent model's: one a padded width, each with its memory)
               "graph_recordings": getattr(step, "captures", 0)}
    if dev == "cuda":
        summary["cuda_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        print(f"embed train: the epochs' peak GPU memory {summary['cuda_peak_mb']:,.0f} MB; "
              f"{summary['graph_recordings']} CUDA graph(s) recorded", file=sys.stderr)
    with output_job(run, out) as job:
        (tmp,) = job.paths
        torch.save(state(settings.epochs), tmp)
        job.rows_in = n
        job.extra = {"training": summary}
    _share(out, resume)
    shutil.rmtree(store, ignore_errors=True)
    return summary


def _share(out: Path, resume: Path) -> None:
    """The last epoch's checkpoint holds what the model file holds: ``resume`` becomes a second
    name of ``out`` (a hard link; Snakemake removes ``out`` before the job runs again, and the
    checkpoint stays), not a second copy of the weights and the optimiser's state. Where the
    file system has no hard links, the copy stays."""
    if resume.resolve() == out.resolve():
        return
    tmp = resume.with_name(resume.name + ".link")
    try:
        tmp.unlink(missing_ok=True)
        os.link(out, tmp)
        os.replace(tmp, resume)
    except OSError:
        tmp.unlink(missing_ok=True)
