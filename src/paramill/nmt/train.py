"""Transformer translation models trained with OpenNMT-py (``onmt_build_vocab``, ``onmt_train``).

The training directory is a resumable workspace: checkpoints survive a killed job, and
the next run continues from the last one (``-train_from``); SIGTERM (a SLURM time limit)
saves one after the step it comes in and ends the job with status 143
(:func:`paramill.nmt.launch.checkpoint_on_sigterm`). A workspace made with other
settings is wiped first, so a changed setting never resumes a stale model. The final
checkpoint is copied to the output path atomically, with its provenance record.

Facts for opennmt-py 3.5.1 on torch 2.13 handled here: ``-train_from`` reads a checkpoint with
torch's weights-only unpickler once the launcher allows the training options' class
(:func:`paramill.nmt.launch.read_checkpoints_safely`; without it torch refuses OpenNMT
checkpoints, and ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``, the usual way round, would unpickle
anything: it is taken out of the tools' environment); OpenNMT-py writes a checkpoint in
place, so a job killed while it writes leaves a cut one, set aside before resuming
(:func:`resumable`); ``self_attn_type: scaled-dot`` (the flash variant does not convert
to CTranslate2); a small ``bucket_size`` for small corpora.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from paramill.run import device
from paramill.io.outputs import sha256_file
from paramill.run.job import output_job
from paramill.nmt import position
from paramill.nmt.data import FILES
from paramill.nmt.launch import STOPPED, THEN, parse_steps
from paramill.provenance import Run
from paramill.run.signals import on_sigterm
from paramill.config.typed import Settings, setting

DIRECTIONS = ("cs-en", "en-cs")
_STEP = re.compile(r"model_step_(\d+)\.pt$")
_VALID = re.compile(r"Validation (perplexity|accuracy): ([0-9.]+)")


@dataclass(frozen=True)
class ModelSettings(Settings):
    """Transformer size (defaults: Transformer base)."""

    layers: int = setting(6, "Encoder and decoder layers.", minimum=1)
    hidden_size: int = setting(512, "Model and embedding size.", minimum=8)
    heads: int = setting(8, "Attention heads.", minimum=1)
    ff_size: int = setting(2048, "Feed-forward size.", minimum=8)
    dropout: float = setting(0.1, "Dropout and attention dropout.", minimum=0, maximum=0.9)


@dataclass(frozen=True)
class NmtTrainSettings(Settings):
    train_steps: int = setting(100000, "Training steps.", minimum=1)
    batch_size: int = setting(4096, "Batch size (in batch_type units).", minimum=1)
    batch_type: Literal["tokens", "sents"] = setting("tokens", "Unit of batch_size.")
    accum_count: int = setting(1, "Gradient accumulation steps.", minimum=1)
    optim: Literal["adam", "sgd", "adafactor"] = setting("adam", "Optimiser.")
    learning_rate: float = setting(
        2.0, "Learning rate (a scale factor under noam).", exclusiveMinimum=0, maximum=1000)
    decay_method: Literal["noam", "noamwd", "rsqrt", "none"] = setting(
        "noam", "Learning-rate schedule.")
    warmup_steps: int = setting(8000, "Warm-up steps (noam, rsqrt).", minimum=0)
    label_smoothing: float = setting(0.1, "Label smoothing.", minimum=0, maximum=0.5)
    save_checkpoint_steps: int = setting(
        5000, "Checkpoint every this many steps (resuming restarts from the last one).", minimum=1)
    valid_steps: int = setting(5000, "Validate every this many steps.", minimum=1)
    keep_checkpoint: int = setting(3, "Checkpoints kept.", minimum=1)
    bucket_size: int = setting(
        262144, "Examples bucketed for batching; keep it small for small corpora.", minimum=1)
    subword_nbest: int = setting(
        -1,
        "Subword regularisation on the source side while training: sample among this many best "
        "segmentations, seeded by seed (-1: the whole lattice, each word drawn from its "
        "segmentations, at most the 512 best; 1 disables).")
    subword_alpha: float = setting(0.1, "Smoothing of subword sampling.", minimum=0)
    seed: int = setting(13, "Random seed.")
    precision: Literal["fp32", "fp16"] = setting(
        "fp32", "Training precision on a GPU: fp16 is mixed precision (OpenNMT-py model_dtype fp16, "
        "torch amp with a loss scaler); CPU training is always fp32.")


def split_direction(direction: str) -> tuple[str, str]:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    src, tgt = direction.split("-")
    return src, tgt


def opennmt_config(direction: str, data_dir: Path, src_spm: Path, tgt_spm: Path, work: Path,
                   model: ModelSettings, train: NmtTrainSettings, gpus: int,
                   base: Path = Path(".")) -> dict[str, Any]:
    """The OpenNMT-py YAML for one direction (paths as OpenNMT-py will see them, from its
    working folder ``base``). Subword regularisation samples the source side while
    training (``subword_nbest``/``alpha``); the target side stays Viterbi."""
    src, tgt = split_direction(direction)
    data: dict[str, Any] = {"corpus_1": {"path_src": str(data_dir / f"train.{src}"),
                                         "path_tgt": str(data_dir / f"train.{tgt}"),
                                         "transforms": ["sentencepiece"]}}
    valid = base / data_dir / f"valid.{src}"
    if valid.exists() and valid.stat().st_size:
        data["valid"] = {"path_src": str(data_dir / f"valid.{src}"),
                         "path_tgt": str(data_dir / f"valid.{tgt}"),
                         "transforms": ["sentencepiece"]}
    cfg: dict[str, Any] = {
        "save_data": str(work / "vocab"),
        "src_vocab": str(work / "vocab.src"),
        "tgt_vocab": str(work / "vocab.tgt"),
        "overwrite": True,
        "data": data,
        "src_subword_model": str(src_spm),
        "tgt_subword_model": str(tgt_spm),
        "src_subword_nbest": train.subword_nbest,
        "src_subword_alpha": train.subword_alpha,
        "tgt_subword_nbest": 1,
        "tgt_subword_alpha": 0.0,
        "save_model": str(work / "model"),
        "save_checkpoint_steps": train.save_checkpoint_steps,
        "keep_checkpoint": train.keep_checkpoint,
        "train_steps": train.train_steps,
        "valid_steps": train.valid_steps,
        "report_every": max(1, min(100, train.train_steps // 10)),
        "encoder_type": "transformer",
        "decoder_type": "transformer",
        "position_encoding": True,
        "enc_layers": model.layers,
        "dec_layers": model.layers,
        "heads": model.heads,
        "hidden_size": model.hidden_size,
        "word_vec_size": model.hidden_size,
        "transformer_ff": model.ff_size,
        "self_attn_type": "scaled-dot",
        "dropout": [model.dropout],
        "attention_dropout": [model.dropout],
        "batch_size": train.batch_size,
        "batch_type": train.batch_type,
        "valid_batch_size": 256 if train.batch_type == "sents" else 2048,
        "accum_count": [train.accum_count],
        "optim": train.optim,
        "learning_rate": train.learning_rate,
        "decay_method": train.decay_method,
        "warmup_steps": train.warmup_steps,
        "adam_beta2": 0.998,
        "label_smoothing": train.label_smoothing,
        "bucket_size": train.bucket_size,
        "seed": train.seed,
        "num_workers": 0,
    }
    if gpus > 0:
        cfg["world_size"] = gpus
        cfg["gpu_ranks"] = list(range(gpus))
        if train.precision == "fp16":
            cfg["model_dtype"] = "fp16"
    return cfg


#: Settings that do not change the training trajectory: changing them resumes, not restarts.
_RESUMABLE = ("train_steps", "save_checkpoint_steps", "valid_steps", "keep_checkpoint")


def _fingerprint(direction: str, data_dir: Path, src_spm, tgt_spm, model: ModelSettings,
                 train: NmtTrainSettings) -> str:
    """What a checkpoint in the workspace depends on: data, subwords and the settings that
    shape the model (more ``train_steps`` continues the same run)."""
    train_part = {k: v for k, v in asdict(train).items() if k not in _RESUMABLE}
    data = {name: sha256_file(data_dir / name) for name in FILES if (data_dir / name).exists()}
    blob = {"direction": direction, "model": asdict(model), "train": train_part, "data": data,
            "src_spm": sha256_file(src_spm), "tgt_spm": sha256_file(tgt_spm)}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()


def checkpoints(work: Path) -> list[tuple[int, Path]]:
    """(step, path) of the checkpoints in ``work``, oldest first."""
    found = [(int(m.group(1)), p) for p in work.glob("model_step_*.pt")
             if (m := _STEP.search(p.name))]
    return sorted(found)


def resumable(work: Path, label: str = "nmt train") -> list[tuple[int, Path]]:
    """:func:`checkpoints`, the newest of them one torch's weights-only unpickler reads. A
    newer one it refuses is set aside as ``<name>.unreadable`` (never read otherwise), with
    the reason on stderr: OpenNMT-py writes checkpoints in place, so a job killed while it
    wrote one leaves it cut, and every later run would fail on it; one that asks the
    unpickler for anything else was not written by OpenNMT-py and could run code."""
    from paramill.run.modelfiles import set_aside
    from paramill.nmt.checkpoints import load_checkpoint

    done = checkpoints(work)
    while done:
        path = done[-1][1]
        try:
            load_checkpoint(path, mmap=True)
            break
        except ValueError as exc:
            done.pop()
            set_aside(path, label, exc, f"the last readable checkpoint is step {done[-1][0]}"
                      if done else "no readable checkpoint is left")
    return done


LAUNCHER = "paramill.nmt.launch"


def _tool(name: str, seed: int) -> list[str]:
    """The command that runs OpenNMT-py's ``name`` (build_vocab, train) with every random
    generator seeded and deterministic algorithms (:mod:`paramill.nmt.launch`)."""
    return [sys.executable, "-m", LAUNCHER, name, str(seed)]


#: the inputs as OpenNMT-py sees them: links in its working folder with plain names
INPUT_LINKS = {"data": Path("inputs/data"), "src_spm": Path("inputs/source.model"),
               "tgt_spm": Path("inputs/target.model")}


def link_inputs(work: Path, data_dir: Path, src_spm: Path, tgt_spm: Path) -> dict[str, Path]:
    """Links in ``work`` to the training inputs, under plain names. OpenNMT-py runs in
    ``work`` and sees only these relative names: it re-reads option values as YAML, so a
    path holding both quote characters (or other YAML syntax) would break it, and its
    options are kept in every checkpoint, where an absolute folder would make the same
    model differ byte for byte between two copies of a project."""
    (work / "inputs").mkdir(parents=True, exist_ok=True)
    for key, target in (("data", data_dir), ("src_spm", src_spm), ("tgt_spm", tgt_spm)):
        link = work / INPUT_LINKS[key]
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path(target).absolute())
    return INPUT_LINKS


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Run an OpenNMT tool in ``cwd``, echoing its output; returns the last validation figures."""
    figures: dict[str, float] = {}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1, cwd=cwd)
    assert proc.stdout is not None
    # SIGTERM here is passed on to OpenNMT-py, which saves a checkpoint after its step and ends
    # (paramill.nmt.launch.checkpoint_on_sigterm), where it ended this process at once and left
    # the tool to end on its own; SLURM signals both
    with on_sigterm(lambda signum, frame: proc.send_signal(signum)):
        for line in proc.stdout:
            sys.stderr.write(line)
            if m := _VALID.search(line):
                figures[f"valid_{m.group(1)}"] = float(m.group(2))
        proc.wait()
    if proc.returncode == STOPPED:  # its checkpoint is written: the next run resumes there
        raise SystemExit(STOPPED)
    if proc.returncode != 0:
        tools = " then ".join(tool for tool, _ in parse_steps(cmd[cmd.index(LAUNCHER) + 1:]) or [])
        raise RuntimeError(f"OpenNMT-py {tools} failed with exit status {proc.returncode} "
                           "(its output is above)")
    return figures


