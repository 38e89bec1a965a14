"""Semantic textual similarity: STS sets read by their layouts in :mod:`paramill.formats`
(any layout that can be read as ``sts``: tsv, senteval, stsbenchmark, sick, pit2015,
twitter-url, toks), and evaluation.

Pairs without a usable gold score are skipped and counted; a line that is not UTF-8, or
longer than 64 KiB, is an :class:`~paramill.io.InputError` naming file and line. Pearson and
Spearman are x100.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paramill.formats import registry
from paramill.correlation import pearson, spearman
from paramill.text.numbers import number
from paramill.formats.rows import Bad
from paramill.errors import InputError, check_name
from paramill.io.jsonfiles import COUNT

USE = "sts"
#: longest line read (an STS pair is a few hundred bytes)
MAX_LINE_BYTES = 65536
#: pairs read, encoded and scored at once (a multiple of the encoder's batch of 256)
CHUNK_PAIRS = 16_384
#: the bad lines an STS set may not have (an error: a gold set is curated, and a broken byte,
#: or a JSON Lines line that is no object, means the wrong file); any other bad line is a pair
#: without a score, skipped and counted
BROKEN = ("invalid_utf8", "not_text", "line_too_long", "not_json", "duplicate_key", "not_object",
          "bad_quote")


@dataclass
class StsData:
    name: str
    year: str
    s1: list[str] = field(default_factory=list)
    s2: list[str] = field(default_factory=list)
    gold: list[float] = field(default_factory=list)
    skipped: int = 0

    def add(self, a: str | None, b: str | None, score: str | float | None) -> None:
        value = number(score)  # a plain finite decimal, else the pair is skipped and counted
        if value is None or not a or not b:
            self.skipped += 1
            return
        self.s1.append(a)
        self.s2.append(b)
        self.gold.append(value)


_SCORE = {"type": ["number", "null"]}  # a correlation (null where it is undefined)
#: what `evaluate sts --json` writes, as far as `evaluate sweep` reads it
STS_RESULT = {"type": "object", "required": ["datasets", "years"], "properties": {
    "datasets": {"type": "array", "items": {
        "type": "object", "required": ["dataset", "year", "n", "pearson", "spearman"],
        "properties": {"dataset": {"type": "string"}, "year": {"type": "string"},
                       "n": COUNT, "pearson": _SCORE, "spearman": _SCORE}}},
    "years": {"type": "array", "items": {
        "type": "object", "required": ["year", "n", "pearson_mean", "spearman_mean", "pearson_weighted"],
        "properties": {"year": {"type": "string"}, "n": COUNT,
                       "pearson_mean": _SCORE, "spearman_mean": _SCORE, "pearson_weighted": _SCORE}}}}}


def chunks(name: str, year: str | int, fmt: str, path: str | Path,
           fields: dict[str, str] | None = None, size: int | None = None) -> Iterator[StsData]:
    """The dataset in layout ``fmt`` (``fields``: the columns a csv, json, jsonl or parquet set
    reads), ``size`` (:data:`CHUNK_PAIRS`) pairs with a gold score at a time, each counting
    the pairs skipped since the last (the last may hold none): a broken line
    (:data:`BROKEN`) is an :class:`~paramill.io.InputError`."""
    check_name(path)  # an empty path, or one holding a NUL byte, names no file
    size = size or CHUNK_PAIRS
    data = StsData(name, str(year))
    given = {"fields": fields} if fields else {}
    for row in registry.reader(USE, fmt)(str(path), MAX_LINE_BYTES, **given):
        if isinstance(row, Bad):
            if row.reason in BROKEN:
                raise InputError(path, row.line_no, row.detail)
            data.skipped += 1  # no usable gold score: skipped and counted, as elsewhere
        else:
            data.add(row.s1, row.s2, row.score)
            if len(data.gold) >= size:
                yield data
                data = StsData(name, str(year))
    yield data


def _none_read(path: str | Path, fmt: str, skipped: int) -> InputError:
    """Every line skipped: columns in another order, or not an STS set."""
    return InputError(path, None, f"no pair with a gold score could be read as {fmt} ({skipped} "
                      "skipped); check the set's format (tsv is score, s1, s2 a line)")


def read(name: str, year: str | int, fmt: str, path: str | Path,
         fields: dict[str, str] | None = None) -> StsData:
    """The whole dataset (see :func:`chunks`); a set without one pair with a gold score is an
    :class:`~paramill.io.InputError`."""
    data = StsData(name, str(year))
    for part in chunks(name, year, fmt, path, fields):
        data.s1 += part.s1
        data.s2 += part.s2
        data.gold += part.gold
        data.skipped += part.skipped
    if not data.gold:
        raise _none_read(path, fmt, data.skipped)
    return data


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return (a * b).sum(1)


def score(model, data: StsData) -> dict[str, Any]:
    """Pearson and Spearman (x100) of the model's cosines against the gold scores."""
    sims = cosine(model.encode(data.s1), model.encode(data.s2)) if len(data.gold) >= 2 else None
    return _row(data.name, data.year, sims, np.asarray(data.gold, dtype=np.float64), data.skipped)


