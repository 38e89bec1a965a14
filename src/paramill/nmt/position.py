"""Where in its training corpus a resumed OpenNMT-py training goes on.

OpenNMT-py 3.5.1 reads its training corpus from the first line whenever it starts, a resumed
run (``-train_from``) too, so a training cut by SLURM's time limits before each pass ends
trained again and again on the corpus's first part and never saw the rest (paramill writes
the training text in the shards' order: a corpus's first sections first). Here, where the
training runs in the launcher's process (the CPU, one GPU: :func:`paramill.nmt.launch.trains_here`),
each checkpoint ``model_step_N.pt`` gets a record ``model_step_N.pt.position.json`` of where
each training corpus was when the bucket the step trained on began to be read (the passes over
it completed and the lines of the next read); a run resumed from that checkpoint reads each
corpus from there. OpenNMT-py reads ``bucket_size`` examples, sorts and batches them, then
trains their batches in a shuffled order, so a resumed run reads the interrupted bucket again:
at most ``bucket_size`` pairs trained twice an interruption, none left out. Its weighted mixer
goes on to the corpus's start when it reaches the end, as it does uninterrupted.

Patched on ``ParallelCorpusIterator.__iter__`` (what a corpus yields, the lines skipped at a
resume before any is decoded), ``DynamicDatasetIter._bucketing`` (the training iterator's
buckets) and ``ModelSaver.save``/``_rm_checkpoint`` (the record written beside each checkpoint
and removed with it)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

from paramill.errors import InputError

#: the record beside a checkpoint: ``<checkpoint>`` + this
SUFFIX = ".position.json"


def record_path(checkpoint: str | Path) -> Path:
    return Path(f"{checkpoint}{SUFFIX}")


class Positions:
    """Each training corpus's position as its iterator reads it (``passes``: the passes over it
    completed; ``lines``: the lines of this pass read), and the positions at which the bucket
    now training began to be read."""

    def __init__(self, start: dict[str, dict[str, int]] | None = None):
        self.pending = dict(start or {})  # cid -> where its first pass begins
        self.now: dict[str, dict[str, int]] = {}  # cid -> where it is
        self.bucket: dict[str, dict[str, int]] = {}  # self.now when the bucket in training began

    def begin(self, cid: str) -> int | None:
        """A pass over ``cid`` begins: the lines it skips where it is a resumed run's first
        pass, None otherwise."""
        if cid in self.pending:
            start = self.pending.pop(cid)
            self.now[cid] = {"passes": start["passes"], "lines": start["lines"]}
            return start["lines"]
        passes = self.now[cid]["passes"] + 1 if cid in self.now else 0
        self.now[cid] = {"passes": passes, "lines": 0}
        return None

    def read(self, cid: str, line: int) -> None:
        self.now[cid]["lines"] = line + 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Where each corpus is now, those not yet begun where they will begin."""
        seen = {cid: dict(at) for cid, at in self.now.items()}
        return {**{cid: dict(at) for cid, at in self.pending.items()}, **seen}


#: what to do with a record that does not fit
_REMOVE = "remove it to train on from the training corpus's first line"


