"""Semantic textual similarity: readers for the common distributions, and evaluation.

Formats (``format`` in the config):

``tsv``          ``score\\ts1\\ts2`` (SemEval STS 2012-2016 re-distributions, STS 2017)
``senteval``     SentEval's ``STS.input.<name>.txt`` + ``STS.gs.<name>.txt`` (give ``path``
                 to the input file; the gold file is found beside it)
``stsbenchmark`` STS Benchmark ``sts-{train,dev,test}.csv``: tab-separated, fields 5-7 are
                 score, s1, s2, with stray extra fields; read without quoting
``sick``         SICK with a header: ``pair_ID sentence_A sentence_B relatedness_score ...``
``pit2015``      PIT-2015 ``*.data``: s1, s2 in fields 3-4, votes ``(pos, neg)``: score = pos
``twitter-url``  Twitter URL corpus raw (:mod:`paramill.formats.twitter_url`; ``twitter_url``
                 is its old name, still read): ``s1\\ts2\\t(n,6)\\turl``: score = n
``toks``         a directory with ``a.toks``, ``b.toks``, ``sim.txt`` (tokenised distributions)

Pairs without a usable gold score are skipped and counted; a line that is not UTF-8, or
longer than 64 KiB, is an :class:`~paramill.io.InputError` naming file and line. Pearson and
Spearman are x100.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paramill import formats
from paramill.correlation import pearson, spearman
from paramill.fields import counts, number
from paramill.formats import Bad, pit2015, toks, twitter_url
from paramill.io import InputError

FORMATS = ("tsv", "senteval", "stsbenchmark", "sick", "pit2015", "twitter-url", "toks",
           "twitter_url")  # twitter_url: twitter-url's old name
#: longest line read (an STS pair is a few hundred bytes)
MAX_LINE_BYTES = 65536


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


def _lines(path: Path) -> list[str]:
    return formats.text_lines(path, MAX_LINE_BYTES)


def read(name: str, year: str | int, fmt: str, path: str | Path) -> StsData:
    """Read one dataset in ``fmt``; see the module doc."""
    path = Path(path)
    data = StsData(name, str(year))
    if fmt == "tsv":
        for line in _lines(path):
            f = line.split("\t")
            data.add(f[1] if len(f) > 1 else None, f[2] if len(f) > 2 else None, f[0])
    elif fmt == "senteval":
        gold_path = path.with_name(path.name.replace("STS.input.", "STS.gs."))
        inputs, gold = _lines(path), _lines(gold_path)
        if len(inputs) != len(gold):
            raise ValueError(f"{path}: {len(inputs)} pairs but {gold_path} has {len(gold)} scores")
        for line, score in zip(inputs, gold):
            f = line.split("\t")
            data.add(f[0], f[1] if len(f) > 1 else None, score)
    elif fmt == "stsbenchmark":
        for line in _lines(path):
            f = line.split("\t")
            data.add(f[5] if len(f) > 6 else None, f[6] if len(f) > 6 else None,
                     f[4] if len(f) > 6 else None)
    elif fmt == "sick":
        lines = _lines(path)
        header = lines[0].split("\t")
        ia, ib, isc = (header.index(c) for c in ("sentence_A", "sentence_B", "relatedness_score"))
        for line in lines[1:]:
            f = line.split("\t")
            data.add(f[ia], f[ib], f[isc] if len(f) > isc else None)
    elif formats.canonical(fmt) == twitter_url.NAME:
        for item in twitter_url.read(str(path), MAX_LINE_BYTES):
            if isinstance(item, Bad) and item.reason in ("invalid_utf8", "line_too_long"):
                raise InputError(path, item.line_no, item.detail)
            if isinstance(item, Bad):
                data.skipped += 1  # no usable gold score: skipped and counted, as elsewhere
            else:
                data.add(item.s1, item.s2, item.votes)
    elif fmt == pit2015.NAME:
        for pit in pit2015.read(str(path), MAX_LINE_BYTES):
            if isinstance(pit, Bad) and pit.reason in ("invalid_utf8", "line_too_long"):
                raise InputError(path, pit.line_no, pit.detail)
            found = None if isinstance(pit, Bad) else counts(pit.label)
            if found is None:
                data.skipped += 1  # no crowd votes: skipped and counted
            else:
                data.add(pit.s1.strip(), pit.s2.strip(), found[0])
    elif fmt == toks.NAME:
        for row in toks.read(path, MAX_LINE_BYTES):
            data.add(row.a, row.b, row.sim)
    else:
        raise ValueError(f"unknown STS format {fmt!r} (one of {FORMATS})")
    return data


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return (a * b).sum(1)


def score(model, data: StsData) -> dict[str, Any]:
    """Pearson and Spearman (x100) of the model's cosines against the gold scores."""
    row: dict[str, Any] = {"dataset": data.name, "year": data.year, "n": len(data.gold),
                           "skipped": data.skipped, "pearson": None, "spearman": None}
    if len(data.gold) >= 2:
        sims = cosine(model.encode(data.s1), model.encode(data.s2))
        if np.std(sims) > 0 and np.std(data.gold) > 0:
            row["pearson"] = round(100 * pearson(sims, data.gold), 2)
            row["spearman"] = round(100 * spearman(sims, data.gold), 2)
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
    from paramill.io import write_json
    from paramill.job import output_job
    from paramill.provenance import Run

    run = Run(rule=rule, params={"datasets": datasets},
              inputs=[model_path, *[d["path"] for d in datasets]])
    model = load_model(model_path)
    rows = [score(model, read(d["name"], d["year"], d["format"], d["path"])) for d in datasets]
    result = {"model": str(model_path), "datasets": rows, "years": by_year(rows)}
    with output_job(run, out_tsv, out_json, rows_in=sum(r["n"] + r["skipped"] for r in rows)) as job:
        tsv, json_path = job.paths
        pl.DataFrame(rows, schema={"dataset": pl.String, "year": pl.String, "n": pl.Int64,
                                   "skipped": pl.Int64, "pearson": pl.Float64,
                                   "spearman": pl.Float64}).write_csv(tsv, separator="\t")
        write_json(json_path, result)
        job.rows_out = len(rows)
    return result


def collect(result_files: list[str | Path], points: dict[str, dict[str, Any]], out: str | Path,
            rule: str = "sweep") -> int:
    """One table of several models' STS results: a row per model and dataset, then a row
    per model and year with the plain and weighted means; ``points`` labels the models."""
    import json

    import polars as pl

    from paramill.io import read_json
    from paramill.job import output_job
    from paramill.provenance import Run

    run = Run(rule=rule, params={"points": points}, inputs=list(result_files))
    rows = []
    for path in result_files:
        result = read_json(path)
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
