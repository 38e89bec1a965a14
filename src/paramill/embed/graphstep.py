"""One training step of an embedding model, eager or replayed from a CUDA graph.

A step: s1, s2 and their two negatives through the model in one pass, the margin loss, the
backward pass, gradient clipping, Adam, and the loss added to the epoch's total on the
device (read back once an epoch). Eagerly, each of its ~140 torch operations is
launched from Python: on a GPU that launching, not the arithmetic, sets the pace (the H200
ran WORD at 13k pairs/s with the GPU mostly idle). :class:`GraphStep` records the step once
as a CUDA graph over fixed-shape inputs and replays it: one launch a step.

What stays eager: once a mega-batch, encoding its pool in one pass, the hardest-negative
search and assembling all its steps' ids on the device at once from the negatives left there
(:mod:`paramill.embed.megabatch`), and copying them into the graph's inputs, which hold a
whole mega-batch's steps (a slab: [steps, room]); each step, only the replay, whose graph
takes its inputs from the slab at a step counter on the device and moves the counter on
(where the host copied each step's ids into the graph's inputs: three copies a unit a
step, and a view of each). A short last batch (fewer rows than the graph's) runs eagerly.
Sizes: a step's ids are flat (no padding between rows), and the graph's inputs have room
for a number of ids per unit (:func:`room`) at least the most a step may need so far (on
CUDA the host's bound, :func:`paramill.embed.megabatch.bound`); a step that may need more
records a new graph (rarely: the room only grows). The padding at the end changes nothing
(its weight is 0; its ids are spare ones taken in turn,
:data:`paramill.embed.buffer.SPARE_IDS`); it is split among
:func:`~paramill.embed.model.tail_bags` bags of its own (at most 32 places each), whose sums
are dropped, as the kernel takes what its longest bag takes.

That is an averaging model's (WORD, TRIGRAM and their sums). A recurrent model's step runs
in passes of rows sorted by length, whose widths change from step to step; with one pass a
step (``recurrent_pass_rows`` 4 x the batch size) and ``recurrent_cuda_graph``,
:class:`PassGraphStep` replays it from a graph for each padded width. On a CPU (and in the
tests there), both run the same fixed-shape steps eagerly, slab and counter included, so
their bookkeeping is tested where no GPU is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from paramill.embed.model import FLAT_IDS, tail_bags

#: eager steps before the first capture: CUDA graphs need the step's lazy initialisation
#: (cuBLAS handles, autograd's buffers, the caching allocator) done outside the capture
WARMUP_STEPS = 3

#: the most CUDA graphs a recurrent model's step keeps (:class:`PassGraphStep`: one for each
#: padded width met); a step of a width beyond them runs eagerly
MOST_GRAPHS = 24


def adam(model: torch.nn.Module, lr: float, capturable: bool = False) -> torch.optim.Adam:
    """Adam over ``model``'s parameters, fused (one kernel a step for all of them) where torch
    has a fused Adam for their device: CUDA, and the CPU in torch 2.4 and later;
    ``capturable`` (CUDA): its step count kept on the device, so a CUDA graph can hold it."""
    params = list(model.parameters())
    try:
        return torch.optim.Adam(params, lr=lr, fused=True, capturable=capturable)
    except (RuntimeError, ValueError):  # no fused kernel for this device or dtype
        return torch.optim.Adam(params, lr=lr, capturable=capturable)


def margin_step_loss(vectors: torch.Tensor, margin: float) -> torch.Tensor:
    """The margin loss of ``vectors``, the rows of g1, g2, t1 and t2 stacked (4 x batch):
    normalised once, the three cosines as row dot products (a few kernels a step where
    ``cosine_similarity`` three times launched dozens, forward and backward)."""
    g1, g2, t1, t2 = torch.nn.functional.normalize(vectors, dim=-1).view(4, -1, vectors.size(-1))
    pos = (g1 * g2).sum(-1)
    return (torch.relu(margin - pos + (g1 * t1).sum(-1))
            + torch.relu(margin - pos + (g2 * t2).sum(-1))).mean()


class EagerStep:
    """A step launched operation by operation; ``total`` the summed loss on the device."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, margin: float,
                 grad_clip: float, dev: str):
        self.model, self.optimizer = model, optimizer
        self.margin, self.grad_clip = margin, grad_clip
        self.dev = dev
        self.total = torch.zeros((), device=dev)

    def sizes(self, needed: dict[str, int]) -> dict[str, int]:
        """The room for a step's flat ids per unit, given the most a step needs
        (:meth:`paramill.embed.buffer.Buffer.totals`)."""
        return needed

    def __call__(self, feats: dict[str, tuple[torch.Tensor, torch.Tensor]] | list,
                 order: torch.Tensor | None = None) -> None:
        """A step on ``feats``: the model's input for s1, s2, t1 and t2 stacked, or a list of
        passes whose outputs, concatenated and indexed by ``order``, are those rows."""
        self._step(feats, order)

    def over(self, runs: dict[str, tuple[torch.Tensor, ...]], steps: int) -> None:
        """``steps`` steps, one after another, over a mega-batch's flat runs (per unit ids,
        offsets and weights, each [steps, ...]:
        :meth:`~paramill.embed.buffer.Buffer.flat_runs`), step ``k`` over run ``k``."""
        for k in range(steps):
            self(group(runs, k))

    def _step(self, feats, order: torch.Tensor | None = None) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        vectors = (torch.cat([self.model(part) for part in feats])[order] if isinstance(feats, list)
                   else self.model(feats))
        loss = margin_step_loss(vectors, self.margin)
        loss.backward()
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.total += loss.detach()


