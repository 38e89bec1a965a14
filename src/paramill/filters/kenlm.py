"""KenLM perplexity of the candidate under an n-gram model of references (Wieting 2017
§5.5: a 3-gram model trained on 40,000 held-out references; upper bound on perplexity
among {25, 50, 75, 100, 150, 200, inf}).

The model is estimated by KenLM's ``lmplz`` (built by the install step into .venv/bin) on
the held-out training references, tokenised with the project's tokeniser (lower-cased by
default), and binarised with ``build_binary``. ``--discount_fallback`` lets ``lmplz``
estimate from small data (it otherwise refuses when a count-of-counts is zero).
Perplexity includes the end-of-sentence token, as ``kenlm.Model.perplexity``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from paramill.filters.base import Batch, Column, Direction, ModelFilter
from paramill.filters.heldout import heldout_texts
from paramill.io.outputs import scratch_dir
from paramill.run.job import output_job
from paramill.provenance import Run
from paramill.config.typed import Settings, setting
from paramill.text import tokenize


@dataclass(frozen=True)
class KenlmSettings(Settings):
    order: int = setting(3, "n-gram order.", minimum=1, maximum=9)
    discount_fallback: bool = setting(
        True, "Pass --discount_fallback to lmplz (needed on small data).")
    lowercase: bool = setting(True, "Lower-case before tokenising.")
    memory: str = setting(
        "20%", "lmplz -S memory (e.g. 20% or 4G).",
        pattern="^[0-9]+(\\.[0-9]+)?[%bkKmMgGtTpPeE]?$")


def lm_text(sentence: str, lowercase: bool = True) -> str:
    """The form of a sentence the language model sees: tokens joined by spaces."""
    return " ".join(tokenize(sentence.lower() if lowercase else sentence))


def kenlm_tool(name: str) -> str:
    """Path of ``lmplz``/``build_binary``: beside this Python (.venv/bin), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise FileNotFoundError(f"KenLM's {name} is not installed: run `make install` "
                                f"(scripts/build-kenlm.sh builds it)")
    return found


def train_lm(sentences: list[str], out: str | Path, settings: KenlmSettings = KenlmSettings(),
             threads: int = 1, inputs: list[str | Path] | None = None, rule: str = "kenlm_train"
             ) -> dict[str, Any]:
    """Estimate an order-``settings.order`` model on ``sentences``; write a KenLM binary."""
    if not sentences:
        raise ValueError("no sentences to train the language model on")
    run = Run(rule=rule, params=asdict(settings), inputs=list(inputs or []))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with scratch_dir(out.parent, "kenlm-") as work:
        text = work / "train.txt"
        text.write_text("".join(lm_text(s, settings.lowercase) + "\n" for s in sentences),
                        encoding="utf-8")
        arpa = work / "lm.arpa"
        cmd = [kenlm_tool("lmplz"), "-o", str(settings.order), "-S", settings.memory,
               "-T", work]
        if settings.discount_fallback:
            cmd.append("--discount_fallback")
        with open(text, "rb") as fin, open(arpa, "wb") as fout:
            proc = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise RuntimeError(f"lmplz failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
        with output_job(run, out) as job:
            (tmp,) = job.paths
            proc = subprocess.run([kenlm_tool("build_binary"), str(arpa), str(tmp)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"build_binary failed: {proc.stderr[-2000:]}")
            job.rows_in = len(sentences)
    return {"sentences": len(sentences), "order": settings.order}


def train_lm_from_heldout(heldout: str | Path, out: str | Path, settings: KenlmSettings,
                          threads: int = 1, rule: str = "kenlm_train") -> dict[str, Any]:
    """The model of the held-out table's training references."""
    return train_lm(heldout_texts(heldout, "train", "en_ref"), out, settings, threads,
                    inputs=[heldout], rule=rule)


@dataclass(frozen=True)
class Kenlm(ModelFilter):
    name = "kenlm"
    doc = ("KenLM perplexity of the candidate (kenlm_ppl) under a model of the held-out "
           "training references.")
    order = 5
    settings = KenlmSettings
    models = {"model": "kenlm"}
    model: str = ""
    lowercase: bool = True

    def load(self) -> Any:
        import kenlm

        if not self.model or not Path(self.model).exists():
            raise FileNotFoundError(f"KenLM model not found: {self.model!r}")
        return kenlm.Model(str(self.model))

    def columns(self) -> list[Column]:
        return [Column("kenlm_ppl", Direction.LOWER, "perplexity of the candidate (KenLM, EOS included)")]

    def score(self, batch: Batch) -> dict[str, Any]:
        lm = self.loaded
        return {"kenlm_ppl": [lm.perplexity(lm_text(s, self.lowercase)) for s in batch.candidates]}
