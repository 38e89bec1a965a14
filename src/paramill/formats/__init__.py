"""On-disk layouts of paired text: one module per layout, one name per layout, one reader.

A format module declares

- ``NAME``: the layout's one name, in the config, on the command line and in the docs;
- ``ALIASES``: older names still read (a config written with one keeps working);
- ``DESCRIPTION``: one line for the docs and ``--help``;
- ``read(path, max_line_bytes)``: the file's records in order, each a :class:`Bad` (a line
  that cannot be one, with its reason) or the layout's own record, streamed through
  :class:`paramill.io.LineStream` (strict UTF-8, bounded lines, a cut or corrupt file an
  :class:`~paramill.io.InputError` naming file and line).

A stage takes the records and applies its own policy: the pair corpora turn a :class:`Bad`
into a rejected row, the paraphrase identifier's labelled data into an error naming file and
line, STS evaluation into a skipped pair. Adding a layout is one module here, its test, and
its name in the settings that accept it (see docs/architecture.md).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from paramill.io import REJECTED_TEXT_CHARS, InputError, LineStream, decode_line, shown_text

@dataclass(frozen=True)
class Bad:
    """A line that gives no record: ``reason`` (a short code), ``detail`` (for people) and
    the line's text as far as it can be shown."""

    line_no: int
    reason: str
    detail: str
    text: str | None


def lines(source: str | LineStream, max_line_bytes: int = 65536
          ) -> Iterator[tuple[int, str] | Bad]:
    """Each line's text, or a :class:`Bad` for a line that is too long (``line_too_long``,
    never held whole) or not UTF-8 (``invalid_utf8``). ``source``: a path, or a
    :class:`~paramill.io.LineStream` (whose ``lines`` then counts what was read)."""
    stream = source if isinstance(source, LineStream) else LineStream(str(source), max_line_bytes)
    max_line_bytes = stream.max_line_bytes
    for line_no, raw in stream:
        if raw is None:
            yield Bad(line_no, "line_too_long", f"line longer than {max_line_bytes} bytes", None)
            continue
        text, problem = decode_line(raw)
        if text is None:
            yield Bad(line_no, "invalid_utf8", str(problem), shown_text(raw))
            continue
        yield line_no, text


def text_lines(path: str | Path, max_line_bytes: int = 65536) -> list[str]:
    """The whole file's lines, where any bad line is an :class:`~paramill.io.InputError`
    naming file and line."""
    out = []
    for item in lines(str(path), max_line_bytes):
        if isinstance(item, Bad):
            raise InputError(path, item.line_no, item.detail)
        out.append(item[1])
    return out


def fields(source: str | LineStream, max_line_bytes: int = 65536
           ) -> Iterator[tuple[int, list[str]] | Bad]:
    """Each line's tab-separated fields, or a :class:`Bad` (see :func:`lines`)."""
    for item in lines(source, max_line_bytes):
        yield item if isinstance(item, Bad) else (item[0], item[1].split("\t"))


def bad_fields(line_no: int, columns: list[str], reason: str, detail: str) -> Bad:
    return Bad(line_no, reason, detail, "\t".join(columns)[:REJECTED_TEXT_CHARS])


@functools.cache
def _modules() -> tuple[ModuleType, ...]:
    """Every format module of this package (a module that declares ``NAME``)."""
    found = [importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__)]
    return tuple(m for m in found if hasattr(m, "NAME"))


def names() -> dict[str, str]:
    """Every name a format is read by (its own and its aliases) -> its one name."""
    found: dict[str, str] = {}
    for module in _modules():
        for name in (module.NAME, *module.ALIASES):
            found[name] = module.NAME
    return found


def canonical(name: str) -> str:
    """The one name of the layout read by ``name`` (an alias's layout), else ``name``."""
    return names().get(name, name)


def layout(name: str) -> ModuleType:
    """The format module read by ``name`` (its name or an alias)."""
    canonical = names().get(name)
    if canonical is None:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(sorted(names()))}")
    return next(m for m in _modules() if m.NAME == canonical)
