"""Analysis of scored candidates and of a released corpus.

- ParaNMT Table 1 on the corpus: average length, average IDF (IDF from a configurable
  reference corpus, one document a line; by default the corpus's references), average
  paraphrase score, vocabulary entropy.
- ParaNMT Table 3 over every scored candidate: pairs per paraphrase-score range with the
  mean and standard deviation of trigram overlap, and a seeded sample of up to 100 pairs
  per range exported for annotation (paraphrase and fluency columns left blank, 1-3).
- Wieting 2017 Table 9 on a random sample of best candidates: unigram and trigram entropy
  and repetition rate (the percentage of n-grams already seen earlier in the same sentence;
  unigrams of at least 3 characters) of references vs translations, and their difference.
- Wieting 2017 Table 10 on the same sample: Spearman x100 between the classifier's
  P(reference) of the translation and its unigram/trigram repetition rate, average IDF,
  and length.
Entropies are in bits over pooled, lower-cased token counts. Everything streams shard by
shard; the sample has a bounded size.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from paramill.filters.ngrams import ngram_counts
from paramill.io.tableread import iter_parquet_batches, schema_of
from paramill.run.plan import DISTINCT_SHARE
from paramill.config.typed import Settings, setting
from paramill.text import tokenize


@dataclass(frozen=True)
class AnalysisSettings(Settings):
    sample: int = setting(
        100000, "Random candidates for Tables 9-10, histograms and the annotation sample.",
        minimum=1)
    idf_corpus: str | None = setting(
        None, "Text file, one document a line, for IDF (ParaNMT: Wikipedia sentences); null = the "
        "corpus's references.")
    parascore_edges: list[float] = setting(
        factory=lambda: [0.2, 0.4, 0.6, 0.8],
        doc="Upper edges of the paraphrase-score ranges (ParaNMT Table 3).")
    annotate: int = setting(100, "Pairs per range exported for annotation.", minimum=0)
    seed: int = setting(13, "Seed of the samples.")


def tokens(text: str) -> list[str]:
    return tokenize(text.lower())


def entropy(counts: Counter) -> float:
    """Shannon entropy in bits of a count distribution."""
    total = sum(counts.values())
    if not total:
        return 0.0
    return -sum(c / total * math.log2(c / total) for c in counts.values() if c)


def repeats(toks: list[str], n: int, min_chars: int = 0) -> tuple[int, int]:
    """(n-grams already seen earlier in the sentence, n-grams counted)."""
    seen: set[tuple[str, ...]] = set()
    rep = total = 0
    for i in range(len(toks) - n + 1):
        gram = tuple(toks[i:i + n])
        if n == 1 and len(gram[0]) < min_chars:
            continue
        total += 1
        if gram in seen:
            rep += 1
        seen.add(gram)
    return rep, total


def repetition_rate(sentences: Iterable[list[str]], n: int, min_chars: int = 0) -> float:
    """Percentage of n-grams that repeat one earlier in their sentence (pooled)."""
    rep = total = 0
    for toks in sentences:
        r, t = repeats(toks, n, min_chars)
        rep += r
        total += t
    return 100.0 * rep / total if total else 0.0


def diversity(sentences: list[list[str]]) -> dict[str, float]:
    uni: Counter = Counter()
    tri: Counter = Counter()
    for toks in sentences:
        uni.update(ngram_counts(toks, 1))
        tri.update(ngram_counts(toks, 3))
    return {"unigram_entropy": entropy(uni), "trigram_entropy": entropy(tri),
            "unigram_repetition": repetition_rate(sentences, 1, min_chars=3),
            "trigram_repetition": repetition_rate(sentences, 3)}


class Idf:
    """Inverse document frequency, log(N / df), from documents given one a line; a word
    never seen gets df = 1 (the rarest)."""

    def __init__(self, documents: Iterable[str]):
        df: Counter = Counter()
        n = 0
        for doc in documents:
            n += 1
            df.update(set(tokens(doc)))
        self.n = max(n, 1)
        self.df = df

    def __call__(self, word: str) -> float:
        return math.log(self.n / self.df.get(word, 1))

    def mean(self, toks: list[str]) -> float | None:
        return sum(map(self, toks)) / len(toks) if toks else None


def read_lines(path: str | Path) -> Iterable[str]:
    """The IDF corpus's lines (one sentence a line; strict UTF-8, errors name file and line)."""
    from paramill.formats.reading import strict_lines

    for _, line in strict_lines(path):
        yield line


def _spearman(x: list[float], y: list[float]) -> float | None:
    from paramill.correlation import spearman

    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    if len(pairs) < 3 or len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        return None  # undefined for a constant input
    rho = spearman([a for a, _ in pairs], [b for _, b in pairs])
    return None if rho != rho else round(100.0 * float(rho), 2)


