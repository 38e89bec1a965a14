"""A mega-batch of training: its hardest negatives, and its steps' inputs.

A mega-batch pools M mini-batches; its 2 x M x B sentences are encoded by the current model
in one pass without gradients, each pair's hardest negatives are found among them
(:func:`hardest_negatives`), and the mini-batches' steps follow, each over s1, s2 and their
two negatives.

Where the steps' inputs are assembled, and whether the host waits for the device:

- An averaging model (WORD, TRIGRAM): :func:`averaging_steps` assembles every step of the
  mega-batch at once on the device from the negatives' positions left there
  (:meth:`~paramill.embed.buffer.Buffer.flat_runs`). A step's flat ids need a size; on CUDA it
  is a bound known on the host (:func:`bound`: the step's own pairs' ids plus, for each of
  its negatives, the pool's longest sentence), so nothing is read back and the host queues
  mega-batch after mega-batch while the GPU works. The negatives of mega-batch m+1 are still
  found with the model as mega-batch m's steps left it (the papers' method): its search is
  queued after them. The padding the bound adds is in bags of their own, of weight 0 (the
  same sums and gradients; its ids spread over :data:`~paramill.embed.buffer.SPARE_IDS`). On a CPU the exact sizes
  are read back instead (no wait there, and its arithmetic stays as it was):
  :func:`sizes_read_back`.
- A recurrent model (LSTM, BLSTM, GRAN): a step's rows are sorted by length and padded a
  pass at a time to the pass's longest, so the negatives come back to the host once a
  mega-batch (:func:`recurrent_steps`).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from paramill.embed.buffer import to_device
from paramill.embed.model import real_positions
from paramill.embed.graphstep import group


def hardest_negatives(e1: torch.Tensor, e2: torch.Tensor, links: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """For each pair i, the index into the pool [s_1..s_n, s"_1..s"_n] of the sentence most
    similar to s_i and to s'_i, excluding s_i and s'_i themselves; with ``links`` (a group
    number a pair, :attr:`paramill.embed.buffer.Buffer.links`), also the sentences of every
    pair of i's group, unless that leaves none (then the papers' rule, for that pair)."""
    pool = F.normalize(torch.cat([e1, e2]), dim=-1)
    n = e1.size(0)
    if links is not None:  # a pair's group, for the pairs it does not fill the pool of
        linked = links[:, None] == torch.cat([links, links])[None, :]
        linked &= ~linked.all(dim=1, keepdim=True)
    out = []
    for side in (pool[:n], pool[n:]):
        sims = side @ pool.T
        # s_i and s'_i: the diagonals at 0 and n, filled in place (``sims[i, i] = -inf`` sent
        # its number by a blocking copy: a wait for every queued step, the H200's profile)
        sims.diagonal().fill_(float("-inf"))
        sims.diagonal(n).fill_(float("-inf"))
        if links is not None:
            sims.masked_fill_(linked, float("-inf"))
        out.append(sims.argmax(dim=1))
    return out[0], out[1]


def negatives(model, buffer, pool: np.ndarray, spec, dev: str, links: np.ndarray | None = None
              ) -> torch.Tensor:
    """The hardest negatives of a mega-batch (``pool``: its s1 rows, then its s2 rows) as
    pool positions [2, pairs] on the device, not read back: the pool encoded by the model in
    eval mode, an averaging model's in one pass, a recurrent model's sorted by length;
    ``links``: its pairs' groups, whose sentences are left out (:func:`hardest_negatives`)."""
    half = len(pool) // 2
    with torch.no_grad():
        model.eval()
        if spec.recurrent:
            e1, e2 = (encoded(model, *buffer.by_length(rows, spec.units, 512, dev))
                      for rows in (pool[:half], pool[half:]))
        else:  # the whole pool in one pass (an averaging model's rows are independent)
            e1, e2 = model(group(buffer.flat_runs(pool), 0)).split(half)
        model.train()
    return torch.stack(hardest_negatives(e1, e2, None if links is None else
                                         to_device(torch.from_numpy(links), e1.device)))


