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

Scale: two passes over the corpus. The first counts the marginals and keeps the words seen
in at least ``min_count`` sentences (no pair is seen more often than its rarer word), each
given an integer id. The second reads pairs in chunks; each chunk's word-pair counts are
aggregated with polars as 64-bit keys (u << 32 | v) and spilled to ``partitions`` files by
u; each partition is then summed on its own. Memory is bounded by the vocabulary, the
chunk size and one partition, not by the corpus.
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
    chunk_pairs: int = 20_000
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


def _long(lists: pl.Series, vocab: pl.DataFrame) -> pl.DataFrame:
    """(row, id) of every kept word of every sentence (words under min_count dropped)."""
    frame = pl.DataFrame({"w": lists}).with_row_index("row").explode("w").drop_nulls()
    return frame.join(vocab, on="w", how="inner").select("row", "id")


def _pair_keys(left: pl.DataFrame, right: pl.DataFrame, symmetric: bool) -> pl.DataFrame:
    """Counts of (u, v), u != v, co-occurring in a row, as 64-bit keys u << 32 | v."""
    joined = left.join(right, on="row", suffix="_v").filter(pl.col("id") != pl.col("id_v"))
    keys = (pl.col("id").cast(pl.UInt64) * (1 << 32) + pl.col("id_v").cast(pl.UInt64)).alias("k")
    counts = joined.select(keys).group_by("k").len("n")
    if symmetric:  # add (v, u) for every (u, v): transpose the (smaller) aggregated table
        back = counts.select(k=(pl.col("k") % (1 << 32)) * (1 << 32) + pl.col("k") // (1 << 32), n="n")
        counts = pl.concat([counts, back]).group_by("k").agg(pl.col("n").sum())
    return counts


def _spill(frame: pl.DataFrame, root: Path, kind: str, chunk: int, partitions: int) -> None:
    part = frame.with_columns(p=((pl.col("k") // (1 << 32)) % partitions).cast(pl.Int32))
    for (p,), group in part.group_by(["p"]):
        group.drop("p").write_parquet(root / f"{kind}-p{p:03d}-c{chunk:06d}.parquet")


def _marginals(corpus: list[str | Path], settings: LexiconSettings) -> tuple[pl.DataFrame, pl.DataFrame, int, int]:
    """Sentences containing each word, on references (s1) and translations (s2)."""
    ref, trans, read, used = [], [], 0, 0
    for n_read, lists in read_pairs(corpus, settings):
        read += n_read
        used += lists.height
        ref.append(lists["a"].explode().drop_nulls().value_counts(name="n").rename({"a": "w"}))
        trans.append(lists["b"].explode().drop_nulls().value_counts(name="n").rename({"b": "w"}))
        if len(ref) > 20:  # keep them compact
            ref = [pl.concat(ref).group_by("w").agg(pl.col("n").sum())]
            trans = [pl.concat(trans).group_by("w").agg(pl.col("n").sum())]
    empty = pl.DataFrame(schema={"w": pl.String, "n": pl.UInt32})
    total = [pl.concat(x).group_by("w").agg(pl.col("n").sum()) if x else empty for x in (ref, trans)]
    return total[0], total[1], read, used


def count_and_score(corpus: list[str | Path], out_tsv: str | Path, out_neighbours: str | Path,
                    out_stats: str | Path, settings: LexiconSettings = LexiconSettings(),
                    rule: str = "lexicon") -> dict[str, Any]:
    run = Run(rule=rule, params=asdict(settings), inputs=[*corpus, *([settings.stoplist] if settings.stoplist else [])])
    start = time.perf_counter()
    out_tsv = Path(out_tsv)
    out_tsv.parent.mkdir(parents=True, exist_ok=True)
    totals = {"pairs_read": 0, "pairs_used": 0, "cross_total": 0, "within_ref_total": 0,
              "within_trans_total": 0}
    m_ref, m_trans, totals["pairs_read"], totals["pairs_used"] = _marginals(corpus, settings)
    m_all = pl.concat([m_ref, m_trans]).group_by("w").agg(n=pl.col("n").sum())
    # a pair is never seen more often than its rarer word: words under min_count cannot pair
    vocab = (m_all.filter(pl.col("n") >= settings.min_count).sort("w")
             .with_row_index("id").select("w", pl.col("id").cast(pl.UInt32)))
    ids = {name: vocab.join(m.rename({"n": name}), on="w", how="left").select("id", name)
           for name, m in (("m_ref", m_ref), ("m_trans", m_trans), ("m_all", m_all))}
    with tempfile.TemporaryDirectory(prefix="lexicon-", dir=out_tsv.parent) as tmp:
        root = Path(tmp)
        bar = progress("lexicon counts", unit="pairs", total=totals["pairs_used"])
        for chunk, (_, lists) in enumerate(read_pairs(corpus, settings)):
            if not lists.height:
                continue
            a, b = _long(lists["a"], vocab), _long(lists["b"], vocab)
            counts = {"cross": _pair_keys(a, b, symmetric=True), "ref": _pair_keys(a, a, symmetric=False),
                      "trans": _pair_keys(b, b, symmetric=False)}
            for kind, key in (("cross", "cross_total"), ("ref", "within_ref_total"), ("trans", "within_trans_total")):
                totals[key] += int(counts[kind]["n"].sum())
                _spill(counts[kind], root, kind, chunk, settings.partitions)
            bar.update(lists.height)
        bar.close()
        k = settings.smoothing
        scored_parts = []
        for p in range(settings.partitions):
            files = {kind: sorted(root.glob(f"{kind}-p{p:03d}-*.parquet")) for kind in ("cross", "ref", "trans")}
            if not files["cross"]:
                continue
            frame = (pl.scan_parquet(files["cross"]).group_by("k").agg(count=pl.col("n").sum())
                     .filter(pl.col("count") >= settings.min_count).collect())
            if not frame.height:
                continue
            frame = frame.with_columns(u=(pl.col("k") // (1 << 32)).cast(pl.UInt32),
                                       v=(pl.col("k") % (1 << 32)).cast(pl.UInt32))
            for side, total_key in (("ref", "within_ref_total"), ("trans", "within_trans_total")):
                w = (pl.scan_parquet(files[side]).group_by("k").agg(pl.col("n").sum().alias(f"w_{side}")).collect()
                     if files[side] else pl.DataFrame(schema={"k": pl.UInt64, f"w_{side}": pl.UInt32}))
                m = ids[f"m_{side}"]
                frame = (frame.join(w, on="k", how="left")
                         .join(m.rename({"id": "u", f"m_{side}": f"mu_{side}"}), on="u", how="left")
                         .join(m.rename({"id": "v", f"m_{side}": f"mv_{side}"}), on="v", how="left"))
                total = max(totals[total_key], 1)
                frame = frame.with_columns(
                    pl.when((pl.col(f"mu_{side}") > 0) & (pl.col(f"mv_{side}") > 0))
                    .then(((pl.col(f"w_{side}").fill_null(0) + k) * total
                           / (pl.col(f"mu_{side}") * pl.col(f"mv_{side}"))).log())
                    .otherwise(None).alias(f"pmi_{side}"))
            m = ids["m_all"]
            frame = (frame.join(m.rename({"id": "u", "m_all": "mu"}), on="u")
                     .join(m.rename({"id": "v", "m_all": "mv"}), on="v")
                     .with_columns(pmi_cross=(pl.col("count") * totals["cross_total"]
                                              / (pl.col("mu") * pl.col("mv"))).log(),
                                   pmi_ordinary=pl.mean_horizontal("pmi_ref", "pmi_trans")))
            frame = (frame.with_columns(pmi_adjusted=pl.col("pmi_cross") - pl.col("pmi_ordinary").fill_null(0.0))
                     .join(vocab.rename({"id": "u", "w": "u_w"}), on="u")
                     .join(vocab.rename({"id": "v", "w": "v_w"}), on="v")
                     .select(u="u_w", v="v_w", count="count", pmi_cross="pmi_cross",
                             pmi_adjusted="pmi_adjusted", pmi_ordinary="pmi_ordinary"))
            part = root / f"scored-{p:03d}.parquet"
            frame.write_parquet(part)
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
            stats = {**totals, "vocabulary": m_all.height, "vocabulary_kept": vocab.height,
                     "sentences": 2 * totals["pairs_used"],
                     "lexicon_pairs": table.height, "words_with_neighbours": neighbours.height,
                     "seconds": round(time.perf_counter() - start, 1)}
            write_json(t_stats, stats)
            for final, t, pv in ((out_tsv, t_tsv, p_tsv), (out_neighbours, t_nb, p_nb), (out_stats, t_stats, p_stats)):
                run.write({final: t}, {final: pv}, rows_in=totals["pairs_read"], rows_out=table.height,
                          extra={"stats": stats})
    return stats

