"""JSON: the whole file one array of objects (pandas' ``to_json(orient="records")``,
``datasets``' ``to_json(lines=False)``, many web exports), plain, .gz, .xz, .zst or .bz2;
read an element at a time, never whole (a chunk of the file and the element being read).

Each object is read as a line of :mod:`paramill.formats.jsonl` is, by the same ``fields``
(a dot reads inside an object): a corpus's ``fields``, or for an STS set or labelled pairs
``datasets``' names or their ``fields``. ``line_no`` is the element's number in the array
(pandas writes the whole array on one line). An element that is not an object is
``not_object``, one longer than the line limit ``line_too_long`` (its text's UTF-8 bytes, as a
line's of every text layout; read through, up to :data:`MAX_ELEMENT_CHARS`), and so on as for JSON Lines. A file that is not one array (an object, JSON
Lines), is not JSON where an element should be, or ends inside the array is an error naming
the file, the line and the element: with the array's syntax broken no later element can be
found for certain.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

from paramill.io.compressed import open_compressed
from paramill.formats.rows import Bad, BitextPair, Candidate, Scored
from paramill.formats import jsonl, jsontext
from paramill.io.lines import REJECTED_TEXT_CHARS
from paramill.errors import InputError

NAME = "json"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = ("the whole file one JSON array of objects (pandas' to_json(orient=\"records\")), "
               "their fields named as for jsonl")
#: an STS set or labelled pairs may name their fields (``fields``)
SET_FIELDS = True

Spec = jsonl.Spec
check = jsonl.check

#: characters read at a time
CHUNK = 1 << 20
#: the longest element read at all (an element over the line limit, but within this, is a
#: rejected row ``line_too_long`` and reading goes on; one over this is an error)
MAX_ELEMENT_CHARS = 16 << 20
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Array:
    """The elements of the file's one array: ``(number, length, value)`` each, the length in
    UTF-8 bytes of the element's text where it could pass ``line_bytes`` (else in characters,
    fewer: no element is encoded only to be counted)."""

    def __init__(self, path: str, line_bytes: int, limit: int = MAX_ELEMENT_CHARS):
        self.path, self.limit, self.line_bytes = path, limit, line_bytes
        self.fh = open_compressed(path)
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.bytes = 0
        self.buf, self.pos, self.mark, self.line, self.eof = "", 0, 0, 1, False

    def _more(self) -> bool:
        """Read the next chunk after what is not yet consumed; False at the end."""
        if self.eof:
            return False
        self.line += self.buf.count("\n", self.mark, self.pos)
        self.buf, self.pos, self.mark = self.buf[self.pos:], 0, 0
        raw = self.fh.read(CHUNK)
        try:
            text = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            line = self.line + self.buf.count("\n") + raw[:exc.start].count(b"\n")
            raise InputError(self.path, line, f"invalid UTF-8 at byte offset {self.bytes + exc.start}") from None
        self.bytes += len(raw)
        self.buf += text
        self.eof = not raw
        return bool(text) or not self.eof

    def _next_char(self) -> str:
        """The next character after white space ("" at the end), ``pos`` at it."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _where(self) -> int:
        """The line ``pos`` is on (the lines before it counted once, as it moves on)."""
        self.line += self.buf.count("\n", self.mark, self.pos)
        self.mark = self.pos
        return self.line

    def _fail(self, message: str) -> InputError:
        return InputError(self.path, self._where(), message)

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        with self.fh:
            first = self._next_char()
            if not first:
                raise self._fail("file is empty (no JSON array)")
            if first != "[":
                while len(self.buf) - self.pos < 20 and self._more():
                    pass  # enough of the file's start to show
                hint = ("; one JSON object a line is format jsonl, and an object holding the "
                        "array (such as {\"data\": [...]}) is not read: write the array out "
                        "(jq .data)") if first == "{" else ""
                raise self._fail(f"not a JSON array (the file starts with "
                                 f"{self.buf[self.pos:self.pos + 20]!r}){hint}")
            self.pos += 1
            n = 0
            while True:
                c = self._next_char()
                if c == "]":
                    self.pos += 1
                    if self._next_char():
                        raise self._fail("text after the array's closing ]")
                    if not n:
                        raise self._fail("the array is empty")
                    return
                if n:
                    if c != ",":
                        raise self._fail(f"expected , or ] after element {n}, found "
                                         f"{c!r}" if c else f"the file ends inside the array, after element {n}")
                    self.pos += 1
                    c = self._next_char()
                if not c or c == "]":
                    raise self._fail(f"the file ends inside the array, after element {n}" if not c
                                     else f"a value expected after element {n}'s comma")
                n += 1
                value, size = self._value(n, self._where())
                yield n, size, value

    def _value(self, n: int, line: int) -> tuple[Any, int]:
        """The element at ``pos`` and its length (``pos`` then after it)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > self.limit:
                    raise InputError(self.path, line, f"element {n} is longer than {self.limit} "
                                     f"characters, or not JSON ({exc.msg})") from None
                if self._more():
                    continue
                raise InputError(self.path, self.line + self.buf.count("\n", self.mark, exc.pos),
                                 f"element {n} is not JSON ({exc.msg})") from None
            except RecursionError:
                raise InputError(self.path, line, f"element {n} is nested too deeply to read") from None
            if end >= len(self.buf) and self._more():  # a number may go on in the next chunk
                continue
            text, self.pos = self.buf[self.pos:end], end
            size = len(text)
            if 4 * size > self.line_bytes:  # up to 4 bytes a character: count them
                size = len(text.encode("utf-8", "surrogatepass"))
            if found := jsontext.found(text, value):
                reason, detail = found
                value = Bad(n, reason, f"element {n}: {detail}", text[:REJECTED_TEXT_CHARS])
            return value, size


def objects(path: str, max_bytes: int) -> Iterator[tuple[int, dict[str, Any]] | Bad]:
    """``(element number, object)`` of each element, or a :class:`Bad` for one that is not an
    object, or longer than ``max_bytes`` bytes of UTF-8 (``line_too_long``, as a JSON Lines line
    over the limit: read through, not kept)."""
    for n, size, value in _Array(path, max_bytes):
        if size > max_bytes:
            yield Bad(n, "line_too_long", f"element {n}: {size} bytes, longer than {max_bytes}",
                      None)
        elif isinstance(value, Bad):  # a NUL, a lone surrogate, a key given twice
            yield value
        elif isinstance(value, dict):
            yield n, value
        else:
            yield Bad(n, "not_object", f"element {n}: {jsonl._kind(value)}, not a JSON object",
                      jsonl._shown(value))


def bitext(spec: Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    return jsonl.bitext(spec, max_line_bytes, source=objects)


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    return jsonl.pairs(spec, method, max_line_bytes, batch_rows, source=objects)


def sts(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None
        ) -> Iterator[Scored | Bad]:
    return jsonl.sts(path, max_line_bytes, fields, source=objects)


def labelled(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None
             ) -> tuple[list[tuple[str, str]], list[int], int]:
    return jsonl.labelled(path, max_line_bytes, fields, source=objects)