def sizes_read_back(dev: str | torch.device) -> bool:
    """Whether an averaging model's steps get the exact sizes of their flat ids, read back
    from the negatives (a CPU: no device to wait for, and no padding to compute), or a bound
    known on the host (CUDA: a read-back would wait for every step queued before it)."""
    return torch.device(dev).type != "cuda"


def bound(buffer, idx: np.ndarray, pool: np.ndarray, groups: int) -> dict[str, int]:
    """The most unit ids any of ``groups`` steps over the pairs ``idx`` (equal runs of them)
    can hold, whatever their negatives, per unit, on the host: a step's own pairs' ids, and
    for each of its two negatives a pair the longest sentence of ``pool`` (a sentence can be
    the hardest negative of every pair)."""
    per = len(idx) // groups
    out = {}
    for u, o in buffer.offsets.items():
        own = (o[idx + 1] - o[idx]) + (o[buffer.n + idx + 1] - o[buffer.n + idx])
        longest = int((o[pool + 1] - o[pool]).max(initial=0))
        out[u] = max(1, int(own.reshape(groups, per).sum(1).max(initial=0)) + 2 * per * longest)
    return out


def averaging_steps(buffer, idx: np.ndarray, pool: np.ndarray, negs: torch.Tensor,
                    batch_size: int, step) -> Iterator[tuple[dict, int]]:
    """An averaging model's steps over the mega-batch's pairs ``idx``, in blocks of runs
    (:meth:`~paramill.embed.buffer.Buffer.flat_runs`, per unit [steps, ...]) and their step
    count, each for ``step.over``: step ``k``'s rows are s1, s2 and their two negatives for
    pairs ``k*B..(k+1)*B``. The full steps are one block, assembled at once (where one
    assembly a step launched ~20 operations each time: on a GPU, outside the CUDA graph,
    launches set the pace) at the room ``step`` keeps for them; a short last step a block of
    its own. ``pool``: the pairs' s1 rows, then their s2 rows; ``negs``
    (:func:`negatives`) stay on the device; see the module for the sizes."""
    if len(pool) != 2 * len(idx):
        raise ValueError(f"a pool of {len(pool)} rows for {len(idx)} pairs: s1 rows, then s2 rows")
    dev = negs.device
    exact = sizes_read_back(dev)
    count, rest = divmod(len(idx), batch_size)
    full = count * batch_size
    placed = to_device(torch.from_numpy(pool), dev)  # the pairs' s1 rows, then their s2 rows
    rows = torch.cat([placed.view(2, -1), placed[negs]])  # s1, s2, t1, t2
    for start, groups, per in ((0, count, batch_size), (full, int(rest > 0), rest)):
        if not groups:
            continue
        part = rows[:, start:start + groups * per].reshape(4, groups, per).transpose(0, 1)
        part = part.reshape(-1)  # step by step
        needed = (buffer.totals(part.cpu().numpy(), groups) if exact
                  else bound(buffer, idx[start:start + groups * per], pool, groups))
        sizes = step.sizes(needed) if per == batch_size else needed  # short: not the graph's
        yield buffer.flat_runs(part, sizes, groups), groups


def recurrent_steps(buffer, idx: np.ndarray, pool: np.ndarray, negs: torch.Tensor,
                    batch_size: int, pass_rows: int, units: str, scramble_rate: float,
                    dev: str) -> Iterator[tuple[list, torch.Tensor]]:
    """A recurrent model's steps over the mega-batch's pairs ``idx``, each the arguments of a
    step: its rows (s1, s2 and their two negatives) in passes of ``pass_rows`` sorted by
    length, padded to each pass's longest, scrambled (:func:`scramble`)
    just before the step. The negatives come back to the host for the sorting."""
    n1, n2 = negs.cpu().numpy()
    for b in range(0, len(idx), batch_size):
        sl = slice(b, b + batch_size)
        rows = np.concatenate([idx[sl], buffer.n + idx[sl], pool[n1[sl]], pool[n2[sl]]])
        passes, back = buffer.by_length(rows, units, pass_rows, dev)
        draws = None  # a step's draws, whatever its passes
        if scramble_rate > 0 and len(rows):
            longest = max(1, int(buffer.lengths(rows, units).max()))
            draws = scramble_draws(len(rows), longest, scramble_rate)
        if draws is not None:  # cut up in by_length's order, as its passes are
            order = buffer.length_order(rows, units)
            for g, feats in zip(range(0, len(rows), pass_rows), passes):
                ids, lengths = feats[units]
                feats[units] = (scramble(ids, lengths, scramble_rate, draws[order[g:g + pass_rows]]),
                                lengths)
        yield passes, back


