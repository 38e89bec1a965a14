"""What the workflow says about a run as it starts and when it ends: which config files it
read, a training that would run full-size on a CPU, and where the results are. The rules'
glue (`rules/common.smk`) prints these lines; standard library only, so Snakemake's process
imports nothing heavy."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: CPU throughput assumed for the estimate of a CPU training's hours: floating-point
#: operations a second a core (a transformer's step on one core of an x86-64 server)
CPU_FLOPS_A_CORE = 6e10
#: estimated CPU-hours a direction from which a training counts as full-size
FULL_SIZE_HOURS = 1.0
#: the share of a corpus's rows rejected from which a run says so on the console
LARGE_REJECTION = 0.05
#: translations or released paraphrases fewer than this share distinct are degenerate
DISTINCT_SHARE = 0.9


def shown(path: str) -> str:
    """``path`` as a run names it: relative to the working directory where it is inside it."""
    full, here = Path(path).resolve(), Path.cwd().resolve()
    return str(full.relative_to(here)) if full.is_relative_to(here) else str(full)


def configfile_note(files: list[str], sample: str = "config.yaml") -> str | None:
    """The line saying which config files a run reads: ``--configfile`` files replace the
    sample's config (Snakemake's own "is extended by additional config" says otherwise)."""
    if not files or Path(files[0]).resolve() == Path(sample).resolve():
        return None
    return (f"paramill: config from {', '.join(map(shown, files))} (the sample's {sample} is not "
            "used; keys left out take their defaults: `paramill config resolve FILE` prints them)")


def transformer_parameters(model: dict[str, Any], vocab_size: int) -> int:
    """Parameters of an OpenNMT-py transformer of ``model``'s sizes (``nmt.model``): encoder
    and decoder layers, source and target embeddings and the generator."""
    h, ff, layers = model["hidden_size"], model["ff_size"], model["layers"]
    encoder = layers * (4 * h * h + 2 * h * ff)
    decoder = layers * (8 * h * h + 2 * h * ff)
    return encoder + decoder + 3 * vocab_size * h


def cpu_training_hours(nmt: dict[str, Any]) -> float:
    """CPU-hours one direction's training asks for, estimated as 6 x parameters x tokens a
    step (forward and backward) over the steps, at :data:`CPU_FLOPS_A_CORE`."""
    params = transformer_parameters(nmt["model"], nmt["spm"]["vocab_size"])
    tokens = nmt["train"]["batch_size"] * (1 if nmt["train"]["batch_type"] == "tokens" else 30)
    tokens *= nmt["train"].get("accum_count", 1)
    return 6 * params * tokens * nmt["train"]["train_steps"] / CPU_FLOPS_A_CORE / 3600


def gpu_visible(environ: dict[str, str] | None = None) -> bool:
    """Whether this machine shows a GPU to its processes (an NVIDIA device node, not hidden
    by an empty CUDA_VISIBLE_DEVICES)."""
    environ = os.environ if environ is None else environ
    if environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return Path("/dev/nvidia0").exists()


def cpu_training_warning(config: dict[str, Any], directions: list[str], submitted: bool,
                         gpu_here: bool) -> str | None:
    """A warning when the run will train translation models of full size without a GPU:
    ``directions`` the ``nmt_train`` jobs it will run; ``submitted``: its jobs go to a
    cluster (a job has a GPU only where its rule asks for one), else they run here, where
    ``gpu_here`` says whether there is one."""
    if not directions:
        return None
    asks = config.get("resources", {}).get("nmt_train", {})
    if (submitted and (asks.get("gpu") or asks.get("gres"))) or (not submitted and gpu_here):
        return None
    hours = cpu_training_hours(config["nmt"])
    if hours < FULL_SIZE_HOURS:
        return None
    model, train = config["nmt"]["model"], config["nmt"]["train"]
    runtime = asks.get("runtime")
    where = "on the CPUs of its cluster jobs (resources.nmt_train asks for no GPU)" \
        if submitted else "on this machine's CPU (it shows no GPU)"
    return (f"paramill: nmt_train will train {len(directions)} full-size translation model"
            f"{'s' * (len(directions) != 1)} ({model['layers']} layers, {model['hidden_size']} "
            f"wide, {train['train_steps']:,} steps) {where}: about {hours:,.0f} CPU-hours a "
            "direction (an estimate from the model's size)"
            + (f", in jobs that ask for {runtime:,} minutes" if runtime else "")
            + ". For a trial, give configs/trial.yaml before your config; for real models, ask "
            "for GPUs: resources: {nmt_train: {gpu: 1}}")


#: how many of the files a run was asked for its last line names
NAMED_TARGETS = 5


def results_summary(config: dict[str, Any], asked: list[str] | tuple[str, ...] = ()) -> str:
    """The line that ends a run: where its results are, by what the config makes; for a run
    given targets of its own (``asked``: the files they build), those files."""
    results, work, logs = config["results"], config["work_dir"], config["log_dir"]
    if asked:
        names = ", ".join(asked[:NAMED_TARGETS])
        more = len(asked) - NAMED_TARGETS
        names += f" and {more:,} more" if more > 0 else ""
        return (f"paramill: built what was asked for: {names}. Intermediate files in {work}/, "
                f"logs in {logs}/.")
    parts = []
    if config["bitext"]["corpora"] or config["pairs"]["corpora"]:
        releases = ["default", *config["filters"].get("releases", {})]
        parts.append(f"corpora in {results}/corpus/<release>/ ({', '.join(releases)})")
        if config["embed"]["models"] and config["evaluate"]["sts"]:
            parts.append(f"embeddings' STS in {results}/embed/<model>/sts.tsv")
        elif config["embed"]["models"]:
            parts.append(f"embedding models in {work}/embed/<model>/ (no STS set scores them: "
                         "evaluate.sts names none)")
        parts.append(f"the lexicon in {results}/lexicon/")
    if config["twitter"]["enabled"]:
        parts.append(f"tweet paraphrases in {results}/twitter/<month>/")
    found = "; ".join(parts) or "nothing: the config names no corpus and no tweets"
    return (f"paramill: results in {results}/: {found}. Intermediate files in {work}/, logs in "
            f"{logs}/; `snakemake --report report.html` bundles them into one page.")


def rejection_line(what: str, rows_in: int, rejected: dict[str, int], where: str) -> str | None:
    """One line when ``what`` rejected more than :data:`LARGE_REJECTION` of its ``rows_in``
    rows: how many, by reason (the largest first), and where the rows are."""
    total = sum(rejected.values())
    if not rows_in or total / rows_in <= LARGE_REJECTION:
        return None
    reasons = ", ".join(f"{reason} {n:,}" for reason, n in
                        sorted(rejected.items(), key=lambda item: (-item[1], item[0])))
    return (f"paramill: {what} rejected {total:,} of its {rows_in:,} rows ({total / rows_in:.1%}): "
            f"{reasons}; the rows and why: {where}")


def release_lines(config: dict[str, Any], releases: set[str]) -> list[str]:
    """A line for each release selected in this run (``releases``, the ``select`` jobs it ran):
    the pairs it kept of the candidates, and the steps that dropped more than
    :data:`LARGE_REJECTION` of them, largest first, from its ``selection.json``."""
    lines = []
    for release in sorted(releases):
        path = Path(config["results"]) / "corpus" / release / "selection.json"
        try:
            counts = [(str(s["step"]), int(s["pairs"]))
                      for s in json.loads(path.read_text(encoding="utf-8"))["steps"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not counts or counts[0][1] <= 0:
            continue
        total, kept = counts[0][1], counts[-1][1]
        drops = sorted(((before - after, name) for (_, before), (name, after) in zip(counts, counts[1:])
                        if (before - after) / total > LARGE_REJECTION), key=lambda d: (-d[0], d[1]))
        cut = ", ".join(f"{name} {n:,}" for n, name in drops)
        lines.append(f"paramill: release {release} kept {kept:,} of {total:,} candidate pairs "
                     f"({kept / total:.1%})" + (f"; dropped most by {cut}" if cut else "")
                     + f"; every step: {path}")
    return lines


def large_rejections(config: dict[str, Any]) -> list[str]:
    """The corpora of a finished run that rejected more than :data:`LARGE_REJECTION` of their
    rows, from the run's statistics (``results/bitext/stats.json``, ``results/pairs/stats.json``):
    one line each, for the console, where the jobs' own lines reach only their logs. Only the
    corpora the config names: a statistics file an earlier run with another config left in
    the results folder names corpora this run neither read nor rejected anything of."""
    lines = []
    for kind, where in (("bitext", "{work}/clean/{name}.rejected.parquet and "
                                   "{work}/ingest/{name}/rejected.parquet"),
                        ("pairs", "{work}/pairs/{name}/rejected.parquet")):
        named = config[kind]["corpora"]
        if not named:
            continue
        path = Path(config["results"]) / kind / "stats.json"
        try:
            corpora = json.loads(path.read_text(encoding="utf-8"))["corpora"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for name, stats in corpora.items():
            if name not in named or not isinstance(stats, dict) \
                    or not isinstance(stats.get("rejected"), dict):
                continue
            line = rejection_line(f"{kind} corpus {name}", stats.get("rows_in") or 0,
                                  stats["rejected"],
                                  where.format(work=config["work_dir"], name=name))
            if line:
                lines.append(line)
    return lines