class ReplayedStep(EagerStep):
    """What a step replayed from CUDA graphs shares: :data:`WARMUP_STEPS` eager steps on a side
    stream before the first recording, recording, and counts of what ran (for the tests and
    logs). On a CPU a "recording" is the step itself, run eagerly on the same inputs."""

    #: the setting that turns this kind of replay off (named when recording fails)
    setting = "cuda_graph"

    def __init__(self, model, optimizer, margin: float, grad_clip: float, dev: str):
        super().__init__(model, optimizer, margin, grad_clip, dev)
        self.warm = 0
        self.captures = self.replays = self.eager = 0

    def _run(self, fn, replay):
        """``fn`` run once: a warm-up step, or ``replay`` (recorded from ``fn`` when None);
        returns the replay to keep."""
        if self.warm < WARMUP_STEPS:
            self.warm += 1
            self._on_side_stream(fn)
            return replay
        if replay is None:
            replay = self._record(fn)
        replay()
        self.replays += 1
        return replay

    def _on_side_stream(self, fn) -> None:
        if self.dev != "cuda":
            fn()
            return
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)

    def _record(self, fn):
        """``fn`` recorded as a CUDA graph (recording runs nothing); its replay, which keeps
        the graph. On a CPU, fn itself: the same fixed-shape step, eagerly."""
        self.captures += 1
        if self.dev != "cuda":
            return fn
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                fn()
        except RuntimeError as exc:  # an operation CUDA cannot record: say which setting
            raise RuntimeError(f"recording the training step as a CUDA graph failed ({exc}); "
                               f"set embed.train.{self.setting}: false to train eagerly") from exc
        return graph.replay


class GraphStep(ReplayedStep):
    """A step of ``rows`` rows (4 x the batch size) recorded once as a CUDA graph and replayed,
    over inputs that hold ``slots`` steps (a mega-batch's: the slab) and a step counter on the
    device; see the module's docstring. The optimiser must be capturable on CUDA
    (``paramill.embed.train.adam(..., capturable=True)``)."""

    def __init__(self, model, optimizer, margin: float, grad_clip: float, dev: str, rows: int,
                 slots: int = 1):
        super().__init__(model, optimizer, margin, grad_clip, dev)
        self.rows, self.slots = rows, max(1, slots)
        self.static: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}  # the slab
        self.at = torch.zeros(1, dtype=torch.long, device=dev)  # the slot the next step reads
        self.replay = None

    def sizes(self, needed: dict[str, int]) -> dict[str, int]:
        have = {u: ids.size(1) for u, (ids, _, _) in self.static.items()}
        if have and all(needed[u] <= have.get(u, 0) for u in needed):
            return have
        grown = {u: max(have.get(u, 0), room(n)) for u, n in needed.items()}
        self.static = {u: (torch.zeros(self.slots, n, dtype=FLAT_IDS, device=self.dev),
                           torch.zeros(self.slots, self.rows + tail_bags(n), dtype=FLAT_IDS,
                                       device=self.dev),
                           torch.zeros(self.slots, n, device=self.dev))
                       for u, n in grown.items()}
        self.replay = None  # the recorded step read the old inputs
        return grown

    def __call__(self, feats, order: torch.Tensor | None = None) -> None:
        if isinstance(feats, list):
            self.eager += 1
            self._step(feats, order)
            return
        self.over({u: tuple(part[None] for part in parts) for u, parts in feats.items()}, 1)

    def over(self, runs: dict[str, tuple[torch.Tensor, ...]], steps: int) -> None:
        """The mega-batch's runs copied into the slab once (three copies a unit), the counter
        set to its first slot, then ``steps`` replays; runs not of the slab's shapes (a short
        last batch) eagerly, a step at a time."""
        if steps > self.slots or runs.keys() != self.static.keys() or any(
                part.shape[1:] != fixed.shape[1:]
                for u in runs for part, fixed in zip(runs[u], self.static[u])):
            self.eager += steps
            for k in range(steps):
                self._step(group(runs, k))
            return
        for u, parts in runs.items():
            for part, fixed in zip(parts, self.static[u]):
                fixed[:steps].copy_(part)
        self.at.zero_()
        for _ in range(steps):
            self.replay = self._run(self._slot_step, self.replay)

    def _slot_step(self) -> None:
        """The step over the slab's slot ``at`` (gathered on the device: the host never knows
        which), then ``at`` moved to the next slot, round the slab (a replay timed on its own,
        again and again, reads every slot in turn)."""
        at = self.at
        self._step({u: tuple(part.index_select(0, at)[0] for part in parts)
                    for u, parts in self.static.items()})
        at.add_(1).remainder_(self.slots)


