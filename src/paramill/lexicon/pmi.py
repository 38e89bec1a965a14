"""Word-pair counts from paraphrase pairs, partitioned on disk, and PMI scores.

Counts (ParaNMT appendix A.1), over word types present in a sentence:

- cross-sentence ``#(u, v)``: u in one side of a pair and v in the other (both directions,
  so the counts are symmetric); ``#(·,·)`` their total;
- single-sentence marginals ``#(u)``: sentences containing u (both sides);
- within-sentence co-occurrence ``w(u, v)`` (u ≠ v in the same sentence), kept separately
  for references (s1) and translations (s2), with per-side marginals and totals.

Scores, for pairs seen at least ``min_count`` times across sentences:

    pmi_cross    = log( #(u,v) #(·,·) / (#(u) #(v)) )
    pmi_ordinary = mean over the two sides of log( (w(u,v) + k) W / (m(u) m(v)) )
    pmi_adjusted = pmi_cross − pmi_ordinary

where W is the side's within-sentence total and m its marginals; ``k`` (``smoothing``,
default 1) keeps the ordinary PMI finite for pairs that never share a sentence — most true
paraphrases. A side on which u or v never occurs is left out of the mean.

Scale: pairs are read in chunks; each chunk's word-pair counts are aggregated with polars
and spilled to ``partitions`` files by hash of u; each partition is then summed on its own.
Memory is bounded by the chunk size and one partition, not by the corpus.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

from paramill.config import Settings
from paramill.io import atomic_output, iter_parquet_batches, write_json
from paramill.progress import progress
from paramill.provenance import Run, prov_path
from paramill.text import TOKEN_PATTERN

#: a short English stop-list (function words); replace it with `stoplist` (one word a line)
STOPWORDS = frozenset("""a an the and or but if of to in on at by for with from as is are was were be been
being it its this that these those he she they we you i me him her them us my your his our their
not no do does did have has had will would can could shall should may might must there here so
than then too very just also into onto over under about up down out off again further once""".split())


@dataclass(frozen=True)
class LexiconSettings(Settings):
    min_parascore: float | None = 0.35
    max_tokens: int = 30
    lowercase: bool = True
    stopwords: bool = True
    stoplist: str | None = None
    min_count: int = 10
    smoothing: float = 1.0
    chunk_pairs: int = 100_000
    partitions: int = 16
    top_k: int = 10
    word_pattern: str = r"^\w[\w'-]*$"  # tokens that are words (punctuation and symbols out)


def _stopwords(settings: LexiconSettings) -> list[str]:
    if settings.stoplist:
        return [w.strip() for w in Path(settings.stoplist).read_text(encoding="utf-8").splitlines() if w.strip()]
    return sorted(STOPWORDS) if settings.stopwords else []


def _word_lists(col: str, settings: LexiconSettings, stop: list[str]) -> pl.Expr:
    """Distinct words of a sentence column (lower-cased, stop words and punctuation out)."""
    expr = pl.col(col)
    if settings.lowercase:
        expr = expr.str.to_lowercase()
    words = expr.str.extract_all(TOKEN_PATTERN).list.eval(
        pl.element().filter(pl.element().str.contains(settings.word_pattern)
                            & ~pl.element().is_in(stop))).list.unique()
    return words


def read_pairs(paths: list[str | Path], settings: LexiconSettings):
    """Chunks of (s1 words, s2 words) lists of pairs passing the score and length limits."""
    stop = _stopwords(settings)
    for path in paths:
        names = pl.read_parquet_schema(path)
        if {"s1", "s2"} - set(names):
            raise ValueError(f"{path}: a corpus needs columns s1 and s2, has {list(names)}")
        if settings.min_parascore is not None and "parascore" not in names:
            raise ValueError(f"{path}: no parascore column for lexicon.min_parascore "
                             f"{settings.min_parascore} (set it to null to keep every pair)")
        columns = ["s1", "s2"] + (["parascore"] if settings.min_parascore is not None else [])
        for batch in iter_parquet_batches([path], batch_size=settings.chunk_pairs, columns=columns):
            frame = pl.from_arrow(batch)
            n_read = frame.height
            if settings.min_parascore is not None:
                frame = frame.filter(pl.col("parascore") >= settings.min_parascore)
            if settings.max_tokens:
                frame = frame.filter(
                    (pl.col("s1").str.count_matches(TOKEN_PATTERN) <= settings.max_tokens)
                    & (pl.col("s2").str.count_matches(TOKEN_PATTERN) <= settings.max_tokens))
            yield n_read, frame.select(a=_word_lists("s1", settings, stop),
                                       b=_word_lists("s2", settings, stop))


def _within(lists: pl.Series) -> pl.DataFrame:
    """(u, v) of distinct words sharing a sentence, u ≠ v, counted."""
    frame = pl.DataFrame({"u": lists}).with_row_index("s").with_columns(v=pl.col("u"))
    return (frame.explode("u").explode("v").drop_nulls().filter(pl.col("u") != pl.col("v"))
            .group_by("u", "v").len("n"))


def _cross(a: pl.Series, b: pl.Series) -> pl.DataFrame:
    frame = pl.DataFrame({"u": a, "v": b})
    one = frame.explode("u").explode("v").drop_nulls()
    both = pl.concat([one, one.select(u=pl.col("v"), v=pl.col("u"))])
    return both.filter(pl.col("u") != pl.col("v")).group_by("u", "v").len("n")


def _spill(frame: pl.DataFrame, root: Path, kind: str, chunk: int, partitions: int) -> None:
    part = frame.with_columns(p=(pl.col("u").hash(7) % partitions).cast(pl.Int32))
    for (p,), group in part.group_by(["p"]):
        group.drop("p").write_parquet(root / f"{kind}-p{p:03d}-c{chunk:06d}.parquet")


def count_and_score(corpus: list[str | Path], out_tsv: str | Path, out_neighbours: str | Path,
                    out_stats: str | Path, settings: LexiconSettings = LexiconSettings(),
                    rule: str = "lexicon") -> dict[str, Any]:
    run = Run(rule=rule, params=asdict(settings), inputs=[*corpus, *([settings.stoplist] if settings.stoplist else [])])
    start = time.perf_counter()
    out_tsv = Path(out_tsv)
    out_tsv.parent.mkdir(parents=True, exist_ok=True)
    totals = {"pairs_read": 0, "pairs_used": 0, "cross_total": 0, "within_ref_total": 0,
              "within_trans_total": 0}
    with tempfile.TemporaryDirectory(prefix="lexicon-", dir=out_tsv.parent) as tmp:
        root = Path(tmp)
        marg = {"all": [], "ref": [], "trans": []}
        bar = progress("lexicon counts", unit="pairs")
        for chunk, (n_read, lists) in enumerate(read_pairs(corpus, settings)):
            totals["pairs_read"] += n_read
            totals["pairs_used"] += lists.height
            if not lists.height:
                continue
            a, b = lists["a"], lists["b"]
            cross = _cross(a, b)
            w_ref, w_trans = _within(a), _within(b)
            totals["cross_total"] += int(cross["n"].sum())
            totals["within_ref_total"] += int(w_ref["n"].sum())
            totals["within_trans_total"] += int(w_trans["n"].sum())
            for kind, frame in (("cross", cross), ("ref", w_ref), ("trans", w_trans)):
                _spill(frame, root, kind, chunk, settings.partitions)
            ma = a.explode().drop_nulls().value_counts(name="n").rename({"a": "u"})
            mb = b.explode().drop_nulls().value_counts(name="n").rename({"b": "u"})
            marg["ref"].append(ma)
            marg["trans"].append(mb)
            if sum(m.height for m in marg["ref"]) > 5_000_000:  # keep marginals compact
                for k in ("ref", "trans"):
                    marg[k] = [pl.concat(marg[k]).group_by("u").agg(pl.col("n").sum())]
            bar.update(lists.height)
        bar.close()
        m_ref = pl.concat(marg["ref"]).group_by("u").agg(n=pl.col("n").sum()) if marg["ref"] else \
            pl.DataFrame(schema={"u": pl.String, "n": pl.UInt32})
        m_trans = pl.concat(marg["trans"]).group_by("u").agg(n=pl.col("n").sum()) if marg["trans"] else m_ref.clear()
        m_all = (pl.concat([m_ref, m_trans]).group_by("u").agg(n=pl.col("n").sum()))
        n_sentences = 2 * totals["pairs_used"]
        k = settings.smoothing
        scored_parts = []
        for p in range(settings.partitions):
            files = {kind: sorted(root.glob(f"{kind}-p{p:03d}-*.parquet")) for kind in ("cross", "ref", "trans")}
            if not files["cross"]:
                continue
            cross = (pl.scan_parquet(files["cross"]).group_by("u", "v").agg(count=pl.col("n").sum())
                     .filter(pl.col("count") >= settings.min_count).collect())
            if not cross.height:
                continue
            frame = cross
            for side, m_side, total_key in (("ref", m_ref, "within_ref_total"),
                                            ("trans", m_trans, "within_trans_total")):
                w = (pl.scan_parquet(files[side]).group_by("u", "v").agg(w=pl.col("n").sum()).collect()
                     if files[side] else pl.DataFrame(schema={"u": pl.String, "v": pl.String, "w": pl.UInt32}))
                frame = (frame.join(w.rename({"w": f"w_{side}"}), on=["u", "v"], how="left")
                         .join(m_side.rename({"n": f"mu_{side}"}), on="u", how="left")
                         .join(m_side.rename({"u": "v", "n": f"mv_{side}"}), on="v", how="left"))
                total = max(totals[total_key], 1)
                frame = frame.with_columns(
                    pl.when((pl.col(f"mu_{side}") > 0) & (pl.col(f"mv_{side}") > 0))
                    .then(((pl.col(f"w_{side}").fill_null(0) + k) * total
                           / (pl.col(f"mu_{side}") * pl.col(f"mv_{side}"))).log())
                    .otherwise(None).alias(f"pmi_{side}"))
            frame = (frame.join(m_all.rename({"n": "mu"}), on="u").join(m_all.rename({"u": "v", "n": "mv"}), on="v")
                     .with_columns(pmi_cross=(pl.col("count") * totals["cross_total"]
                                              / (pl.col("mu") * pl.col("mv"))).log(),
                                   pmi_ordinary=pl.mean_horizontal("pmi_ref", "pmi_trans")))
            frame = frame.with_columns(pmi_adjusted=pl.col("pmi_cross") - pl.col("pmi_ordinary").fill_null(0.0))
            part = root / f"scored-{p:03d}.parquet"
            frame.select("u", "v", "count", "pmi_cross", "pmi_adjusted", "pmi_ordinary").write_parquet(part)
            scored_parts.append(part)
        lexicon = (pl.scan_parquet(scored_parts) if scored_parts else
                   pl.LazyFrame(schema={"u": pl.String, "v": pl.String, "count": pl.UInt32,
                                        "pmi_cross": pl.Float64, "pmi_adjusted": pl.Float64,
                                        "pmi_ordinary": pl.Float64}))
        lexicon = lexicon.sort(["u", "pmi_adjusted", "v"], descending=[False, True, False])
        with atomic_output(out_tsv, out_neighbours, out_stats, prov_path(out_tsv),
                           prov_path(out_neighbours), prov_path(out_stats)) as tmps:
            t_tsv, t_nb, t_stats, p_tsv, p_nb, p_stats = tmps
            table = lexicon.select("u", "v", "count", pl.col("pmi_cross").round(4),
                                   pl.col("pmi_adjusted").round(4)).collect()
            table.write_csv(t_tsv, separator="\t")
            neighbours = (table.group_by("u", maintain_order=True)
                          .agg(neighbours=pl.col("v").head(settings.top_k).str.join(" ")))
            neighbours.write_csv(t_nb, separator="\t")
            stats = {**totals, "vocabulary": m_all.height, "sentences": n_sentences,
                     "lexicon_pairs": table.height, "words_with_neighbours": neighbours.height,
                     "seconds": round(time.perf_counter() - start, 1)}
            write_json(t_stats, stats)
            for final, t, pv in ((out_tsv, t_tsv, p_tsv), (out_neighbours, t_nb, p_nb), (out_stats, t_stats, p_stats)):
                run.write({final: t}, {final: pv}, rows_in=totals["pairs_read"], rows_out=table.height,
                          extra={"stats": stats})
    return stats

