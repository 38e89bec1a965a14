#!/usr/bin/env python3
"""Where an epoch's time goes: the training step alone against the epoch, a step at a time.

Trains each ``--variants`` model (``word-sp``, ``trigram``, ``word-trigram``, ``gran-sp``, as
``benchmarks/embeddings.py`` names them) on the Twitter URL train positives for ``--epochs``
(batch 100, mega-batch 20; on CUDA with the step as a CUDA graph unless ``--eager``), then,
with the trained model, its optimiser and the step object training used, times per step of
100 pairs:

- ``step_us``: the step alone, ``--repeats`` times back to back on the same inputs (on CUDA
  the graph's replay: what the GPU itself needs a step, the ceiling with no other work);
  With ``--recurrent-graph`` a recurrent variant's step goes through its graphs, and
  ``step_us_eager`` is the eager step on the same inputs, on the same card (and, with
  ``--profile``, ``step_eager``'s profile beside ``step``'s);
- ``megabatch_us``: the work a mega-batch does besides its steps, divided by its 20 steps:
  encoding its pool of 4,000 sentences, the hardest-negative search, and assembling the
  steps' rows (``paramill.embed.megabatch.negatives`` and ``averaging_steps``, the functions
  the epoch calls; for a recurrent model, ``gran-sp`` or ``lstm-sp``, the negatives' read-back
  and each step's passes sorted by length and scrambled, ``recurrent_steps``), over one
  epoch's buffer, timed to the device's end;
- ``epoch_us``: the epoch as training ran it (epochs alone, without their checkpoints),
  over the epochs after the first where there are two or more: the first also records the
  CUDA graphs (and warms the allocator), a large share of a 2-epoch run; ``epoch_us_all``
  counts every epoch.

If ``epoch_us`` is about ``step_us + megabatch_us`` the two run one after the other (as
when a read-back a mega-batch left the device idle while the host assembled the next
steps); nearer the larger of the two, they overlap;
``100 / step_us`` is the pairs/s no change outside the step can pass. On a CPU the step
runs eagerly and the figures say what the arithmetic costs there. With ``--profile`` each
part also says where the host's time went (``host_top``: operations and CUDA runtime calls,
``cudaStreamSynchronize`` among them, by their own host time; ``python_top``: cProfile's).

    python benchmarks/embed_step.py [--variants word-sp trigram] [--epochs 3] [--device cuda] \\
        [--repeats 500] [--profile 50] --out benchmarks/out/embed_step.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import REPO, SHARED, emit, machine, twitter_positive_pairs  # noqa: E402
from embeddings import VARIANTS  # noqa: E402  (the same names, each with its units)

sys.path.insert(0, str(REPO / "src"))

from paramill import device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["word-sp", "trigram"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=0, help="the first N pairs (0: all)")
    parser.add_argument("--repeats", type=int, default=500, help="steps timed back to back")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--eager", action="store_true", help="no CUDA graph on CUDA")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile N steps alone, one epoch's mega-batch work and one "
                             "whole steady epoch as training runs it ('epoch') "
                             "(torch.profiler: the kernels by device time a step, and the "
                             "device's busy time against the wall's; on a GPU the host's time "
                             "by operation and CUDA runtime call; cProfile's functions)")
    parser.add_argument("--recurrent-pass-rows", type=int,
                        help="rows a recurrent model takes in one pass of a step (default: the "
                             "batch size, four passes; 400: one, as the H200 rows of "
                             "benchmarks/embeddings.py ran); said in the report")
    parser.add_argument("--recurrent-graph", action="store_true",
                        help="a recurrent variant's step replayed from CUDA graphs "
                             "(embed.train.recurrent_cuda_graph; one pass a step: --recurrent-pass-rows 0 or 400)")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.recurrent_graph and 0 < (args.recurrent_pass_rows or 0) < 400:
        parser.error("--recurrent-graph replays one pass a step: give --recurrent-pass-rows 400 (or none)")
    device.limit_threads(args.threads)
    from paramill.embed import train as train_module

    pairs = [(x, y) for x, y in twitter_positive_pairs(SHARED) if x != y]
    pairs = pairs[:args.pairs] if args.pairs else pairs
    dev = device.pick(args.device)
    rows = [_variant(name, pairs, dev, args) for name in args.variants]
    emit({"benchmark": "embedding training: the step alone against the epoch, per step",
          "machine": {**machine(), "device": dev, "threads": args.threads}, "train_pairs": len(pairs),
          "batch": 100, "megabatch": 20, "epochs": args.epochs, "repeats": args.repeats,
          "recurrent_pass_rows": args.recurrent_pass_rows,
          "variants": rows}, args.out)


def _variant(name: str, pairs: list, dev: str, args) -> dict:
    import torch

    from paramill.embed import megabatch
    from paramill.embed import train as train_module
    from paramill.embed.data import PairSource, epoch_buffers, prefetched, run_buffers, write_ids
    from paramill.embed.model import ModelSpec
    from paramill.embed.rawstore import one_pass, write_raw_store
    from paramill.embed.steps import GraphStep, PassGraphStep
    from paramill.embed.train import CHUNK_PAIRS, EmbedTrainSettings, train

    spec = ModelSpec(dim=300, **VARIANTS[name])
    settings = EmbedTrainSettings(epochs=args.epochs, batch_size=100, megabatch=20, device=dev,
                                  cuda_graph=not args.eager,
                                  recurrent_cuda_graph=args.recurrent_graph and spec.recurrent,
                                  recurrent_pass_rows=args.recurrent_pass_rows or 0)
    made = {}
    stepper = train_module._stepper

    def keep(*a, **k):  # the step object training uses: its model, optimiser and inputs
        made["step"] = stepper(*a, **k)
        return made["step"]

    train_module._stepper = keep
    try:
        with tempfile.TemporaryDirectory() as tmp:
            summary = train(pairs, Path(tmp) / "m.pt", spec, settings)
            step = made["step"]
            model = step.model
            source = PairSource.from_pairs(pairs, drop_identical=False)
            store = Path(tmp) / "ids"  # training removed its own store: the same one again
            if one_pass(model.featurizers):
                write_raw_store(model.featurizers["sp"], source, store, CHUNK_PAIRS, {"k": 1})
            else:
                write_ids(model.vocabs, model.featurizers, source, store, CHUNK_PAIRS, key={"k": 1})
            buffer, order = next(epoch_buffers(store, sorted(model.vocabs), settings.seed, 0,
                                               settings.buffer_pairs, model.vocabs, model.featurizers))
            buffer.place(dev)
            sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
            mega = settings.batch_size * settings.megabatch

            def megabatch_work():  # each mega-batch's full steps (a short last one left out)
                for m in range(0, buffer.n, mega):
                    idx = order[m:m + mega]
                    pool = np.concatenate([idx, buffer.n + idx])
                    negs = megabatch.negatives(model, buffer, pool, spec, dev)
                    yield _assembled(buffer, idx, pool, negs, settings, spec, step, dev)

            steps, first = 0, []  # first: a full step's inputs (the last mega-batch may have none)
            sync()
            began = time.perf_counter()
            for passes in megabatch_work():
                steps += len(passes)
                first = first or passes
            sync()
            if not steps:
                raise SystemExit(f"embed_step: {buffer.n} pairs make no step of {settings.batch_size}")
            megabatch_us = (time.perf_counter() - began) / steps * 1e6
            graph = isinstance(step, GraphStep) and step.replay is not None
            if graph:
                replay = step.replay
            else:  # an eager step keeps no inputs: a mega-batch's first step's
                replay = lambda: step(*first[0])  # noqa: E731
            step_us = _timed(replay, args.repeats, sync)
            # a recurrent step replayed from its graphs: the eager step on the same inputs too,
            # on the same card (the ratio the graph is for)
            eager = (lambda: step._step(*first[0])) if isinstance(step, PassGraphStep) else None  # noqa: E731
            eager_us = _timed(eager, args.repeats, sync) if eager else None
            profiles = {}
            if args.profile:
                def run_steps(fn=replay):
                    for _ in range(args.profile):
                        fn()

                profiles = {"step": _profiled(run_steps, args.profile, dev, sync),
                            "megabatch_work": _profiled(lambda: list(megabatch_work()), steps, dev, sync)}
                if eager:
                    profiles["step_eager"] = _profiled(lambda: run_steps(eager), args.profile, dev, sync)

                def one_epoch():  # a whole steady epoch as training runs it, its buffer read ahead
                    reading = run_buffers(store, sorted(model.vocabs), settings.seed, range(1, 2),
                                          settings.buffer_pairs, model.vocabs, model.featurizers)
                    with closing(prefetched(reading)) as buffers:
                        train_module._epoch(model, step, buffers, settings, spec, 1, buffer.n, dev)

                # the epoch's device time against its wall: is the card or the host the bound?
                profiles["epoch"] = _profiled(one_epoch, -(-buffer.n // settings.batch_size), dev, sync)
    finally:
        train_module._stepper = stepper
    seconds = summary["epoch_seconds"]
    steady = seconds[1:] or seconds  # the first epoch records the graphs
    epoch_us = sum(steady) / (len(steady) * summary["pairs"] / settings.batch_size) * 1e6
    epoch_us_all = settings.batch_size / summary["epoch_pairs_per_second"] * 1e6
    row = {"variant": name, "cuda_graph": graph or isinstance(step, PassGraphStep),
           "step_us": round(step_us, 1),
           **({"step_us_eager": round(eager_us, 1)} if eager_us else {}),
           "megabatch_us_per_step": round(megabatch_us, 1), "epoch_us_per_step": round(epoch_us, 1),
           "epoch_us_per_step_all": round(epoch_us_all, 1), "epoch_seconds": seconds,
           "step_plus_megabatch_us": round(step_us + megabatch_us, 1),
           "pairs_per_second": {"step_alone": round(settings.batch_size / step_us * 1e6),
                                "epoch": round(settings.batch_size / epoch_us * 1e6),
                                "epoch_all": summary["epoch_pairs_per_second"]},
           "loss": summary["history"][-1]["loss"],
           # the ids a step's graph holds per unit (on CUDA the host's bound, padded with zeros)
           "room": {u: ids.size(0) for u, (ids, _, _) in getattr(step, "static", {}).items()}}
    if profiles:
        row["profile"] = profiles
    print({k: v for k, v in row.items() if k != "profile"}, file=sys.stderr)
    return row


def _timed(fn, repeats: int, sync) -> float:
    """Microseconds a call of ``fn``, over ``repeats`` calls back to back after 10 to warm."""
    for _ in range(10):
        fn()
    sync()
    began = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - began) / repeats * 1e6


def _profiled(fn, steps: int, dev: str, sync, top: int = 25) -> dict:
    """``fn`` under torch.profiler: per step (``steps`` of them), the wall, the device's summed
    kernel time (on a GPU: busy against idle) and the ``top`` kernels by device time (on a
    CPU, the operations by CPU time), with how many ran a step. On a GPU also ``op_top``, the
    operations by the device time of the kernels they launched (which kernels are whose: the
    same time as ``top``'s, never added to it), and where the host's time goes: ``host_top``,
    the operations and CUDA runtime calls (``cudaLaunchKernel``, ``cudaStreamSynchronize``,
    ``cudaHostAlloc``...) by their own host time. On either, from a second run under
    cProfile, ``python_top``, the Python functions and torch methods by their own time (where
    a host-bound loop spends it: a wait for the device shows as the call that waited)."""
    import cProfile
    import pstats

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    sync()
    with profile(activities=activities) as prof:
        began = time.perf_counter()
        fn()
        sync()
        wall = time.perf_counter() - began
    on_device = dev == "cuda"
    kernels, ops, host = device_split(prof.key_averages(), steps, on_device)
    out = {"steps": steps, "wall_us_per_step": round(wall / steps * 1e6, 1),
           ("device_busy_us_per_step" if on_device else "cpu_self_us_per_step"):
               round(sum(r["us_per_step"] for r in kernels), 1),
           "kinds": len(kernels), "top": kernels[:top]}
    if on_device:
        out["op_top"] = ops[:top]
        out["host_self_us_per_step"] = round(sum(r["us_per_step"] for r in host), 1)
        out["host_top"] = host[:top]
    python = cProfile.Profile()
    sync()
    python.enable()
    fn()
    sync()
    python.disable()
    stats = pstats.Stats(python).stats  # (file, line, name) -> (calls, _, own s, cumulative s, _)
    named = [(f"{name} ({Path(file).name}:{line})" if line else name, calls, own, cum)
             for (file, line, name), (_, calls, own, cum, _) in stats.items()]
    named.sort(key=lambda r: -r[2])
    out["python_top"] = [{**_per_step(name, calls, own * 1e6, steps),
                          "cumulative_us_per_step": round(cum * 1e6 / steps, 2)}
                         for name, calls, own, cum in named[:top]]
    return out


def device_split(events, steps: int, on_device: bool) -> tuple[list, list, list]:
    """torch.profiler's averaged events as rows per step, largest first: the device's own
    events (kernels, copies, memsets: their sum is the time the device was busy), the
    operations by the device time of the kernels they launched themselves, and every event
    by its own host time. An operation's "self" device time is its kernels' time, so summing
    operations and kernels together counts each kernel of an eager step twice (profiles
    before 2026-11-29 did: their eager parts' ``device_busy_us_per_step`` is up to twice
    the device's time; a graph's replay launches no operation, so its figure stood). On a
    CPU (``on_device`` false): the operations by their own CPU time, and no others."""
    from torch.autograd import DeviceType

    kernels, ops, host = [], [], []
    for e in events:
        on_cpu = getattr(e, "device_type", DeviceType.CPU) == DeviceType.CPU
        if not on_device:
            if (e.self_cpu_time_total or 0) > 0:
                kernels.append(_per_step(e.key, e.count, e.self_cpu_time_total, steps))
            continue
        if (e.self_device_time_total or 0) > 0:
            (ops if on_cpu else kernels).append(_per_step(e.key, e.count, e.self_device_time_total, steps))
        if (e.self_cpu_time_total or 0) > 0:
            host.append(_per_step(e.key, e.count, e.self_cpu_time_total, steps))
    for rows in (kernels, ops, host):
        rows.sort(key=lambda r: -r["us_per_step"])
    return kernels, ops, host


def _per_step(name: str, count: int, us: float, steps: int) -> dict:
    return {"name": name[:120], "per_step": round(count / steps, 2), "us_per_step": round(us / steps, 2)}


def _assembled(buffer, idx, pool, negs, settings, spec, step, dev) -> list[tuple]:
    """A mega-batch's full steps' inputs, as the epoch assembles them (an averaging model's all
    at once, a recurrent model's sorted by length, padded a pass at a time and scrambled),
    one argument tuple of ``step`` a step."""
    import itertools

    from paramill.embed import megabatch
    from paramill.embed.steps import group

    batch = settings.batch_size
    if not spec.recurrent:
        runs, count = next(megabatch.averaging_steps(buffer, idx, pool, negs, batch, step))
        return [(group(runs, k),) for k in range(count if len(idx) >= batch else 0)]
    steps = megabatch.recurrent_steps(buffer, idx, pool, negs, batch,
                                      settings.pass_rows(dev), spec.units,
                                      settings.scramble_rate, dev)
    return list(itertools.islice(steps, len(idx) // batch))


if __name__ == "__main__":
    main()