class PassGraphStep(ReplayedStep):
    """A recurrent model's step (LSTM, BLSTM, GRAN) over one pass of ``rows`` rows (4 x the
    batch size) sorted by length, replayed from a CUDA graph recorded for the pass's padded
    width: its longest row rounded up by :func:`room` (at most 12.5% more time steps), a
    graph for each width met, at most :data:`MOST_GRAPHS` (a step of another width, or of
    another shape, runs eagerly). A step copies its ids into the graph's inputs (zeros after
    its own width: padding, which the model reads as padding), its lengths and its rows'
    order, then replays, where its ~170 operations and cuDNN's kernels for each time step
    were launched one by one (the H200's kernels ran about 3.9 of the eager step's 14.1 ms,
    profiled: the rest launches, or gaps between small dependent kernels). The
    optimiser must be capturable on CUDA. Each graph keeps its own memory (a pass's
    activations at its width)."""

    setting = "recurrent_cuda_graph"

    def __init__(self, model, optimizer, margin: float, grad_clip: float, dev: str, rows: int):
        super().__init__(model, optimizer, margin, grad_clip, dev)
        self.rows = rows
        self.graphs: dict[tuple, _PassGraph] = {}  # by padded widths

    def __call__(self, feats, order: torch.Tensor | None = None) -> None:
        one = feats[0] if isinstance(feats, list) and len(feats) == 1 else None
        if one is None or order is None or order.size(0) != self.rows or any(
                ids.size(0) != self.rows for ids, _ in one.values()):
            self.eager += 1  # passes, or a short last batch
            self._step(feats, order)
            return
        key = tuple((u, room(ids.size(1), least=8)) for u, (ids, _) in sorted(one.items()))
        entry = self.graphs.get(key)
        if entry is None and len(self.graphs) >= MOST_GRAPHS:
            self.eager += 1
            self._step(feats, order)
            return
        if entry is None:
            entry = self.graphs[key] = self._inputs(one, order, dict(key))
        for u, (ids, lengths) in one.items():
            fixed, fixed_lengths = entry.inputs[u]
            width = ids.size(1)
            fixed[:, :width].copy_(ids)
            if width < fixed.size(1):
                fixed[:, width:].zero_()
            fixed_lengths.copy_(lengths)
        entry.order.copy_(order)
        entry.replay = self._run(entry.step, entry.replay)

    def _inputs(self, one: dict, order: torch.Tensor, widths: dict[str, int]) -> _PassGraph:
        """A graph's inputs for passes like ``one`` at ``widths``, and its step over them."""
        inputs = {u: (torch.zeros(self.rows, widths[u], dtype=ids.dtype, device=ids.device),
                      torch.zeros_like(lengths)) for u, (ids, lengths) in one.items()}
        fixed_order = torch.zeros_like(order)
        return _PassGraph(inputs, fixed_order, lambda: self._step([inputs], fixed_order))


@dataclass
class _PassGraph:
    """One padded width's graph of :class:`PassGraphStep`: its fixed inputs (per unit ids and
    lengths), the rows' order, the step over them, and its replay once recorded."""

    inputs: dict[str, tuple[torch.Tensor, torch.Tensor]]
    order: torch.Tensor
    step: Callable[[], None]
    replay: Callable[[], None] | None = None


def room(n: int, least: int = 16) -> int:
    """The size the graph's inputs get for ``n`` ids: the next of 16, 18, 20, ... 30, 32, 36,
    ... (eight sizes a doubling): at most 12.5% padding, and few recordings as the most a step
    needs creeps up (a step's ids vary little: 400 rows' sum)."""
    size = least
    while size * 2 <= n:
        size *= 2
    step = max(1, size // 8)
    return max(least, -(-n // step) * step)


def group(feats: dict[str, tuple[torch.Tensor, ...]], k: int) -> dict[str, tuple[torch.Tensor, ...]]:
    """Run ``k`` of :meth:`~paramill.embed.buffer.Buffer.flat_runs`'s runs: a model's input (views)."""
    return {u: tuple(part[k] for part in parts) for u, parts in feats.items()}