def train(direction: str, data_dir: str | Path, src_spm: str | Path, tgt_spm: str | Path,
          out_model: str | Path, work: str | Path, model: ModelSettings = ModelSettings(),
          train: NmtTrainSettings = NmtTrainSettings(), rule: str = "nmt_train") -> dict[str, Any]:
    """Train (or resume training) one direction; copy the final checkpoint to ``out_model``."""
    data_dir, work, out_model = Path(data_dir), Path(work), Path(out_model)
    gpus = device.cuda_count()
    if not gpus and device.given_gpus():  # OpenNMT-py would train on the CPU: days, not hours
        device.refuse_unused_gpus("OpenNMT-py", device.torch_cuda_problem() or "no GPU is visible")
    params = {"direction": direction, "model": asdict(model), "train": asdict(train)}
    fingerprint = _fingerprint(direction, data_dir, src_spm, tgt_spm, model, train)
    stamp = work / "settings.sha256"
    stale = work.exists() and (not stamp.exists() or stamp.read_text().strip() != fingerprint)
    if work.exists() and not stale and checkpoints(work) and checkpoints(work)[-1][0] > train.train_steps:
        stale = True  # fewer steps than already trained: the wanted model is gone
    if stale:
        print(f"nmt train {direction}: settings changed, starting afresh in {work}", file=sys.stderr)
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint + "\n")
    links = link_inputs(work, data_dir, Path(src_spm), Path(tgt_spm))
    cfg = opennmt_config(direction, links["data"], links["src_spm"], links["tgt_spm"], Path("."),
                         model, train, gpus, base=work)
    cfg_path = work / "opennmt.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    # never the full unpickler for a checkpoint, whatever the job's environment says
    env = {k: v for k, v in os.environ.items() if k != "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
    run = Run(rule=rule, params={**params, "gpus": gpus},
              inputs=[data_dir, src_spm, tgt_spm])
    # the vocabulary (where missing) and the training run in one launcher process
    cmd: list[str] = []
    if not (work / "vocab.src").exists() or not (work / "vocab.tgt").exists():
        cmd = [*_tool("build_vocab", train.seed), "-config", cfg_path.name, "-n_sample", "-1"]
    done = resumable(work, f"nmt train {direction}")
    figures: dict[str, float] = {}
    if not done or done[-1][0] < train.train_steps:
        more = ["-config", cfg_path.name]
        if done:
            corpora = {cid: work / spec["path_src"] for cid, spec in cfg["data"].items() if cid != "valid"}
            position.check_record(done[-1][1], done[-1][0], corpora)  # where it goes on fits this run
            print(f"nmt train {direction}: resuming from step {done[-1][0]}", file=sys.stderr)
            more += ["-train_from", done[-1][1].name]
        cmd = [*cmd, THEN, "train", *more] if cmd else [*_tool("train", train.seed), *more]
    if cmd:
        figures = _run(cmd, env, work)
    step, final = checkpoints(work)[-1]
    with output_job(run, out_model) as job:
        (tmp,) = job.paths
        shutil.copyfile(final, tmp)
        summary = {"direction": direction, "step": step, "gpus": gpus, **figures}
        if (where := position.read_record(final)) is not None:
            summary["corpus_position"] = where  # passes over each training corpus, and lines
        job.extra = {"training": summary}
    return summary
