"""A buffer of training pairs in memory, and the inputs of a mega-batch's steps made from it.

A :class:`Buffer` holds its sentences as flat ids with offsets (s_i at row i, s'_i at n + i),
read from the id store (:func:`paramill.embed.data.epoch_buffers`), and places them on the
training device once (:meth:`Buffer.place`). From there it assembles model inputs without
reading anything back: flat runs for averaging models (:meth:`Buffer.flat_runs`, a
mega-batch's steps at once), padded rows for recurrent ones (:meth:`Buffer.batch`,
:meth:`Buffer.by_length`).
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import torch

from paramill.io.arrowcols import int64s
from paramill.embed.features import row_keys
from paramill.embed.model import FLAT_IDS, tail_bags


#: how many ids the padding of a flat run takes in turn (:meth:`Buffer.flat_runs`). On CUDA
#: ``embedding_bag``'s backward pass (the sum-and-scatter of its sorted ids, the path it
#: always takes for bags) sums each id's places ten at a time,
#: those sums one after another: with every place of the padding id 0, that one id's sum
#: was a chain of a tenth of the padding (6,000 steps for TRIGRAM at CUDA's bound) while
#: the rest of the kernel had long finished. 1,024 ids cut it to a few steps each, and their
#: rows, read with weight 0, stay in cache.
SPARE_IDS = 1024


class Buffer:
    """Pairs in memory as flat ids: sentence row i is s_i, row n + i is s'_i."""

    def __init__(self, table: pa.Table, units: list[str]):
        self.n = table.num_rows
        self.flat: dict[str, np.ndarray] = {}
        self.offsets: dict[str, np.ndarray] = {}
        for u in units:
            both = pa.concat_arrays([table.column(f"{u}_1").combine_chunks(),
                                     table.column(f"{u}_2").combine_chunks()])
            if both.null_count:  # the store writes a list for every sentence
                raise ValueError(f"{u}: {both.null_count} sentences without ids in the id store")
            offsets = int64s(both.offsets)
            self.flat[u], self.offsets[u] = int64s(both.flatten()), offsets - offsets[0]
        self._placed: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._top: dict[str, int] = {}

    @functools.cached_property
    def links(self) -> np.ndarray:
        """A number for each pair such that pairs linked by a sentence they share (the same
        unit ids: ``(A, B)`` and ``(A, C)``, or through other pairs, ``(C, D)``) have the same
        number, other pairs another: the connected components of the buffer's sentences
        joined by its pairs. Tweets sharing a URL are one such group; a corpus without
        repeated sentences has a group a pair."""
        from scipy.sparse import coo_matrix, csgraph  # only models that leave linked pairs out

        keys = row_keys(*((self.flat[u], self.offsets[u]) for u in self.flat))
        _, node = np.unique(keys, return_inverse=True)
        count = int(node.max(initial=-1)) + 1
        graph = coo_matrix((np.ones(self.n), (node[:self.n], node[self.n:])), shape=(count, count))
        return csgraph.connected_components(graph, directed=False)[1][node[:self.n]]

    def place(self, device: torch.device | str) -> None:
        """Move the ids (as :data:`~paramill.embed.model.FLAT_IDS`) and offsets to ``device``
        once (batches are assembled there), no wait; and each unit's largest id, from which
        the padding of flat runs counts down."""
        self._placed = {u: tuple(to_device(t, device) for t in (
            torch.from_numpy(self.flat[u]).to(FLAT_IDS), torch.from_numpy(self.offsets[u]),
            torch.from_numpy(np.diff(self.offsets[u])))) for u in self.flat}
        self._top = {u: int(f.max()) if len(f) else 0 for u, f in self.flat.items()}

    def widths(self, rows: np.ndarray) -> dict[str, int]:
        """The longest sentence among ``rows``, per unit (on the host: no device sync)."""
        return {u: max(1, int((self.offsets[u][rows + 1] - self.offsets[u][rows]).max()))
                if len(rows) else 1 for u in self.flat}

    def totals(self, rows: np.ndarray, groups: int = 1) -> dict[str, int]:
        """The most unit ids any of ``groups`` equal runs of ``rows`` holds, per unit (on the
        host): what :meth:`flat_runs` needs room for."""
        return {u: max(1, int((o[rows + 1] - o[rows]).reshape(groups, -1).sum(1).max()))
                if len(rows) else 1 for u, o in self.offsets.items()}

    def flat_runs(self, rows: np.ndarray | torch.Tensor, sizes: dict[str, int] | None = None,
                  groups: int = 1) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``rows`` (host row numbers, or a tensor of them on the :meth:`place` device, then
        with ``sizes``) in ``groups`` equal runs (a mega-batch's steps), each as
        ``embedding_bag``'s flat input on the :meth:`place` device: per unit, ids [groups,
        size] (a run's rows one after another, then padding up to ``sizes[unit]``, at least
        :meth:`totals`; by default just that), offsets [groups, rows per run + tail bags]
        (the rows', then bags that split the padding:
        :func:`~paramill.embed.model.tail_bags`) and the mean's weights (1/length at a row's
        ids, 0 at the padding). No padding between rows: trigrams of tweets are 80 a row on
        average, 392 at most. The padding's ids are this buffer's :data:`SPARE_IDS` largest,
        in turn, not id 0: weighted 0 in bags whose sums are dropped, they change no sum and
        no gradient, and no id gathers thousands of places in the backward pass. No sync
        (host rows: one copy); each place finds its row and gathers its id (not ``t[i] = v``,
        which deterministic algorithms sort)."""
        n, out = len(rows), {}
        sizes = sizes or self.totals(rows, groups)  # by default just what the runs hold
        for u, (flat, offsets, lengths) in self._placed.items():
            dev, size = flat.device, sizes[u]
            if isinstance(rows, torch.Tensor):  # on the device: its lengths never come back
                meta = _run_meta(offsets[rows], lengths[rows], groups, size,
                                 functools.partial(torch.arange, device=dev), torch.cat)
            else:
                o = self.offsets[u]
                meta = to_device(torch.from_numpy(_run_meta(o[rows], o[rows + 1] - o[rows], groups,
                                                            size, np.arange, np.concatenate)), dev)
            at = torch.arange(groups * size, device=dev)
            padding = self._padding(u, at).to(flat.dtype)
            if n and len(flat):  # the last row starting at or before a place (a row of no ids
                row = torch.searchsorted(meta[:n], at, right=True) - 1  # gives it to the next)
                begin, shift, length = meta[:3 * n].view(3, n)[:, row]
                real_id = at - begin < length
                ids = torch.where(real_id, flat[torch.where(real_id, at + shift, 0)], padding)
                weights = torch.where(real_id, 1.0 / length.clamp(min=1), 0.0)
            else:
                ids, weights = padding, torch.zeros(groups * size, device=dev)
            out[u] = (ids.view(groups, size), meta[3 * n:].to(FLAT_IDS).view(groups, -1),
                      weights.view(groups, size))
        return out

    def _padding(self, unit: str, at: torch.Tensor) -> torch.Tensor:
        """The padding's id at places ``at`` of flat runs: the buffer's :data:`SPARE_IDS`
        largest ids (its rarest units), counting down in turn (0 where it holds none)."""
        top = self._top[unit]
        return top - at % min(top, SPARE_IDS) if top else torch.zeros_like(at)

    def batch(self, rows: torch.Tensor, widths: dict[str, int]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """:meth:`tensors` of ``rows`` (a tensor on the :meth:`place` device), assembled there
        and padded to ``widths`` (at least each unit's longest among ``rows``), with no copy
        from the host and no sync: the same ids and lengths, maybe more padding."""
        out = {}
        for u, (flat, offsets, _) in self._placed.items():
            start = offsets[rows]
            lengths = offsets[rows + 1] - start
            pos = torch.arange(widths[u], device=flat.device)[None, :]
            mask = pos < lengths[:, None]
            index = torch.where(mask, start[:, None] + pos, torch.zeros_like(pos))
            out[u] = (torch.where(mask, flat[index], torch.zeros_like(index)), lengths)
        return out

    def lengths(self, rows: np.ndarray, unit: str) -> np.ndarray:
        """The lengths of sentence ``rows`` in ``unit`` (on the host)."""
        return self.offsets[unit][rows + 1] - self.offsets[unit][rows]

    def length_order(self, rows: np.ndarray, unit: str) -> np.ndarray:
        """Positions of ``rows`` sorted by length, shortest first, ties in their order: the
        order of :meth:`by_length`'s passes."""
        return np.argsort(self.lengths(rows, unit), kind="stable")

    def by_length(self, rows: np.ndarray, unit: str, size: int, device: torch.device | str
                  ) -> tuple[list[dict[str, tuple[torch.Tensor, torch.Tensor]]], torch.Tensor]:
        """Sentence ``rows`` (on the host) sorted by their length in ``unit`` and assembled
        on the :meth:`place` device in passes of ``size`` rows, each padded to its own longest
        sentence; and the positions that put the passes' outputs, concatenated, back in the
        order of ``rows``. For models whose work grows with the padded width (recurrent)."""
        order = self.length_order(rows, unit)
        ordered = rows[order]
        placed = to_device(torch.from_numpy(ordered), self._placed[unit][0].device)
        passes = [self.batch(placed[g:g + size], self.widths(ordered[g:g + size]))
                  for g in range(0, len(rows), size)]
        return passes, to_device(torch.from_numpy(np.argsort(order)), placed.device)

    def tensors(self, rows: np.ndarray, device: torch.device | str = "cpu"
                ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Padded id tensors and lengths of sentence ``rows``, built on the host, each as
        wide as its longest row (what :meth:`batch` gives on the device)."""
        out = {}
        for u, flat in self.flat.items():
            start = self.offsets[u][rows]
            lengths = self.offsets[u][rows + 1] - start
            width = int(lengths.max()) if len(rows) else 1
            pos = np.arange(width)[None, :]
            mask = pos < lengths[:, None]
            index = np.where(mask, start[:, None] + pos, 0)
            out[u] = (torch.from_numpy(np.where(mask, flat[index], 0)).to(device),
                      torch.from_numpy(lengths).to(device))
        return out


def _run_meta(starts, lengths, groups: int, size: int, arange, cat):
    """:meth:`Buffer.flat_runs`'s numbers for rows with ``starts`` and ``lengths`` (numpy
    arrays, or tensors on a device: ``arange`` and ``cat`` of their kind), in ``groups``
    runs of ``size`` places: each row's first place, the shift from it to its ids, its
    length, then each run's offsets (its rows', then the padding's bags)."""
    runs = lengths.reshape(groups, len(lengths) // groups)
    local = runs.cumsum(1) - runs
    real = runs.sum(1)[:, None]
    count = tail_bags(size)
    tails = real + arange(count) * (size - real) // count
    first = (arange(groups)[:, None] * size + local).reshape(-1)
    return cat([first, starts - first, lengths, cat([local, tails], 1).reshape(-1)])


def to_device(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """A host tensor on ``device``; to CUDA from pinned memory without waiting (a blocking copy
    waits for everything queued on the device first)."""
    device = torch.device(device)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
