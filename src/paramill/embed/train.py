"""Training with the margin loss of Wieting et al. (2016-2018).

For a paraphrase pair (s, s') and hardest negatives t, t' from the mega-batch:

    max(0, margin - cos(g(s), g(s')) + cos(g(s), g(t))) + max(0, margin - cos(g(s), g(s')) + cos(g(s'), g(t')))

A mega-batch pools M mini-batches; each sentence's negative is the most similar other
sentence in the pool (its own pair excluded), found with the current model without
gradients. M=1 is plain in-batch negatives. Recurrent components see sentences whose words
are shuffled with probability ``scramble_rate``. A checkpoint is written after every epoch,
so a killed job resumes at the next epoch with the same data order and random state (and
raising ``epochs`` continues a finished run).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl
import torch
import torch.nn.functional as F

from paramill import device
from paramill.embed.model import RNG, ModelSpec, SentenceEncoder, build, load_model
from paramill.io import atomic_output
from paramill.progress import progress
from paramill.provenance import Run, prov_path
from paramill.settings import Device, setting, Settings


@dataclass(frozen=True)
class TrainSettings(Settings):
    epochs: int = setting(5, "Passes over the pairs.", minimum=1)
    batch_size: int = setting(100, "Pairs per mini-batch.", minimum=2)
    megabatch: int = setting(
        1, "Mini-batches pooled to find hardest negatives (M; 1 = in-batch).", minimum=1)
    margin: float = setting(0.4, "Margin of the hinge loss.", minimum=0)
    learning_rate: float = setting(0.001, "Adam learning rate.", exclusiveMinimum=0)
    scramble_rate: float = setting(
        0.3, "Probability of shuffling a sentence's words (recurrent components only).", minimum=0,
        maximum=1)
    grad_clip: float = setting(1.0, "Gradient norm clipping (0 = off).", minimum=0)
    max_pairs: int = setting(0, "Train on at most this many pairs (0 = all).", minimum=0)
    seed: int = setting(13, "Random seed.")
    device: Device = setting("auto", "auto: cuda when a GPU is visible.")


def read_pairs(paths: list[str | Path], max_pairs: int = 0, drop_identical: bool = True
               ) -> list[tuple[str, str]]:
    """Paraphrase pairs from Parquet (``s1``/``s2``, or a candidate table's ``en_ref``/
    ``candidate`` with only rank 1) or TSV files (``s1\\ts2[\\t...]``, read without quoting)."""
    frames = []
    for path in map(str, paths):
        if path.endswith(".parquet"):
            lazy = pl.scan_parquet(path)
            names = lazy.collect_schema().names()
            if {"en_ref", "candidate"} <= set(names):
                if "rank" in names:
                    lazy = lazy.filter(pl.col("rank") == 1)
                lazy = lazy.select(s1=pl.col("en_ref"), s2=pl.col("candidate"))
            elif {"s1", "s2"} <= set(names):
                lazy = lazy.select("s1", "s2")
            else:
                raise ValueError(f"{path}: needs columns s1/s2 or en_ref/candidate, has {names}")
            frames.append(lazy)
        else:  # TSV, read without quoting: a quote character is just text
            s1, s2 = [], []
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    fields = line.rstrip("\n").split("\t")
                    if len(fields) >= 2:
                        s1.append(fields[0])
                        s2.append(fields[1])
            frames.append(pl.LazyFrame({"s1": s1, "s2": s2}, schema={"s1": pl.String, "s2": pl.String}))
    lazy = pl.concat(frames).drop_nulls().filter(
        (pl.col("s1").str.strip_chars() != "") & (pl.col("s2").str.strip_chars() != ""))
    if drop_identical:
        lazy = lazy.filter(pl.col("s1") != pl.col("s2"))
    if max_pairs:
        lazy = lazy.head(max_pairs)
    frame = lazy.collect()
    return list(zip(frame["s1"].to_list(), frame["s2"].to_list()))


def margin_loss(g1: torch.Tensor, g2: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor,
                margin: float) -> torch.Tensor:
    """Mean over the batch of the two hinge terms (both directions)."""
    pos = F.cosine_similarity(g1, g2)
    return (F.relu(margin - pos + F.cosine_similarity(g1, t1))
            + F.relu(margin - pos + F.cosine_similarity(g2, t2))).mean()


def hardest_negatives(e1: torch.Tensor, e2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each pair i, the index into the pool [s_1..s_n, s"_1..s"_n] of the sentence most
    similar to s_i and to s'_i, excluding s_i and s'_i themselves."""
    pool = F.normalize(torch.cat([e1, e2]), dim=-1)
    n = e1.size(0)
    own = torch.arange(n, device=e1.device)
    out = []
    for side in (pool[:n], pool[n:]):
        sims = side @ pool.T
        sims[own, own] = float("-inf")
        sims[own, own + n] = float("-inf")
        out.append(sims.argmax(dim=1))
    return out[0], out[1]


