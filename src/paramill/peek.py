"""What the pipeline reads from a file, before it runs: the first rows of a corpus, an STS
set or labelled pairs, read by their layout exactly as the stage reads them (``paramill
formats peek``), and the layouts themselves (``paramill formats list``). A composition
root, as :mod:`paramill.cli` is: it reads through the stages' own readers."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from paramill.formats import registry, rows
from paramill.text.numbers import number


def layouts(use: str | None = None) -> list[dict[str, Any]]:
    """Each layout's name, the uses it is read as, its description and old names."""
    return [{"format": m.NAME, "uses": [u for u in registry.USES if callable(getattr(m, u, None))],
             "description": m.DESCRIPTION, **({"aliases": list(m.ALIASES)} if m.ALIASES else {})}
            for m in registry.modules(use)]


def _corpus_rows(use: str, entry: dict[str, Any]):
    if use == "bitext":
        from paramill.bitext.readers import CorpusSpec, read_corpus

        for r in read_corpus(CorpusSpec.from_dict("peek", entry)):
            yield {"line": r.line_no, "cs": r.cs, "en": r.en, "reason": r.reason, "detail": r.detail}
        return
    from paramill.pairs.readers import PairCorpusSpec, read_pairs

    for r in read_pairs(PairCorpusSpec.from_dict("peek", entry)):
        yield {"line": r.line_no, "s1": r.en_ref, "s2": r.candidate, "rank": r.rank, "score": r.score,
               "label": r.label, "method": r.method, "reason": r.reason, "detail": r.detail}


def _set_rows(use: str, entry: dict[str, Any]):
    """The rows of an STS set or labelled data, its entry checked as the config checks it."""
    if use == "sts":
        from paramill.evaluate.settings import StsDataset
        from paramill.evaluate.sts import BROKEN, MAX_LINE_BYTES

        checked = StsDataset.from_dict({"name": "peek", "year": "peek", **entry}, "spec")
        given = {"fields": checked.fields} if checked.fields else {}
        for row in registry.reader(use, checked.format)(str(checked.path), MAX_LINE_BYTES, **given):
            if isinstance(row, rows.Bad):  # BROKEN: the evaluation stops at it
                yield {"line": row.line_no, "reason": row.reason, "detail": row.detail
                       + (" (the evaluation stops here)" if row.reason in BROKEN else " (skipped)")}
                continue
            score = number(row.score)
            if score is None or not row.s1 or not row.s2:  # as the evaluation skips it
                yield {"s1": row.s1, "s2": row.s2, "reason": "no_gold_score",
                       "detail": f"no usable gold score ({row.score!r}) or an empty sentence: skipped"}
            else:
                yield {"s1": row.s1, "s2": row.s2, "score": score}
        return
    from paramill.twitter.identify.data import read_labelled
    from paramill.twitter.identify.settings import LabelledData

    checked = LabelledData.from_dict(entry, "spec")
    pairs, labels, dropped = read_labelled(checked.path, checked.format, checked.labels, checked.fields)
    for (s1, s2), label in zip(pairs, labels):
        yield {"s1": s1, "s2": s2, "label": label}
    for _ in range(dropped):
        yield {"reason": "debatable", "detail": "no label: dropped"}


def peek(use: str, entry: dict[str, Any], rows: int = 10, scan: int = 10_000
         ) -> tuple[list[dict[str, Any]], Counter[str], int]:
    """The first ``rows`` rows of the file(s) ``entry`` names (a corpus's config entry for
    ``bitext`` and ``pairs``; ``{format, path, fields}`` for ``sts`` and ``labelled``), read
    as the stage reads them; and, over the first ``scan`` rows, each reason a row was not
    read (``ok`` for those read) and how many were scanned. Labelled pairs are read whole, as
    the identifier reads them."""
    if use not in registry.USES:
        raise ValueError(f"unknown use {use!r}; known: {', '.join(registry.USES)}")
    source = _corpus_rows(use, entry) if use in ("bitext", "pairs") else _set_rows(use, entry)
    first: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    scanned = 0
    for row in itertools.islice(source, scan):
        scanned += 1
        reasons[row.get("reason") or "ok"] += 1
        if len(first) < rows:
            first.append({k: v for k, v in row.items() if v is not None})
    return first, reasons, scanned


def formats_page() -> str:
    """The input formats page (docs/formats.md, generated at build time from the formats
    registry): every layout, what it can be read as, and the keys a corpus in it takes."""
    from paramill.config.typed import config_keys, object_schema

    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["# Input formats", "",
             "Generated from paramill's formats registry (`paramill formats list`). Every "
             "layout is one module of `paramill.formats`; its name is the same in the config, "
             "on the command line and here. Text files may be plain, gzip, xz, zstd or bzip2 "
             "(told from their bytes, not their name) and are read a line at a time; Parquet a "
             "row group at a time. A line that gives no pair becomes a rejected row with its "
             "reason, never a silent loss. To see how a file will be read before a run: "
             "`paramill formats peek --use USE --spec '{\"format\": ..., \"path\": ...}'`.", "",
             "| format | read as | what it reads | old names |", "| --- | --- | --- | --- |"]
    for layout in layouts():
        uses = ", ".join(layout["uses"]) or "a file a setting names"
        lines.append(f"| `{layout['format']}` | {uses} | "
                     f"{cell(layout['description'])} | "
                     f"{', '.join(f'`{a}`' for a in layout.get('aliases', []))} |")
    lines.append("")
    for use, what in registry.USES.items():
        lines += [f"## {use}", "", f"Read as {what}.", ""]
        for module in registry.modules(use):
            spec = getattr(module, "Spec", None)
            keys = object_schema(spec)["properties"] if spec is not None else {}
            lines += [f"### `{module.NAME}` ({use})", "", cell(module.DESCRIPTION) + ".", ""]
            if use in ("bitext", "pairs") and keys:
                lines += ["| key | what |", "| --- | --- |"]
                lines += [f"| `{key}` | {cell(node.get('description', ''))} |"
                          for key, node in keys.items() if key in config_keys(spec)]
                lines.append("")
    return "\n".join(lines)
