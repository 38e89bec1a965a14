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
given an integer id (in the words' sort order). The second reads pairs in chunks; each
chunk's counts of unordered pairs are aggregated with polars as 64-bit keys
(min << 32 | max; both counts are symmetric, so half the ordered table), summed in memory
over chunks up to ``spill_rows`` rows and appended to ``partitions`` files by key (one
file a partition and kind, however many spills). Each partition is then summed on its
own, its within-sentence rows filtered to the keys that made the lexicon before summing,
and its scored pairs are written in both orders to ranges of u, which are sorted one at
a time into the TSV. Memory is bounded by the vocabulary, the chunk size, ``spill_rows``
and one partition, not by the corpus.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from paramill.formats import reading
from paramill.formats.parquet import check_text
from paramill.errors import InputError
from paramill.io.tableread import iter_parquet_batches, scan_scratch
from paramill.io.outputs import scratch_dir
from paramill.io.jsonfiles import write_json
from paramill.io.tableread import open_parquet
from paramill.run.job import output_job
from paramill.run.progress import progress
from paramill.provenance import Run
from paramill.config.typed import Name, Settings, setting
from paramill.text import TOKEN_PATTERN, regex_problem

#: a short English stop-list (function words, and the pieces the tokeniser cuts contractions
#: into: "doesn't" -> doesn, t); replace it with `stoplist` (one word a line)
STOPWORDS = frozenset("""a an the and or but if of to in on at by for with from as is are was were be been
being it its this that these those he she they we you i me him her them us my your his our their
not no do does did have has had will would can could shall should may might must there here so
than then too very just also into onto over under about up down out off again further once
s t d ll m re ve don doesn didn isn aren wasn weren haven hasn hadn won wouldn couldn shouldn
mustn needn shan""".split())


@dataclass(frozen=True)
class LexiconSettings(Settings):
    min_parascore: float | None = setting(
        0.35, "Pairs with a lower paraphrase score are left out (null keeps all).")
    max_tokens: int = setting(30, "Both sides at most this many tokens (0 = no limit).", minimum=0)
    lowercase: bool = setting(True, "Lower-case words.")
    stopwords: bool = setting(True, "Drop the built-in English stop-list.")
    stoplist: str | None = setting(None, "Your own stop-list (one word a line) instead.")
    min_count: int = setting(
        10, "Pairs seen fewer times across sentences are not reported.", minimum=1)
    smoothing: float = setting(
        1.0, "Added to within-sentence counts in the ordinary PMI.", minimum=0)
    chunk_pairs: int = setting(20_000, "Pairs counted per chunk (memory).", minimum=1, launch=True)
    partitions: int = setting(16, "On-disk partitions of the counts (memory).", minimum=1,
                              launch=True)
    spill_rows: int = setting(
        2_000_000,
        "Counts summed in memory over chunks up to this many rows (per kind) before they are "
        "spilled: less disk, more memory.", minimum=1, launch=True)
    top_k: int = setting(10, "Neighbours listed per word.", minimum=1)
    token_pattern: str = setting(
        TOKEN_PATTERN,
        'Regex of one token (default: paramill\'s tokeniser, which max_tokens counts with); e.g. "[\\w\'-]+|[^\\w\\s]" keeps don\'t and x-ray whole.', format="polars-regex")
    word_pattern: str = setting(r"^\w[\w'-]*$", "Tokens matching this are words.",
                                format="polars-regex")
    release: Name = setting(
        "default", "The released corpus to count in (default, or a name under filters.releases).",
        workflow=True)
    simlex: str | None = setting(
        None, "SimLex-999.txt (or a file in its format) to evaluate on; null skips it.", workflow=True)


def check_settings(settings: LexiconSettings) -> None:
    """Refuse patterns polars' regex engine cannot compile, before anything is read."""
    for key in ("token_pattern", "word_pattern"):
        if problem := regex_problem(getattr(settings, key)):
            raise ValueError(f"lexicon.{key} {getattr(settings, key)!r} is not a valid regex: {problem}")
    if settings.stoplist and not Path(settings.stoplist).is_file():
        raise ValueError(f"lexicon.stoplist {settings.stoplist}: no such file")


def _stopwords(settings: LexiconSettings) -> list[str]:
    if settings.stoplist:
        return [w.strip() for w in reading.text_lines(settings.stoplist) if w.strip()]
    return sorted(STOPWORDS) if settings.stopwords else []


def _word_lists(col: str, settings: LexiconSettings, stop: list[str]) -> pl.Expr:
    """Distinct words of a sentence column (lower-cased, stop words and punctuation out)."""
    expr = pl.col(col)
    if settings.lowercase:
        expr = expr.str.to_lowercase()
    words = expr.str.extract_all(settings.token_pattern).list.eval(
        pl.element().filter(pl.element().str.contains(settings.word_pattern)
                            & ~pl.element().is_in(stop))).list.unique()
    return words


def _numeric(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


#: a pair with a side longer than this (bytes) is left out, as one over ``max_tokens`` is:
#: the line limit of the readers (64 KiB), far over any sentence's length
MAX_SIDE_BYTES = 65536


def read_pairs(paths: list[str | Path], settings: LexiconSettings):
    """Chunks of (s1 words, s2 words) lists of pairs passing the score and length limits
    (``max_tokens`` and :data:`MAX_SIDE_BYTES`)."""
    stop = _stopwords(settings)
    for path in paths:
        schema = open_parquet(path).schema_arrow
        names = schema.names
        if {"s1", "s2"} - set(names):
            raise ValueError(f"{path}: a corpus needs columns s1 and s2, has {list(names)}")
        check_text(str(path), schema, ["s1", "s2"])
        if settings.min_parascore is not None and "parascore" not in names:
            raise ValueError(f"{path}: no parascore column for lexicon.min_parascore "
                             f"{settings.min_parascore} (set it to null to keep every pair)")
        if settings.min_parascore is not None and not _numeric(schema.field("parascore").type):
            raise InputError(path, None, f"column parascore holds {schema.field('parascore').type}"
                                         ", not numbers")
        columns = ["s1", "s2"] + (["parascore"] if settings.min_parascore is not None else [])
        for batch in iter_parquet_batches([path], batch_size=settings.chunk_pairs, columns=columns,
                                          guard=True):
            frame = pl.from_arrow(batch)
            n_read = frame.height
            # a side of one "word" of megabytes (a file made to, or a page's text) is no
            # sentence: its words were counted and paired (1,000 of 10 MB: 276 s, 22.9 GB)
            frame = frame.filter((pl.col("s1").str.len_bytes() <= MAX_SIDE_BYTES)
                                 & (pl.col("s2").str.len_bytes() <= MAX_SIDE_BYTES))
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


SHIFT = 1 << 32


def _pair_keys(left: pl.DataFrame, right: pl.DataFrame, within: bool) -> pl.DataFrame:
    """Counts of unordered word pairs {u, v}, u != v, as keys min << 32 | max.

    Cross (``left`` a chunk's s1 words, ``right`` its s2 words): the count of {u, v} is
    #{u in s1, v in s2} + #{v in s1, u in s2}, which is the symmetric #(u, v) itself, so the
    table is half the size of the ordered one. Within a sentence (``left`` is ``right``)
    each unordered pair is joined twice; only u < v is kept.
    """
    joined = left.join(right, on="row", suffix="_v")
    joined = joined.filter(pl.col("id") < pl.col("id_v")) if within else joined.filter(pl.col("id") != pl.col("id_v"))
    lo = pl.min_horizontal("id", "id_v").cast(pl.UInt64)
    hi = pl.max_horizontal("id", "id_v").cast(pl.UInt64)
    return joined.select(k=lo * SHIFT + hi).group_by("k").len("n")


class _SpillBuffer:
    """Counts of one kind, summed in memory over chunks up to ``spill_rows`` rows, then
    appended by partition (a mix of both ids of the key) to one open Parquet file a
    partition, ``<kind>-p<partition>.parquet``: the files on disk stay at ``partitions``
    per kind however large the corpus. Close it before reading the files."""

    def __init__(self, root: Path, kind: str, settings: LexiconSettings):
        self.root, self.kind, self.settings = root, kind, settings
        self.frames: list[pl.DataFrame] = []
        self.rows = self.spills = 0
        self.writers: dict[int, pq.ParquetWriter] = {}

    def add(self, counts: pl.DataFrame) -> None:
        self.frames.append(counts)
        self.rows += counts.height
        if self.rows >= self.settings.spill_rows:
            self.flush()

    def flush(self) -> None:
        if not self.frames:
            return
        summed = (pl.concat(self.frames).group_by("k").agg(pl.col("n").sum())
                  if len(self.frames) > 1 else self.frames[0])
        parts = self.settings.partitions
        summed = summed.select("k", pl.col("n").cast(pl.UInt32),
                               p=((pl.col("k") // SHIFT + pl.col("k") % SHIFT) % parts).cast(pl.Int32))
        for (p,), group in summed.partition_by("p", as_dict=True, include_key=False).items():
            table = group.to_arrow()
            if p not in self.writers:
                # lz4 without statistics: a third of zstd's time for these short-lived files
                self.writers[p] = pq.ParquetWriter(self.root / f"{self.kind}-p{p:03d}.parquet", table.schema,
                                                   compression="lz4", write_statistics=False,
                                                   use_dictionary=False)
            self.writers[p].write_table(table)
        self.frames, self.rows, self.spills = [], 0, self.spills + 1

    def close(self) -> None:
        self.flush()
        for writer in self.writers.values():
            writer.close()
        self.writers = {}


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


def _count(corpus: list[str | Path], vocab: pl.DataFrame, root: Path, settings: LexiconSettings,
           pairs_used: int) -> dict[str, int]:
    """Second pass: spill each chunk's cross and within-sentence counts to ``root``.

    Totals are over ordered pairs (each unordered pair twice), as the PMI formulas use them.
    """
    totals = {"cross_total": 0, "within_ref_total": 0, "within_trans_total": 0}
    buffers = {kind: _SpillBuffer(root, kind, settings) for kind in ("cross", "ref", "trans")}
    bar = progress("lexicon counts", unit="pairs", total=pairs_used)
    try:
        for _, lists in read_pairs(corpus, settings):
            if not lists.height:
                continue
            a, b = _long(lists["a"], vocab), _long(lists["b"], vocab)
            for kind, key, left, right in (("cross", "cross_total", a, b), ("ref", "within_ref_total", a, a),
                                           ("trans", "within_trans_total", b, b)):
                counts = _pair_keys(left, right, within=kind != "cross")
                totals[key] += 2 * int(counts["n"].sum())
                buffers[kind].add(counts)
            bar.update(lists.height)
    finally:
        for buffer in buffers.values():
            buffer.close()
        bar.close()
    return totals


def _score_partition(root: Path, p: int, ids: dict[str, pl.DataFrame], totals: dict[str, int],
                     settings: LexiconSettings) -> pl.DataFrame | None:
    """Sum one partition's counts; PMIs of its unordered pairs seen ``min_count`` times."""
    files = {kind: [f] if (f := root / f"{kind}-p{p:03d}.parquet").exists() else []
             for kind in ("cross", "ref", "trans")}
    if not files["cross"]:
        return None
    frame = (scan_scratch(files["cross"]).group_by("k").agg(count=pl.col("n").sum())
             .filter(pl.col("count") >= settings.min_count).collect())
    if not frame.height:
        return None
    frame = frame.with_columns(u=(pl.col("k") // SHIFT).cast(pl.UInt32), v=(pl.col("k") % SHIFT).cast(pl.UInt32))
    keys = frame.select("k")
    k = settings.smoothing
    for side, total_key in (("ref", "within_ref_total"), ("trans", "within_trans_total")):
        # only the keys that made the lexicon: filter the spilled rows before summing them
        w = (scan_scratch(files[side]).join(keys.lazy(), on="k", how="semi")
             .group_by("k").agg(pl.col("n").sum().alias(f"w_{side}")).collect()
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
             .with_columns(pmi_cross=(pl.col("count") * totals["cross_total"] / (pl.col("mu") * pl.col("mv"))).log(),
                           pmi_ordinary=pl.mean_horizontal("pmi_ref", "pmi_trans")))
    return frame.select("u", "v", pl.col("count").cast(pl.UInt32), pl.col("pmi_cross").round(4),
                        (pl.col("pmi_cross") - pl.col("pmi_ordinary").fill_null(0.0)).round(4).alias("pmi_adjusted"))


def count_and_score(corpus: list[str | Path], out_tsv: str | Path, out_neighbours: str | Path,
                    out_stats: str | Path, settings: LexiconSettings = LexiconSettings(),
                    rule: str = "lexicon", spill_dir: str | Path | None = None) -> dict[str, Any]:
    """Count, score and write the lexicon; the spill goes to a temporary directory under
    ``spill_dir`` (default: the TSV's directory) and is removed when done or failed."""
    check_settings(settings)
    run = Run(rule=rule, params=asdict(settings), inputs=[*corpus, *([settings.stoplist] if settings.stoplist else [])])
    start = time.perf_counter()
    out_tsv = Path(out_tsv)
    out_tsv.parent.mkdir(parents=True, exist_ok=True)
    m_ref, m_trans, pairs_read, pairs_used = _marginals(corpus, settings)
    m_all = pl.concat([m_ref, m_trans]).group_by("w").agg(n=pl.col("n").sum())
    # a pair is never seen more often than its rarer word: words under min_count cannot pair.
    # Ids follow the words' sort order, so sorting by id sorts by word.
    vocab = (m_all.filter(pl.col("n") >= settings.min_count).sort("w")
             .with_row_index("id").select("w", pl.col("id").cast(pl.UInt32)))
    ids = {name: vocab.join(m.rename({"n": name}), on="w", how="left").select("id", name)
           for name, m in (("m_ref", m_ref), ("m_trans", m_trans), ("m_all", m_all))}
    with scratch_dir(spill_dir or out_tsv.parent, "lexicon-") as root:
        totals = {"pairs_read": pairs_read, "pairs_used": pairs_used,
                  **_count(corpus, vocab, root, settings, pairs_used)}
        # score each hash partition; write both orders of each pair to ranges of u, so each
        # range sorted on its own gives the file sorted by u
        ranges = settings.partitions
        span = max(vocab.height, 1)
        bar = progress("lexicon scores", unit="partitions", total=settings.partitions)
        for p in range(settings.partitions):
            scored = _score_partition(root, p, ids, totals, settings)
            bar.update(1)
            if scored is None:
                continue
            both = pl.concat([scored, scored.select(u="v", v="u", count="count", pmi_cross="pmi_cross",
                                                    pmi_adjusted="pmi_adjusted")])
            both = both.with_columns(r=(pl.col("u").cast(pl.UInt64) * ranges // span).cast(pl.Int32))
            for (r,), group in both.group_by(["r"]):
                group.drop("r").write_parquet(root / f"scored-r{r:03d}-p{p:03d}.parquet")
        bar.close()
        words = vocab["w"]
        lexicon_pairs = words_with_neighbours = 0
        with output_job(run, out_tsv, out_neighbours, out_stats, rows_in=totals["pairs_read"],
                        each=True) as job:
            t_tsv, t_nb, t_stats = job.paths
            with open(t_tsv, "w", encoding="utf-8") as f_tsv, open(t_nb, "w", encoding="utf-8") as f_nb:
                f_tsv.write("u\tv\tcount\tpmi_cross\tpmi_adjusted\n")
                f_nb.write("u\tneighbours\n")
                for r in range(ranges):
                    files = sorted(root.glob(f"scored-r{r:03d}-*.parquet"))
                    if not files:
                        continue
                    table = (scan_scratch(files).collect()
                             .sort(["u", "pmi_adjusted", "v"], descending=[False, True, False]))
                    table = table.with_columns(u=words.gather(table["u"]), v=words.gather(table["v"]))
                    table.write_csv(f_tsv, separator="\t", include_header=False)
                    neighbours = (table.group_by("u", maintain_order=True)
                                  .agg(neighbours=pl.col("v").head(settings.top_k).str.join(" ")))
                    neighbours.write_csv(f_nb, separator="\t", include_header=False)
                    lexicon_pairs += table.height
                    words_with_neighbours += neighbours.height
            stats = {**totals, "vocabulary": m_all.height, "vocabulary_kept": vocab.height,
                     "sentences": 2 * totals["pairs_used"], "lexicon_pairs": lexicon_pairs,
                     "words_with_neighbours": words_with_neighbours,
                     "seconds": round(time.perf_counter() - start, 1)}
            # the time goes to provenance only: stats.json is the same bytes run to run
            write_json(t_stats, {k: v for k, v in stats.items() if k != "seconds"})
            job.rows_out, job.extra = lexicon_pairs, {"stats": stats}
    return stats