def repetition(corpus: str | Path, column: str = "s2") -> dict[str, Any]:
    """How many of a release's paraphrases (``column``) are distinct, and the one repeated
    most: hashed a batch at a time (8 bytes a row), the text looked up in a second pass."""
    import numpy as np

    hashes = [pl.from_arrow(b).get_column(column).hash(13).to_numpy()
              for b in iter_parquet_batches([corpus], columns=[column])]
    if not hashes or not sum(len(h) for h in hashes):
        return {"pairs": 0, "distinct": 0}
    values, counts = np.unique(np.concatenate(hashes), return_counts=True)
    top = int(np.argmax(counts))  # the smallest hash among the most repeated: deterministic
    text = next(row for b in iter_parquet_batches([corpus], columns=[column])
                for frame in [pl.from_arrow(b)]
                for row in frame.filter(frame.get_column(column).hash(13) == values[top])
                .get_column(column).to_list())
    n = int(counts.sum())
    return {"pairs": n, "distinct": len(values), "distinct_share": round(len(values) / n, 4),
            "most_repeated": text, "most_repeated_count": int(counts[top]),
            "degenerate": len(values) / n < DISTINCT_SHARE}


def corpus_stats(corpus: str | Path, idf: Idf) -> dict[str, Any]:
    """ParaNMT Table 1 figures of a released corpus (streamed)."""
    n = 0
    length = {"s1": 0, "s2": 0}
    idf_sum = {"s1": 0.0, "s2": 0.0}
    vocab = {"s1": Counter(), "s2": Counter()}
    para_sum, para_n = 0.0, 0
    names = schema_of(corpus).names
    columns = ["s1", "s2"] + (["parascore"] if "parascore" in names else [])
    for batch in iter_parquet_batches([corpus], columns=columns):
        frame = pl.from_arrow(batch)
        for row in frame.iter_rows(named=True):
            n += 1
            for side in ("s1", "s2"):
                toks = tokens(row[side])
                length[side] += len(toks)
                idf_sum[side] += idf.mean(toks) or 0.0
                vocab[side].update(toks)
            if row.get("parascore") is not None:
                para_sum += row["parascore"]
                para_n += 1
    if not n:
        return {"pairs": 0}
    return {"pairs": n,
            **{f"avg_length_{s}": round(length[s] / n, 3) for s in ("s1", "s2")},
            **{f"avg_idf_{s}": round(idf_sum[s] / n, 4) for s in ("s1", "s2")},
            "avg_parascore": round(para_sum / para_n, 4) if para_n else None,
            **{f"vocab_entropy_{s}": round(entropy(vocab[s]), 4) for s in ("s1", "s2")},
            **{f"vocab_size_{s}": len(vocab[s]) for s in ("s1", "s2")}}


def range_labels(edges: list[float]) -> list[str]:
    bounds = [-math.inf, *edges, math.inf]
    return [f"({lo:g}, {hi:g}]" for lo, hi in zip(bounds, bounds[1:])]


def range_expr(column: str, edges: list[float]) -> pl.Expr:
    """The (lo, hi] range label of each value."""
    labels = range_labels(edges)
    expr = pl.lit(labels[-1])
    for edge, label in reversed(list(zip(edges, labels))):
        expr = pl.when(pl.col(column) <= edge).then(pl.lit(label)).otherwise(expr)
    return expr


@dataclass
class _Accumulator:
    edges: list[float]
    counts: Counter = field(default_factory=Counter)
    tri_sum: Counter = field(default_factory=Counter)
    tri_sq: Counter = field(default_factory=Counter)

    def add(self, frame: pl.DataFrame) -> None:
        if "parascore" not in frame.columns:
            return
        has_tri = "overlap_3" in frame.columns
        grouped = frame.with_columns(_range=range_expr("parascore", self.edges)).group_by("_range").agg(
            n=pl.len(),
            s=pl.col("overlap_3").sum() if has_tri else pl.lit(0.0),
            q=(pl.col("overlap_3") ** 2).sum() if has_tri else pl.lit(0.0))
        for label, n, s, q in grouped.iter_rows():
            self.counts[label] += n
            self.tri_sum[label] += s or 0.0
            self.tri_sq[label] += q or 0.0

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for label in range_labels(self.edges):
            n = self.counts[label]
            mean = self.tri_sum[label] / n if n else None
            var = self.tri_sq[label] / n - mean * mean if n else None
            rows.append({"range": label, "pairs": n,
                         "trigram_overlap_mean": None if mean is None else round(mean, 4),
                         "trigram_overlap_std": None if var is None else round(math.sqrt(max(var, 0.0)), 4)})
        return rows