def _parsed(path: Path) -> dict[str, Any]:
    """The record at ``path``: ``{"step": N, "corpora": {cid: {"passes", "lines"}}}``, or an
    :class:`~paramill.errors.InputError` saying what it is instead."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"is not JSON ({exc.msg}); {_REMOVE}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot be read ({exc}); {_REMOVE}") from None
    corpora = data.get("corpora") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(corpora, dict) or not all(
            isinstance(at, dict) and set(at) == {"passes", "lines"}
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in at.values())
            for at in corpora.values()):
        raise InputError(path, None, "is not a record of where training was (a step, and each "
                         f"corpus's passes and lines); {_REMOVE}")
    return data


def _lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))


def check_record(checkpoint: str | Path, step: int, corpora: dict[str, Path]) -> None:
    """Refuse the record beside ``checkpoint`` (of step ``step``) where it does not fit the
    run about to resume from it: another step's, a corpus the run does not train on
    (``corpora``: each training corpus's source file), a line past a corpus's end, or not a
    record at all. An :class:`~paramill.errors.InputError` names the record and what does
    not match; no record is fine (the run reads from the corpus's first line)."""
    path = record_path(checkpoint)
    if not path.is_file():
        return
    data = _parsed(path)
    problems = []
    if data.get("step") != step:
        problems.append(f"it is step {data.get('step')!r}'s, the checkpoint "
                        f"{Path(checkpoint).name} step {step}'s")
    for cid, at in data["corpora"].items():
        if cid not in corpora:
            problems.append(f"it names corpus {cid!r}, which this run does not train on "
                            f"({', '.join(corpora)})")
        elif at["lines"] > (count := _lines(corpora[cid])):
            problems.append(f"corpus {cid} is at line {at['lines']:,}, past its end "
                            f"({count:,} lines in {corpora[cid].name})")
    if problems:
        raise InputError(path, None, "does not fit the run resuming from it: "
                         + "; ".join(problems) + f"; {_REMOVE}")


def read_record(checkpoint: str | Path) -> dict[str, dict[str, int]] | None:
    """The positions recorded beside ``checkpoint`` (checked first: :func:`check_record`);
    None where there is none, or one that is not a record (said on stderr: the run reads
    from the start)."""
    path = record_path(checkpoint)
    if not path.is_file():
        return None
    try:
        corpora = _parsed(path)["corpora"]
    except InputError as exc:
        print(f"nmt train: {exc}; reading the training corpus from its first line",
              file=sys.stderr, flush=True)
        return None
    return {cid: dict(at) for cid, at in corpora.items()}


def write_record(checkpoint: str | Path, step: int, corpora: dict[str, dict[str, int]]) -> None:
    from paramill.io.jsonfiles import write_json

    write_json(record_path(checkpoint), {"step": step, "corpora": corpora}, indent=None)


def track(train_from: str | None) -> Positions:
    """Patch OpenNMT-py so that its training corpora are read from where ``train_from``'s record
    says (from the start where there is none) and every checkpoint records where they were."""
    from paramill.nmt.onmt_import import import_onmt

    import_onmt()  # placeholders for the packages only unused transforms import
    from onmt.constants import CorpusName, CorpusTask
    from onmt.inputters.dynamic_iterator import DynamicDatasetIter
    from onmt.inputters.text_corpus import ParallelCorpusIterator
    from onmt.models.model_saver import ModelSaver

    start = read_record(train_from) if train_from else None
    if train_from and start is None:
        print(f"nmt train: {Path(train_from).name} has no record of where the training corpus "
              "was (written before paramill recorded it, or by several GPUs' processes); reading "
              "it from its first line", file=sys.stderr, flush=True)
    positions = Positions(start)
    corpus_iter = ParallelCorpusIterator.__iter__
    bucketing = DynamicDatasetIter._bucketing
    save, remove = ModelSaver.save, ModelSaver._rm_checkpoint

    def read_corpus(self):
        if self.stride != 1 or self.cid in (CorpusName.VALID, CorpusName.INFER):
            # several processes share the corpus, or it is not trained on: OpenNMT-py's reading
            yield from corpus_iter(self)
            return
        resumed = positions.begin(self.cid)
        skip = resumed or 0
        stream = skipped(self.corpus, skip) if skip else self.corpus.load(stride=1, offset=0)
        for n, (example, transform, cid) in enumerate(self._process(stream)):
            example["cid_line_number"] += skip
            positions.read(self.cid, example["cid_line_number"])
            if resumed is not None and not n:
                print(f"nmt train: training corpus {self.cid} read from line "
                      f"{example['cid_line_number'] + 1:,} (pass {positions.now[self.cid]['passes'] + 1}), "
                      "where the checkpoint's run was", file=sys.stderr, flush=True)
            yield example, transform, cid

    def buckets(self):
        if self.task != CorpusTask.TRAIN:
            yield from bucketing(self)
            return
        made = bucketing(self)
        while True:
            begun = positions.snapshot()
            try:
                bucket = next(made)
            except StopIteration:
                return
            positions.bucket = begun
            yield bucket

    def saved(self, step, moving_average=None):
        save(self, step, moving_average=moving_average)
        checkpoint = Path(f"{self.base_path}_step_{step}.pt")
        if self.last_saved_step == step and checkpoint.is_file():
            write_record(checkpoint, step, positions.bucket or positions.snapshot())

    def removed(self, name):
        remove(self, name)
        record_path(name).unlink(missing_ok=True)

    ParallelCorpusIterator.__iter__ = read_corpus
    DynamicDatasetIter._bucketing = buckets
    ModelSaver.save = saved
    ModelSaver._rm_checkpoint = removed
    return positions


def skipped(corpus: Any, skip: int):
    """The examples of an OpenNMT-py ``ParallelCorpus`` after its first ``skip`` lines, as its
    ``load`` makes them; the lines skipped are never decoded (through ``load`` a line costs
    ~9 µs: 7.6 minutes for 50M)."""
    from onmt.inputters.text_corpus import exfile_open
    from onmt.inputters.text_utils import parse_features

    if isinstance(corpus.src, list) or corpus.align is not None:  # not what paramill trains on
        yield from itertools.islice(corpus.load(stride=1, offset=0), skip, None)
        return
    with exfile_open(corpus.src, mode="rb") as fs, exfile_open(corpus.tgt, mode="rb") as ft:
        rows = zip(fs, ft)
        for _ in itertools.islice(rows, skip):
            pass
        for sline, tline in rows:
            src, feats = parse_features(sline.decode("utf-8"), n_feats=corpus.n_src_feats,
                                        defaults=corpus.src_feats_defaults)
            tgt = None if tline is None else tline.decode("utf-8")
            example = {"src": src, "tgt": tgt, "src_original": src, "tgt_original": tgt}
            if feats is not None:
                example["src_feats"] = list(feats)
            yield example


def train_from(args: list[str]) -> str | None:
    """The ``-train_from`` checkpoint of ``onmt_train``'s ``args`` (None where there is none)."""
    return args[args.index("-train_from") + 1] if "-train_from" in args[:-1] else None
