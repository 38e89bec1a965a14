"""Run an OpenNMT-py tool repeatably: ``python -m paramill.nmt.launch TOOL SEED ARGS...``.

OpenNMT-py seeds python, numpy, torch and SentencePiece from its ``seed`` option, yet two
runs trained different models: SentencePiece's subword sampler (the source side's
regularisation while training, ``subword_nbest``/``subword_alpha``) ignores the seed
(google/sentencepiece#609), so the vocabulary counts and every batch differed run to run.

This launcher seeds every generator (:func:`paramill.device.deterministic`), turns on
torch's deterministic algorithms at the rule's thread count, and replaces that one
sampler by :func:`sample_segmentation`: Kudo (2018)'s l-best sampling, one of the n best
segmentations drawn with probability proportional to P(x)^alpha, from a generator seeded
with SEED (``nbest_size`` -1, the whole lattice in SentencePiece, as SentencePiece draws it:
:mod:`paramill.nmt.lattice`). Inference and the target side keep Viterbi segmentation.
Then it runs the tool's own ``main`` in this process. TOOL is ``build_vocab``, ``train`` or ``translate`` (benchmarks compare with OpenNMT-py's own translator).
``--then TOOL ARGS...`` runs a further tool in the same process, each from a fresh seeding
(so ``build_vocab ... --then train ...`` trains the model two processes would, and Python,
torch and OpenNMT-py start once: about 3 s of CPU less a model).
OpenNMT-py is imported through :func:`paramill.nmt.onmt_import.import_onmt`, so spaCy, fastText
and pyahocorasick (imported by transforms paramill never uses) need not be installed.
"""

from __future__ import annotations

import importlib
import math
import random
import sys
import warnings
from pathlib import Path
from typing import Any

from paramill.nmt import lattice

TOOLS = {"build_vocab": "onmt.bin.build_vocab", "train": "onmt.bin.train",
         "translate": "onmt.bin.translate"}
#: how many segmentations stand in for the whole lattice (nbest_size -1) where a model's
#: pieces span words (never one paramill trains: :mod:`paramill.nmt.lattice`)
LATTICE_NBEST = 64


def sample_segmentation(sp: Any, text: str, nbest_size: int, alpha: float, rng: random.Random,
                        scores: list[float]) -> list[str]:
    """One segmentation of ``text`` drawn with P proportional to P(x)^alpha: from the whole
    lattice for ``nbest_size`` -1 (:func:`paramill.nmt.lattice.sampler`), else from its n
    best (``scores``: each piece's log-probability in the unigram model)."""
    if nbest_size < 0 and (draw := lattice.sampler(sp, alpha)) is not None:
        return draw(text, rng)
    size = LATTICE_NBEST if nbest_size < 0 else nbest_size
    candidates = sp.nbest_encode(text, nbest_size=size, out_type=int)
    if len(candidates) <= 1:
        return sp.encode(text, out_type=str)
    logp = [alpha * sum(map(scores.__getitem__, ids)) for ids in candidates]
    top = max(logp)
    weights = [math.exp(v - top) for v in logp]
    chosen = rng.choices(range(len(candidates)), weights=weights)[0]
    return [sp.id_to_piece(i) for i in candidates[chosen]]


def seed_subword_sampling(seed: int) -> None:
    """Make OpenNMT-py's SentencePiece transform sample with :func:`sample_segmentation`
    from a generator seeded with ``seed`` (each process that forks from here continues
    the same sequence, so build_vocab's worker and training draw the same)."""
    from paramill.nmt.onmt_import import import_onmt

    import_onmt()  # placeholders for the packages only unused transforms import
    from onmt.constants import DefaultTokens
    from onmt.transforms.tokenize import SentencePieceTransform

    rng = random.Random(seed)
    tables: dict[int, list[float]] = {}

    def tokenize_string(self, string, side="src", is_train=False):
        sp = self.load_models[side]
        nbest = self.tgt_subword_nbest if side == "tgt" else self.src_subword_nbest
        alpha = self.tgt_subword_alpha if side == "tgt" else self.src_subword_alpha
        string = string.replace(DefaultTokens.SEP, "\n")
        if not is_train or nbest in (0, 1) or not alpha:
            return sp.encode(string, out_type=str)
        table = tables.get(id(sp))
        if table is None:
            table = tables[id(sp)] = [sp.get_score(i) for i in range(sp.get_piece_size())]
        return sample_segmentation(sp, string, nbest, alpha, rng, table)

    SentencePieceTransform.tokenize_string = tokenize_string


THEN = "--then"


def parse_steps(argv: list[str]) -> list[tuple[str, list[str]]] | None:
    """``TOOL SEED ARGS... [--then TOOL ARGS...]...`` -> each (tool, args); None where the
    line is not of that form."""
    if len(argv) < 2 or not argv[1].lstrip("-").isdigit():
        return None
    steps, current = [], [argv[0]]
    for word in argv[2:]:
        if word == THEN:
            steps.append(current)
            current = []
        else:
            current.append(word)
    steps.append(current)
    if any(not step or step[0] not in TOOLS for step in steps):
        return None
    return [(step[0], step[1:]) for step in steps]


