"""Result tables, JSON summaries and datasheets as one HTML page for the Snakemake report,
which shows images and HTML but nothing for ``.tsv``, ``.json`` or ``.md`` results (seen in
a browser: its "view" button left the page unchanged)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import polars as pl

from paramill.errors import InputError
from paramill.io.jsonfiles import read_json
from paramill.report.glance import _headline

MAX_ROWS = 500
KINDS = (".tsv", ".json", ".md")
STYLE = ("<style>body{font:14px sans-serif;margin:1em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}"
         "pre{background:#f6f6f6;padding:.5em}</style>")


def _tsv(path: Path) -> str:
    frame = pl.scan_csv(path, separator="\t", quote_char=None, infer_schema=False)
    rows = frame.head(MAX_ROWS).collect()
    total = frame.select(pl.len()).collect().item()
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row)
                   + "</tr>" for row in rows.iter_rows())
    note = f"<p>The first {MAX_ROWS:,} of {total:,} rows.</p>" if total > MAX_ROWS else ""
    return f"{note}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _md(path: Path) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(
        path.read_text(encoding="utf-8"))


def _json(path: Path) -> str:
    text = json.dumps(read_json(path), indent=2, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def anchor(path: str | Path) -> str:
    return "r-" + "".join(c if c.isalnum() else "-" for c in str(path))


def render(files: list[str | Path], out: str | Path) -> list[str]:
    """One HTML page holding every ``.tsv``/``.json``/``.md`` file of ``files`` as a section,
    after a list linking them (with the headline figures where a file has some): a pure
    HTML Snakemake report embeds files, not folders. Returns the files rendered."""
    done, items, sections = [], [], []
    for file in sorted({str(f) for f in files}):
        path = Path(file)
        if path.suffix not in KINDS or not path.is_file():
            continue
        try:
            content = {".tsv": _tsv, ".md": _md, ".json": _json}[path.suffix](path)
        except InputError:
            raise
        except (ValueError, pl.exceptions.PolarsError) as exc:  # not UTF-8, ragged TSV rows
            reason = " ".join(str(exc).split()).split(" Consider ")[0][:200]  # not polars' advice
            raise InputError(path, None, f"cannot be shown in the report: {reason}") from None
        sections.append(f"<section id='{anchor(path)}'><h2>{html.escape(file)}</h2>{content}"
                        "<p><a href='#top'>back to the list</a></p></section>")
        headline = _headline(path) if path.suffix == ".json" else None
        items.append(f"<li><a href='#{anchor(path)}'>{html.escape(file)}</a>"
                     + (f" — {html.escape(headline)}" if headline else "") + "</li>")
        done.append(file)
    Path(out).write_text(
        f"<!doctype html><meta charset='utf-8'><title>paramill results</title>{STYLE}"
        "<h1 id='top'>Result tables and datasheets</h1><p>Each table, JSON summary and "
        f"datasheet of this run (tables cut at {MAX_ROWS:,} rows; the files hold them all).</p>"
        f"<ul>{''.join(items)}</ul>{''.join(sections)}\n", encoding="utf-8")
    return done
