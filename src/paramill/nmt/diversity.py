"""Diversity of paraphrases by rank (ParaBank 2 Tables 1 and 2).

Against the reference, for each rank r (1..n): 1 − BLEU (sacrebleu's corpus BLEU of the
rank-r paraphrases against their references, on SentencePiece pieces), the mean bag-of-pieces
intersection over union (multisets: Σ min / Σ max of the piece counts), and the mean length
ratio (pieces of the paraphrase / pieces of the reference). Collective diversity: the same
two measures between a source's own paraphrases, for every pair of ranks (r < s, rank s
scored against rank r), and their mean. The tables are streamed into running sums
(:class:`Against`: corpus BLEU from its summed n-gram counts, as sacrebleu computes it), so
a corpus of tens of millions of candidates is read in bounded memory; the tables are summed
apart (in as many worker processes as the job has threads) and their sums added.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from paramill.errors import InputError
from paramill.io.tableread import iter_parquet_batches
from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.run.pools import ordered_map
from paramill.nmt.subwords import Segmenter
from paramill.provenance import Run


#: BLEU's longest n-gram (sacrebleu's default)
MAX_ORDER = 4


class Grams:
    """A sequence's length and n-gram counts of each order up to :data:`MAX_ORDER`, counted
    once however many comparisons it is in (a reference against each of its candidates, a
    rank against each other rank). Its unigram counts are its bag of pieces."""

    __slots__ = ("length", "counts")

    def __init__(self, pieces: list[str]) -> None:
        self.length = len(pieces)
        self.counts = [Counter(zip(*(pieces[i:] for i in range(order))))
                       for order in range(1, min(MAX_ORDER, len(pieces)) + 1)]


class Against:
    """Running sums of one comparison, hypotheses against references (a rank's paraphrases
    against their references, or rank s against rank r of each source): corpus BLEU's
    n-gram counts and lengths, the bag IoU and the length ratio."""

    __slots__ = ("correct", "total", "sys_len", "ref_len", "iou", "ratio", "n")

    def __init__(self) -> None:
        self.correct, self.total = [0] * MAX_ORDER, [0] * MAX_ORDER
        self.sys_len = self.ref_len = self.n = 0
        self.iou = self.ratio = 0.0

    def add(self, hyp: Grams, ref: Grams) -> None:
        """One pair: its clipped n-gram matches and counts (as sacrebleu counts a segment's:
        the pieces are its tokens), its lengths, bag IoU (the clipped unigram matches over
        the bags' union) and length ratio."""
        self.n += 1
        self.sys_len += hyp.length
        self.ref_len += ref.length
        shared = 0
        for order, grams in enumerate(hyp.counts):
            theirs = ref.counts[order] if order < len(ref.counts) else {}
            matched = sum(min(c, theirs.get(g, 0)) for g, c in grams.items())
            if order == 0:  # the bags' intersection
                shared = matched
            self.correct[order] += matched
            self.total[order] += hyp.length - order
        union = hyp.length + ref.length - shared
        self.iou += shared / union if union else 1.0
        self.ratio += hyp.length / max(1, ref.length)

    def merge(self, other: Against) -> None:
        """Add another's sums (of other pairs) to these."""
        for order in range(MAX_ORDER):
            self.correct[order] += other.correct[order]
            self.total[order] += other.total[order]
        self.sys_len += other.sys_len
        self.ref_len += other.ref_len
        self.n += other.n
        self.iou += other.iou
        self.ratio += other.ratio

    def measures(self) -> dict[str, float]:
        return {"one_minus_bleu": round(1.0 - self.bleu(), 4), "bag_iou": round(self.iou / self.n, 4),
                "length_ratio": round(self.ratio / self.n, 4)}

    def bleu(self) -> float:
        """Corpus BLEU of the pairs added (0-1): sacrebleu's formula on the summed counts,
        with ``corpus_bleu``'s exponential smoothing (what ``corpus_bleu`` over the same
        pairs, ``tokenize="none"``, gives)."""
        from sacrebleu.metrics.bleu import BLEU

        return BLEU.compute_bleu(self.correct, self.total, self.sys_len, self.ref_len,
                                 smooth_method="exp", max_ngram_order=MAX_ORDER).score / 100.0


def bag_iou(a: list[str], b: list[str]) -> float:
    """Intersection over union of two bags (multisets) of pieces: Σ min / Σ max of the
    counts (1 for two empty bags)."""
    one = Against()
    one.add(Grams(a), Grams(b))
    return one.iou


class Sums:
    """The running sums of one or more candidate tables: each rank's against the reference,
    each pair of ranks' (r < s) between a source's own paraphrases, and the sources and
    candidates counted. Each table is summed on its own (in a worker process where the job
    has threads) and the tables' sums added in their order (:meth:`add`), so the figures do
    not depend on the threads. A table's first and last sources stay open (``first``,
    ``last``: the pair id and the paraphrase at each rank) until the sums are added, for a
    source whose candidates run on from one table into the next."""

    __slots__ = ("by_rank", "between", "sources", "candidates", "first", "last")

    def __init__(self) -> None:
        self.by_rank: dict[int, Against] = {}
        self.between: dict[tuple[int, int], Against] = {}
        self.sources = self.candidates = 0
        self.first: tuple[Any, dict[int, Grams]] | None = None  # None: the table has one source or none
        self.last: tuple[Any, dict[int, Grams]] | None = None

    def settle(self, own: dict[int, Grams]) -> None:
        """A source's collective sums: each pair of its ranks r < s, rank s against rank r."""
        for r, s in itertools.combinations(sorted(own), 2):
            self.between.setdefault((r, s), Against()).add(own[s], own[r])

    def add(self, other: Sums) -> None:
        """Another table's sums, the table after the ones added so far."""
        for mine, theirs in ((self.by_rank, other.by_rank), (self.between, other.between)):
            for key, acc in theirs.items():
                mine.setdefault(key, Against()).merge(acc)
        self.sources += other.sources
        self.candidates += other.candidates
        if other.first is not None:  # its first source closes the last one open here
            self._run_on(other.first)
            self.settle(self.last[1])
            self.last = other.last
        elif other.last is not None:
            self._run_on(other.last)

    def _run_on(self, source: tuple[Any, dict[int, Grams]]) -> None:
        """``source`` after the last source open here: the same source run on (counted once,
        its ranks together), or the next, and the last one is settled."""
        if self.last is not None and self.last[0] == source[0]:
            self.sources -= 1
            source = (source[0], {**self.last[1], **source[1]})
        elif self.last is not None:
            self.settle(self.last[1])
        self.last = source

    def result(self) -> dict[str, Any]:
        if self.last is not None:
            self.settle(self.last[1])
            self.last = None
        by_rank = self.by_rank
        rows = [{"rank": k, "n": by_rank[k].n, **by_rank[k].measures()} for k in sorted(by_rank)]
        pairs = [{"ranks": f"{r}-{s}", "n": acc.n, **{k: v for k, v in acc.measures().items()
                                                      if k != "length_ratio"}}
                 for (r, s), acc in sorted(self.between.items())]
        collective = ({k: round(sum(p[k] for p in pairs) / len(pairs), 4)
                       for k in ("one_minus_bleu", "bag_iou")} if pairs else None)
        return {"by_rank": rows, "between_ranks": pairs, "collective": collective,
                "sources": self.sources, "candidates": self.candidates}


def table_sums(spm: str, batch_rows: int, chunk: tuple[str]) -> Sums:
    """The sums of one candidate table (``chunk``: its path alone), read a record batch at a
    time (page checksums verified). A source's candidates are adjacent, as the decoders
    write them; the collective measures compare each source's own ranks."""
    seg = _segmenter(spm)
    sums = Sums()
    by_rank = sums.by_rank
    source: tuple[Any, dict[int, Grams]] | None = None  # the current source's id and ranks
    reference: tuple[str | None, Grams | None] = (None, None)  # its text and n-grams
    seen: dict[Any, int] = {}  # each source's first row (1-based): a table's, bounded by it
    columns = ["pair_id", "en_ref", "candidate", "rank"]
    for batch in iter_parquet_batches(chunk, batch_rows, columns):
        data = batch.to_pydict()
        n = batch.num_rows
        pieces = seg.encode(data["candidate"] + data["en_ref"])  # one call a batch
        for i, (pair_id, rank) in enumerate(zip(data["pair_id"], data["rank"])):
            if source is None or pair_id != source[0]:
                row = sums.candidates + i + 1
                if pair_id in seen:
                    raise InputError(chunk[0], None, f"row {row}: pair_id {pair_id!r} again, after "
                                     f"other sources (its first candidate is row {seen[pair_id]}): "
                                     "a source's candidates are read together, adjacent as the "
                                     "decoders write them (sort the table by pair_id)")
                seen[pair_id] = row
                if source is not None and sums.sources == 1:
                    sums.first = source  # left open for the table before
                elif source is not None:
                    sums.settle(source[1])
                source, reference = (pair_id, {}), (None, None)
                sums.sources += 1
            if reference[0] != data["en_ref"][i]:  # a source's candidates share it
                reference = (data["en_ref"][i], Grams(pieces[n + i]))
            grams = source[1][rank] = Grams(pieces[i])
            by_rank.setdefault(rank, Against()).add(grams, reference[1])
        sums.candidates += n
    sums.last = source  # left open for the table after
    return sums


@functools.cache
def _segmenter(spm: str) -> Segmenter:
    """The SentencePiece model at ``spm``, loaded once a process (a worker measures many tables)."""
    return Segmenter(spm)


def diversity(candidate_files: list[str | Path], spm: str | Path, batch_rows: int = 10_000,
              workers: int = 1) -> dict[str, Any]:
    """Measures from the candidate tables (rank = the paraphrase's rank for its source): each
    table's running sums (:func:`table_sums`; memory does not grow with the corpus), in
    ``workers`` processes where there are several tables, added in the tables' order."""
    total = Sums()
    for sums, _ in ordered_map(table_sums, [(str(f),) for f in candidate_files], workers,
                               context=(str(spm), batch_rows), size=lambda chunk: None,
                               doing="the candidates' diversity was measured",
                               holds="a record batch of a candidate table and the SentencePiece model"):
        total.add(sums)
    return total.result()


def write_diversity(candidate_files: list[str | Path], spm: str | Path, tsv: str | Path,
                    json_out: str | Path, png: str | Path | None = None, plot=None,
                    rule: str = "diversity_stats", workers: int = 1) -> dict[str, Any]:
    run = Run(rule=rule, params={}, inputs=[*candidate_files, spm])
    result = diversity(candidate_files, spm, workers=workers)
    outs = [tsv, json_out] + ([png] if png else [])
    import polars as pl

    with output_job(run, *outs, rows_in=result["candidates"], each=True) as job:
        files = job.paths
        pl.DataFrame(result["by_rank"]).write_csv(files[0], separator="\t")
        write_json(files[1], result)
        if png:
            plot(result, files[2])
        job.rows_out = len(result["by_rank"])
    return result


def diversity_plot(result: dict, path: str | Path) -> None:
    """Bars per rank: 1 − BLEU and bag-of-pieces IoU against the reference, length ratio."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = result["by_rank"]
    ranks = [r["rank"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, key, title in zip(axes, ("one_minus_bleu", "bag_iou", "length_ratio"),
                              ("1 − BLEU vs reference", "bag-of-pieces IoU", "length ratio")):
        ax.bar([str(r) for r in ranks], [r[key] for r in rows], color="#4878a8")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("rank")
    if result.get("collective"):
        fig.suptitle(f"between a source's own paraphrases: 1 − BLEU {result['collective']['one_minus_bleu']}, "
                     f"IoU {result['collective']['bag_iou']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