def analyse(scored_shards: Iterable[pl.DataFrame], total: int, corpus: str | Path,
            settings: AnalysisSettings = AnalysisSettings()) -> tuple[dict[str, Any], pl.DataFrame]:
    """All tables; returns (stats, the random sample of scored candidates)."""
    fraction = min(1.0, settings.sample / total) if total else 1.0
    threshold = min(int(fraction * 2**64), 2**64 - 1)
    ranges = _Accumulator(list(settings.parascore_edges))
    samples = []
    for frame in scored_shards:
        ranges.add(frame)
        samples.append(frame.filter(pl.col("candidate_id").hash(settings.seed)
                                    <= pl.lit(threshold, dtype=pl.UInt64)))
    sample = pl.concat(samples, how="diagonal_relaxed") if samples else pl.DataFrame()
    if settings.idf_corpus:
        idf = Idf(read_lines(settings.idf_corpus))
        idf_source = settings.idf_corpus
    else:
        idf = Idf(row[0] for b in iter_parquet_batches([corpus], columns=["s1"])
                  for row in pl.from_arrow(b).iter_rows())
        idf_source = "the corpus's references (s1)"
    stats: dict[str, Any] = {"settings": asdict(settings), "idf_corpus": idf_source,
                             "corpus": corpus_stats(corpus, idf),
                             "paraphrases": repetition(corpus),
                             "parascore_ranges": ranges.table() if ranges.counts else None,
                             "scored_candidates": total, "sample": sample.height}
    best = sample.filter(pl.col("rank") == 1) if sample.height else sample
    if best.height:
        ref_toks = [tokens(s) for s in best.get_column("en_ref").to_list()]
        cand_toks = [tokens(s) for s in best.get_column("candidate").to_list()]
        refs, trans = diversity(ref_toks), diversity(cand_toks)
        stats["references_vs_translations"] = {
            k: {"references": round(refs[k], 4), "translations": round(trans[k], 4),
                "difference": round(refs[k] - trans[k], 4)} for k in refs}
        if "classifier" in best.columns:
            p_ref = best.get_column("classifier").to_list()
            stats["classifier_correlations"] = {
                "unigram_repetition": _spearman(p_ref, [_rate(t, 1, 3) for t in cand_toks]),
                "trigram_repetition": _spearman(p_ref, [_rate(t, 3, 0) for t in cand_toks]),
                "average_idf": _spearman(p_ref, [idf.mean(t) for t in cand_toks]),
                "length": _spearman(p_ref, [float(len(t)) for t in cand_toks])}
    return stats, sample


def _rate(toks: list[str], n: int, min_chars: int) -> float | None:
    rep, total = repeats(toks, n, min_chars)
    return 100.0 * rep / total if total else None


def annotation_sample(sample: pl.DataFrame, edges: list[float], per_range: int, seed: int
                      ) -> pl.DataFrame:
    """Up to ``per_range`` pairs per paraphrase-score range, seeded, with blank judgement
    columns (paraphrase 1-3, fluency 1-3; ParaNMT §3.3)."""
    if "parascore" not in sample.columns or not sample.height:
        return pl.DataFrame(schema={"range": pl.String, "parascore": pl.Float64, "s1": pl.String,
                                    "s2": pl.String, "candidate_id": pl.String,
                                    "paraphrase": pl.String, "fluency": pl.String})
    rng = random.Random(seed)
    labelled = sample.with_columns(range=range_expr("parascore", edges))
    parts = []
    for label in range_labels(edges):
        group = labelled.filter(pl.col("range") == label).sort("candidate_id")
        if group.height:
            idx = sorted(rng.sample(range(group.height), min(per_range, group.height)))
            parts.append(group[idx])
    out = pl.concat(parts) if parts else labelled.head(0)
    return out.select("range", "parascore", s1=pl.col("en_ref"), s2=pl.col("candidate"),
                      candidate_id=pl.col("candidate_id"), paraphrase=pl.lit(""), fluency=pl.lit(""))


def score_histograms(sample: pl.DataFrame, columns: list[str], path: str | Path,
                     title: str = "") -> int:
    """One histogram per score column of ``sample`` (a random sample of scored candidates),
    written to ``path`` (PNG). Returns the number of panels. The caller writes provenance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    columns = [c for c in columns if c in sample.columns]
    n = max(1, len(columns))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, columns):
        values = sample.get_column(name).drop_nulls().cast(pl.Float64)
        values = values.filter(values.is_finite()).to_list()
        ax.hist(values, bins=40, color="#4878a8")
        ax.set_title(f"{name} (n={len(values)})", fontsize=10)
        ax.set_ylabel("candidates")
    for ax in list(axes.flat)[len(columns):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return len(columns)