def _batch(model: SentenceEncoder, cache: dict[str, list[list[int]]], rows: list[int],
           rate: float = 0.0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Tensors for the cached sentences ``rows``; recurrent units are word-shuffled with
    probability ``rate``."""
    shuffle_unit = model.spec.units if rate > 0 and model.spec.recurrent else None
    ids = {}
    for unit, seqs in cache.items():
        picked = [seqs[r] for r in rows]
        if unit == shuffle_unit:
            picked = [random.sample(seq, len(seq)) if random.random() < rate else seq for seq in picked]
        ids[unit] = picked
    return model.id_tensors(ids)


def train(pairs: list[tuple[str, str]], out: str | Path, spec: ModelSpec,
          settings: TrainSettings = TrainSettings(), resume: str | Path | None = None,
          inputs: list[str | Path] = (), rule: str = "embed_train") -> dict[str, Any]:
    """Train an encoder on ``pairs``; write the final checkpoint to ``out``.

    ``resume`` is the per-epoch checkpoint (default ``<out>.resume.pt``), used and updated.
    """
    if len(pairs) < 2:
        raise ValueError("training needs at least two paraphrase pairs")
    out = Path(out)
    resume = Path(resume) if resume else out.with_name(out.name + ".resume.pt")
    dev = device.pick(settings.device)
    rng = RNG(settings.seed)
    rng.seed_all()
    device.deterministic()  # deterministic kernels, the rule's thread count
    start_epoch, history = 0, []
    if resume.exists():
        state = torch.load(resume, map_location="cpu", weights_only=True)
        same = {k: v for k, v in state["train"].items() if k != "epochs"} == \
            {k: v for k, v in asdict(settings).items() if k != "epochs"}
        if state["spec"] == asdict(spec) and same and state["pairs"] == len(pairs) \
                and state["epoch"] <= settings.epochs:
            model = load_model(resume, map_device=dev).train()
            start_epoch, history = state["epoch"], state["history"]
            print(f"embed train: resuming after epoch {start_epoch}", file=sys.stderr)
        else:
            print("embed train: settings or data changed, starting afresh", file=sys.stderr)
            state = None
    else:
        state = None
    if state is None:
        model = build(spec, [s for pair in pairs for s in pair]).to(dev).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate)
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        RNG.restore(state["rng"])
    run = Run(rule=rule, params={"spec": asdict(spec), "train": asdict(settings)}, inputs=list(inputs))
    mega = settings.batch_size * settings.megabatch
    n = len(pairs)
    sentences = [p[0] for p in pairs] + [p[1] for p in pairs]  # s_i at i, s'_i at n + i
    cache = {unit: [model.vocabs[unit].ids(f(s)) for s in sentences]
             for unit, f in model.featurizers.items()}
    started = time.perf_counter()
    for epoch in range(start_epoch, settings.epochs):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(settings.seed + epoch)).tolist()
        bar = progress(f"embed epoch {epoch + 1}/{settings.epochs}", unit="pairs", total=n)
        total, batches = 0.0, 0
        for m in range(0, n, mega):
            idx = order[m:m + mega]
            pool = idx + [n + i for i in idx]  # pool position -> sentence row
            with torch.no_grad():
                model.eval()
                e1 = torch.cat([model(_batch(model, cache, idx[b:b + 512])) for b in range(0, len(idx), 512)])
                e2 = torch.cat([model(_batch(model, cache, pool[len(idx) + b:len(idx) + b + 512]))
                                for b in range(0, len(idx), 512)])
                model.train()
            n1, n2 = hardest_negatives(e1, e2)
            for b in range(0, len(idx), settings.batch_size):
                sl = slice(b, b + settings.batch_size)
                rows = [idx[sl], [n + i for i in idx[sl]], [pool[j] for j in n1[sl].tolist()],
                        [pool[j] for j in n2[sl].tolist()]]
                g1, g2, t1, t2 = (model(_batch(model, cache, r, settings.scramble_rate)) for r in rows)
                loss = margin_loss(g1, g2, t1, t2, settings.margin)
                optimizer.zero_grad()
                loss.backward()
                if settings.grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                optimizer.step()
                total += loss.item()
                batches += 1
                bar.update(len(rows[0]))
                bar.set_postfix(loss=f"{total / batches:.4f}", refresh=False)
        bar.close()
        history.append({"epoch": epoch + 1, "loss": total / max(1, batches)})
        with atomic_output(resume) as (tmp,):
            torch.save(model.checkpoint(train=asdict(settings), optimizer=optimizer.state_dict(),
                                        epoch=epoch + 1, history=history, rng=rng.capture(),
                                        pairs=len(pairs)), tmp)
    seconds = time.perf_counter() - started
    summary = {"pairs": len(pairs), "epochs": settings.epochs, "history": history, "device": dev,
               "dim": model.dim, "seconds": round(seconds, 2),
               "pairs_per_second": round(len(pairs) * (settings.epochs - start_epoch) / seconds, 1)
               if seconds > 0 and settings.epochs > start_epoch else None}
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        torch.save(model.checkpoint(train=asdict(settings), optimizer=optimizer.state_dict(),
                                    epoch=settings.epochs, history=history, rng=rng.capture(),
                                    pairs=len(pairs)), tmp)
        run.write({out: tmp}, {out: tmp_prov}, rows_in=len(pairs), rows_out=None,
                  extra={"training": summary})
    return summary
