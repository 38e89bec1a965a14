"""Moses-style parallel text: two line-aligned files, ``cs`` and ``en``, one sentence a line.
Sides of different lengths are an error naming the longer file and the line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from paramill.formats.rows import BitextPair
from paramill.errors import InputError
from paramill.io.lines import LineStream, decode_line, shown_text
from paramill.config.typed import Settings, setting

NAME = "moses"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "two aligned files `cs` and `en`, one sentence a line"


@dataclass(frozen=True)
class Spec(Settings):
    cs: str = setting(doc="The Czech side.", type="string")
    en: str = setting(doc="The English side.", type="string")


def files(spec: Spec) -> list[str]:
    return [spec.cs, spec.en]


def bitext(spec: Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    """Line *i* of ``cs`` with line *i* of ``en``."""
    cs_lines, en_lines = LineStream(spec.cs, max_line_bytes), LineStream(spec.en, max_line_bytes)
    cs_it, en_it = iter(cs_lines), iter(en_lines)
    while True:
        a = next(cs_it, None)
        b = next(en_it, None)
        if a is None and b is None:
            return
        if a is None or b is None:
            short, long_ = (spec.cs, spec.en) if a is None else (spec.en, spec.cs)
            ended = (cs_lines if a is None else en_lines).lines
            raise InputError(long_, ended + 1,
                             f"Moses sides differ in length: {short} ended after {ended} lines "
                             f"but {long_} goes on")
        line_no, raw_cs = a
        _, raw_en = b
        if raw_cs is None or raw_en is None:
            yield BitextPair(line_no, None, None, "line_too_long",
                             f"line longer than {max_line_bytes} bytes")
            continue
        cs, why_cs, bad_cs = decode_line(raw_cs)
        en, why_en, bad_en = decode_line(raw_en)
        if cs is None or en is None:
            reason, detail = (why_cs, f"cs: {bad_cs}") if cs is None else (why_en, f"en: {bad_en}")
            yield BitextPair(line_no, cs if cs is not None else shown_text(raw_cs),
                             en if en is not None else shown_text(raw_en), reason, detail)
            continue
        yield BitextPair(line_no, cs, en)