def read_checkpoints_safely() -> None:
    """Let torch's weights-only unpickler (torch's default, which OpenNMT-py's ``-train_from``
    uses) read OpenNMT-py's checkpoints: they hold tensors, plain containers and the training
    options, an ``argparse.Namespace``. Before, training resumed with the full unpickler
    (``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``), which runs whatever a checkpoint names."""
    import argparse

    import torch

    torch.serialization.add_safe_globals([argparse.Namespace])


#: the exit status of a training stopped by SIGTERM after its checkpoint (128 + 15)
STOPPED = 143


def checkpoint_on_sigterm() -> None:
    """SIGTERM (SLURM's time limit, ``scancel``; SIGKILL follows after ``KillWait``) makes
    ``onmt_train`` save a checkpoint after the step it came in and end with status
    :data:`STOPPED`: a killed job lost every step since its last ``save_checkpoint_steps``
    (5,000: tens of minutes on a GPU). A SIGTERM after the first changes nothing: the job's
    parent forwards one it gets itself (:func:`paramill.nmt.train._run`), and SLURM signals
    both. Patched on OpenNMT-py 3.5.1's ``Trainer._maybe_report_training``, called once a
    step after its update with the step's number (the one its own checkpoints are saved at).
    Only where training runs in this process (the CPU, one GPU): for several GPUs OpenNMT-py
    trains in processes it spawns, which SIGTERM ends as before, and this one must not
    outlive them as if training had ended."""
    import signal

    from onmt.trainer import Trainer

    asked: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: asked.append(signum))
    report = Trainer._maybe_report_training

    def reported(self, step, num_steps, learning_rate, report_stats):
        stats = report(self, step, num_steps, learning_rate, report_stats)
        if asked and self.model_saver is not None:
            self.model_saver.save(step, moving_average=self.moving_average)
            print(f"nmt train: stopped (SIGTERM) after the checkpoint of step {step}; run it "
                  "again to resume there", file=sys.stderr, flush=True)
            raise SystemExit(STOPPED)
        return stats

    Trainer._maybe_report_training = reported


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    steps = parse_steps(argv)
    if steps is None:
        print(f"usage: python -m paramill.nmt.launch {{{','.join(TOOLS)}}} SEED ARGS... "
              f"[{THEN} TOOL ARGS...]", file=sys.stderr)
        return 2
    seed = int(argv[1])
    # OpenNMT-py 3.5.1 decorates its modules with torch.cuda.amp's deprecated functions:
    # thirteen lines of FutureWarning in every training log, about nothing a user can change
    warnings.filterwarnings("ignore", message=r"`torch\.cuda\.amp\.", category=FutureWarning)
    from paramill.run.device import deterministic
    from paramill.nmt import position

    read_checkpoints_safely()
    for tool, rest in steps:
        deterministic(seed)  # each tool from the state a process of its own would start in
        seed_subword_sampling(seed)
        sys.argv = [f"onmt_{tool}", *rest]
        if tool == "train" and trains_here(rest):
            checkpoint_on_sigterm()
            position.track(position.train_from(rest))
        result = int(importlib.import_module(TOOLS[tool]).main() or 0)
        if result:
            return result
        if tool == "build_vocab":
            readable_vocabularies(rest)
    return 0


def trains_here(args: list[str]) -> bool:
    """Whether ``onmt_train`` with ``args`` trains in this process: on the CPU or one GPU (its
    config's ``gpu_ranks``); for several, OpenNMT-py spawns a process a GPU."""
    return len(_config(args).get("gpu_ranks") or [0]) == 1


def _config(args: list[str]) -> dict:
    """The ``-config`` YAML of a tool's ``args`` (empty where there is none)."""
    import yaml

    where = Path(args[args.index("-config") + 1]) if "-config" in args[:-1] else None
    if where is None or not where.is_file():
        return {}
    return yaml.safe_load(where.read_text(encoding="utf-8")) or {}


def readable_vocabularies(args: list[str]) -> None:
    """Drop from the vocabularies ``onmt_build_vocab`` wrote (the ``src_vocab`` and
    ``tgt_vocab`` of its ``-config``) each line OpenNMT-py's own reader cannot read back: a
    token that is empty or white space (``build_vocab`` counts the empty string between two
    spaces of a segmented line: the sample's tiny EN->CS model's Czech side had one, and
    training stopped on an ``IndexError`` reading it). Each is said in the log."""
    config = _config(args)
    for key in ("src_vocab", "tgt_vocab"):
        path = Path(config.get(key) or "")
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if len(line.split(None, 1)) == 2]
        if len(kept) < len(lines):
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(kept), encoding="utf-8")
            tmp.replace(path)
            print(f"nmt train: {len(lines) - len(kept)} token(s) of {path.name} left out, empty "
                  "or white space (OpenNMT-py cannot read them back)", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover - run as a module by paramill.nmt.train
    sys.exit(main())
