"""Where an embedding training run resumes: its checkpoint, written at each epoch's end and,
every ``checkpoint_minutes`` and on SIGTERM, at a mega-batch's end within an epoch.

An epoch of tens of millions of pairs takes hours on CPUs (ParaNMT's 50M at 5,000-9,000
pairs/s: 1.5-3 h): a job killed at its time limit lost the epoch it was in. A checkpoint
within an epoch, at a mega-batch's end, holds what an epoch's end holds (weights, optimiser,
random state, the epochs done and their history) and where the epoch stands
(``within_epoch``: the buffers done, the pairs done of the next, the steps taken, the pairs,
the loss summed so far). A resumed run reads the epoch's remaining buffers only and starts
the first at that offset (each buffer's pairs and order depend on the seed, the epoch and its
index alone: :func:`~paramill.embed.data.epoch_buffers`), so it ends with the weights and
losses of a run never stopped, to the bit on a CPU.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Callable

from paramill.embed.model import ModelSpec, load_model, read_checkpoint
from paramill.errors import InputError
from paramill.run.modelfiles import set_aside
from paramill.run.signals import on_sigterm

def not_resume_keys(settings) -> tuple[str, ...]:
    """The settings a checkpoint resumes across: the epochs to reach, and every launch-only
    key (``setting(..., launch=True)``: how a step is launched, how often a checkpoint is
    written; never what is computed)."""
    return ("epochs", *(f.name for f in fields(settings) if f.metadata.get("schema", {}).get("x-launch")))


def resumed(resume: Path, spec: ModelSpec, settings, data: dict, dev: str):
    """The model and checkpoint of ``resume`` when it was written by the same spec, settings
    (those of :func:`not_resume_keys` aside) and data, and has not gone past them (a
    checkpoint within an epoch: that epoch is still to be reached); else (None, None)."""
    if not resume.exists():
        return None, None
    try:
        state = read_checkpoint(resume)
        if not {"train", "epoch", "spec"} <= set(state):
            raise InputError(resume, None, "a model without its training state, not a checkpoint "
                                           "to resume from")
    except InputError as exc:  # the run starts afresh
        set_aside(resume, "embed train", exc, "starting afresh")
        return None, None
    stored = {**asdict(type(settings)()), **state["train"]}  # a key added since: its default
    across = not_resume_keys(settings)
    same = {k: v for k, v in stored.items() if k not in across} == {
        k: v for k, v in asdict(settings).items() if k not in across}
    within = state.get("within_epoch")
    reached = state["epoch"] < settings.epochs if within else state["epoch"] <= settings.epochs
    if state["spec"] == asdict(spec) and same and state.get("data") == data and reached:
        where = (f"in epoch {state['epoch'] + 1}, after {within['pairs']:,} of its pairs "
                 f"({_place(within['buffers'], within.get('offset', 0))}){_why(within)}" if within
                 else f"after epoch {state['epoch']}")
        print(f"embed train: resuming {where}", file=sys.stderr)
        return load_model(resume, map_device=dev).train(), state
    print("embed train: settings or data changed, starting afresh", file=sys.stderr)
    return None, None


def _why(within: dict) -> str:
    """Why a checkpoint within an epoch was written, for the resumed run's log (each attempt
    of a Snakemake job writes its log afresh: the stopped attempt's lines are gone)."""
    stopped = within.get("stopped")
    if not stopped:
        return ""
    try:
        name = signal.Signals(stopped["signal"]).name
    except ValueError:
        name = f"signal {stopped['signal']}"
    return f"; the run before was asked to stop ({name}) and wrote it at {stopped['at']}"


def _place(buffers: int, offset: int) -> str:
    """Where in an epoch: after ``buffers`` buffers, ``offset`` pairs into the next."""
    if offset:
        return f"buffer {buffers + 1} at pair {offset:,}"
    return f"{buffers} buffer" if buffers == 1 else f"{buffers} buffers"


class Checkpoints:
    """When to write a checkpoint within an epoch: after the first mega-batch to end
    ``minutes`` or more after the last checkpoint (an epoch's end's included; 0: at epochs'
    ends only), and after the mega-batch during which the job was asked to stop (SIGTERM:
    SLURM's time limit or ``scancel``, which SIGKILL follows after its ``KillWait``, 30 s by
    default), which then ends the job with status 143 (:meth:`stopping`). ``write(epoch,
    within)`` writes one (``epoch``: the epochs done)."""

    def __init__(self, minutes: float, write: Callable[[int, dict[str, Any]], None],
                 clock: Callable[[], float] = time.monotonic):
        self.every, self.write, self.clock = minutes * 60.0, write, clock
        self.last = clock()
        self.within_written, self.within_seconds = 0, 0.0  # written within epochs, and their time
        self.stop: int | None = None  # the signal that asked the job to stop

    def written(self) -> None:
        """An epoch's checkpoint was written now."""
        self.last = self.clock()

    @contextlib.contextmanager
    def stopping(self):
        """Within: SIGTERM asks for a checkpoint at the end of the mega-batch it comes in, then
        the job's end (a job killed at once lost the epoch's work since its last checkpoint);
        another SIGTERM ends it at once. Outside the main thread, nothing changes."""
        def asked(signum, frame):
            if self.stop is not None:
                raise SystemExit(128 + signum)
            self.stop = signum
            print("embed train: asked to stop (SIGTERM): a checkpoint at the end of this "
                  "mega-batch, then the end", file=sys.stderr, flush=True)

        with on_sigterm(asked):
            yield

    def after(self, epoch: int, buffers: int, offset: int, size: int, batches: int, pairs: int,
              total) -> None:
        """Epoch ``epoch`` (0-based) has done ``buffers`` buffers and ``offset`` of the next
        one's ``size`` pairs (a mega-batch's end), ``batches`` steps and ``pairs`` pairs, its
        losses summing to ``total`` (a tensor, read only when a checkpoint is due: on CUDA,
        reading it waits for the steps queued)."""
        if self.stop is None and (self.every <= 0 or self.clock() - self.last < self.every):
            return
        if offset >= size:  # the buffer's end
            buffers, offset = buffers + 1, 0
        began = time.perf_counter()
        within = {"buffers": buffers, "offset": offset, "batches": batches, "pairs": pairs,
                  "loss_total": float(total.item())}
        if self.stop is not None:  # said when the run resumes
            within["stopped"] = {"signal": self.stop, "at": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        self.write(epoch, within)
        took = time.perf_counter() - began
        self.within_written, self.within_seconds = self.within_written + 1, self.within_seconds + took
        print(f"embed train: checkpoint in epoch {epoch + 1} after {pairs:,} pairs "
              f"({_place(buffers, offset)}), "
              f"written in {took:.2f} s", file=sys.stderr, flush=True)
        self.last = self.clock()
        if self.stop is not None:
            print(f"embed train: stopped (signal {self.stop}) after its checkpoint; run it again "
                  "to resume there", file=sys.stderr, flush=True)
            raise SystemExit(128 + self.stop)