def score_file(model, name: str, year: str | int, fmt: str, path: str | Path,
               fields: dict[str, str] | None = None) -> dict[str, Any]:
    """:func:`score` of the dataset read and encoded :data:`CHUNK_PAIRS` pairs at a time: what
    is held is a cosine and a gold score a pair, not the set's text and vectors (1M pairs of
    a 98 MB file held 5.3 GB at once)."""
    sims, gold, skipped = [], [], 0
    for part in chunks(name, year, fmt, path, fields):
        skipped += part.skipped
        if part.gold:
            sims.append(cosine(model.encode(part.s1), model.encode(part.s2)))
            gold.append(np.asarray(part.gold, dtype=np.float64))
    if not gold:
        raise _none_read(path, fmt, skipped)
    n = sum(len(g) for g in gold)
    return _row(name, str(year), np.concatenate(sims) if n >= 2 else None, np.concatenate(gold), skipped)


def _row(name: str, year: str, sims: np.ndarray | None, gold: np.ndarray, skipped: int) -> dict[str, Any]:
    row: dict[str, Any] = {"dataset": name, "year": year, "n": len(gold), "skipped": skipped,
                           "pearson": None, "spearman": None}
    if sims is not None and np.std(sims) > 0 and np.std(gold) > 0:
        row["pearson"] = round(100 * pearson(sims, gold), 2)
        row["spearman"] = round(100 * spearman(sims, gold), 2)
    return row


def by_year(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per year: the plain mean of its datasets' Pearson (as the papers report) and the mean
    weighted by pairs; both are given because users of the reference code asked which."""
    years: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["pearson"] is not None:
            years.setdefault(r["year"], []).append(r)
    out = []
    for year, rs in sorted(years.items()):
        n = sum(r["n"] for r in rs)
        out.append({"year": year, "datasets": len(rs), "n": n,
                    "pearson_mean": round(float(np.mean([r["pearson"] for r in rs])), 2),
                    "pearson_weighted": round(sum(r["pearson"] * r["n"] for r in rs) / n, 2),
                    "spearman_mean": round(float(np.mean([r["spearman"] for r in rs])), 2),
                    "spearman_weighted": round(sum(r["spearman"] * r["n"] for r in rs) / n, 2)})
    return out


def evaluate(model_path: str | Path, datasets: list[dict[str, Any]], out_tsv: str | Path,
             out_json: str | Path, rule: str = "sts_eval") -> dict[str, Any]:
    """Score a trained encoder on ``datasets`` (``name``, ``year``, ``format``, ``path``);
    write one row per dataset (TSV) and the rows plus per-year means (JSON)."""
    import polars as pl

    from paramill.embed.model import load_model
    from paramill.io.jsonfiles import write_json
    from paramill.run.job import output_job
    from paramill.provenance import Run

    from paramill.evaluate.settings import StsDataset

    for k, d in enumerate(datasets):  # the types, the format's name: before anything is read
        StsDataset.from_dict(d, f"datasets[{k}]")
    run = Run(rule=rule, params={"datasets": datasets},
              inputs=[model_path, *[d["path"] for d in datasets]])
    model = load_model(model_path)
    rows = [score_file(model, d["name"], d["year"], d["format"], d["path"], d.get("fields"))
            for d in datasets]
    result = {"model": str(model_path), "datasets": rows, "years": by_year(rows)}
    with output_job(run, out_tsv, out_json, rows_in=sum(r["n"] + r["skipped"] for r in rows)) as job:
        tsv, json_path = job.paths
        pl.DataFrame(rows, schema={"dataset": pl.String, "year": pl.String, "n": pl.Int64,
                                   "skipped": pl.Int64, "pearson": pl.Float64,
                                   "spearman": pl.Float64}).write_csv(tsv, separator="\t")
        write_json(json_path, result)
        job.rows_out = len(rows)
        job.extra["out_of_gpu_memory"] = model.out_of_gpu_memory  # batch sizes halved, if any
    return result


def collect(result_files: list[str | Path], points: dict[str, dict[str, Any]], out: str | Path,
            rule: str = "sweep") -> int:
    """One table of several models' STS results: a row per model and dataset, then a row
    per model and year with the plain and weighted means; ``points`` labels the models."""
    import json

    import polars as pl

    from paramill.io.jsonfiles import read_json_as
    from paramill.run.job import output_job
    from paramill.provenance import Run

    run = Run(rule=rule, params={"points": points}, inputs=list(result_files))
    rows = []
    for path in result_files:
        result = read_json_as(path, STS_RESULT, "an STS result (`paramill evaluate sts --json`)")
        name = Path(path).parent.name
        label = json.dumps(points.get(name, {}), sort_keys=True)
        for r in result["datasets"]:
            rows.append({"model": name, "setting": label, "dataset": r["dataset"], "year": r["year"],
                         "n": r["n"], "pearson": r["pearson"], "spearman": r["spearman"],
                         "pearson_weighted": None})
        for y in result["years"]:
            rows.append({"model": name, "setting": label, "dataset": f"mean {y['year']}",
                         "year": y["year"], "n": y["n"], "pearson": y["pearson_mean"],
                         "spearman": y["spearman_mean"], "pearson_weighted": y["pearson_weighted"]})
    frame = pl.DataFrame(rows, schema={"model": pl.String, "setting": pl.String, "dataset": pl.String,
                                       "year": pl.String, "n": pl.Int64, "pearson": pl.Float64,
                                       "spearman": pl.Float64, "pearson_weighted": pl.Float64})
    with output_job(run, out, rows_in=len(result_files)) as job:
        frame.write_csv(job.paths[0], separator="\t", quote_style="never")
        job.rows_out = frame.height
    return frame.height