def scramble_draws(rows: int, width: int, rate: float) -> np.ndarray | None:
    """The keys :func:`scramble` sorts ``rows`` of at most ``width`` positions by: a row is
    chosen with probability ``rate`` and gets a random key a position, a row not chosen its
    positions in order; drawn on the host from torch's CPU generator (a number a row, then
    ``rows`` x ``width``), so a step's scrambles do not depend on how its rows are cut into
    passes. None where ``rate`` is 0 or no row is chosen."""
    if rate <= 0:
        return None
    chosen = torch.rand(rows).numpy() < rate  # the host's draws, looked at there
    if not chosen.any():
        return None
    return np.where(chosen[:, None], torch.rand((rows, width), dtype=torch.float64).numpy(),
                    np.arange(width) / width)  # rows not chosen keep their order


def scramble(ids: torch.Tensor, lengths: torch.Tensor, rate: float,
             draws: np.ndarray | None = None) -> torch.Tensor:
    """``ids`` with the real positions of each row chosen with probability ``rate`` shuffled;
    padding stays at the end. The keys are ``draws`` (its rows, as wide as ``ids`` or wider),
    else drawn here (:func:`scramble_draws`): on the host, from torch's CPU generator (the same
    scrambles on every device, resumed with the checkpoint's state), sent to the device
    without waiting; the shuffle runs where ``ids`` are, no read-back."""
    width = ids.size(1)
    keys = scramble_draws(ids.size(0), width, rate) if draws is None else draws[:, :width]
    if rate <= 0 or keys is None:
        return ids
    keys = to_device(torch.from_numpy(np.ascontiguousarray(keys)), ids.device)
    keys = torch.where(real_positions(width, lengths), keys, 2.0)
    return torch.gather(ids, 1, keys.argsort(dim=1))


def encoded(model, passes: list, back: torch.Tensor) -> torch.Tensor:
    """The vectors of :meth:`~paramill.embed.buffer.Buffer.by_length`'s passes, in the rows'
    order."""
    return torch.cat([model(feats) for feats in passes])[back]


class LossPeek:
    """The epoch's running loss for the progress bar, read without making the host wait: a
    copy of the device's total queued once a mega-batch and shown once it has arrived (an
    ``.item()`` would wait for every step queued); on a CPU, at once."""

    def __init__(self, total: torch.Tensor):
        self.total = total
        self.cuda = total.device.type == "cuda"
        self.host = torch.zeros((), pin_memory=self.cuda)
        self.event = None
        self.batches = 0

    def __call__(self, batches: int) -> float | None:
        """The mean loss over the first steps whose total has arrived, or None; queues a copy
        of the total after ``batches`` steps when none is on its way."""
        if not batches:
            return None
        if not self.cuda:
            return self.total.item() / batches
        shown = None
        if self.event is not None and self.event.query():
            shown, self.event = self.host.item() / self.batches, None
        if self.event is None:
            self.host.copy_(self.total, non_blocking=True)
            self.event, self.batches = torch.cuda.Event(), batches
            self.event.record()
        return shown


def check_finite(loss: float, epoch: int, learning_rate: float, margin: float) -> None:
    """A ``ValueError`` where an epoch's mean ``loss`` is not a finite number: the weights are
    no longer numbers (a learning rate of 1e300 wrote a model of NaN weights that STS and the
    filters read), so the job ends before that epoch's model or checkpoint is written."""
    if not np.isfinite(loss):
        raise ValueError(
            f"training diverged: the mean loss of epoch {epoch + 1} is {loss} "
            f"(embed.train.learning_rate {learning_rate:g}, margin {margin:g}): lower the "
            "learning rate, or the margin to a cosine's range. The model was not written"
            + (f"; the checkpoint of epoch {epoch} is kept" if epoch else ""))
