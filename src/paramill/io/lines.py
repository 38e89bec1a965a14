"""Lines of (possibly compressed) text files as bytes, with limits and errors naming the
file and line, and their decoding as strict UTF-8."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from paramill.errors import InputError
from paramill.io.compressed import CorruptInput, open_compressed


#: Text kept of a rejected line, so a 1 MB line does not become a 1 MB rejected row.
REJECTED_TEXT_CHARS = 1000


#: The characters a batch of rows gathered in Python lists holds at most, whatever its rows:
#: a batch's rows (``batch_rows``) bound memory only where lines are short (50,000 pairs of
#: 60 KB sides, each under the line limit, held 6 GB of text; `pairs ingest` was killed at
#: 24 GB). A batch is processed when either is reached; no result depends on where.
BATCH_TEXT_CHARS = 64 << 20


#: A UTF-8 byte order mark at the start of a file is not text (nor part of a header name).
_BOM = b"\xef\xbb\xbf"


class EmptyInput(InputError):
    """A file with no line at all."""


@dataclass
class LineStream:
    """Lines of one (possibly compressed) file as bytes, with limits and clear errors.

    Yields ``(line_no, bytes)``, or ``(line_no, None)`` for a line longer than
    ``max_line_bytes`` (read through in chunks, never held whole).
    """

    path: str
    max_line_bytes: int
    lines: int = field(default=0, init=False)

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        limit = self.max_line_bytes
        try:
            with open_compressed(self.path) as fh:
                while True:
                    # room for the limit, CR and LF: a line is measured without its ending
                    line = fh.readline(limit + 2)
                    if not line:
                        break
                    self.lines += 1
                    complete = line.endswith(b"\n")
                    if complete:
                        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
                    if self.lines == 1 and line.startswith(_BOM):
                        line = line[len(_BOM):]
                    if len(line) > limit:
                        while not complete:  # skip the rest of an over-long line
                            rest = fh.readline(1 << 20)
                            complete = not rest or rest.endswith(b"\n")
                        yield self.lines, None
                        continue
                    yield self.lines, line
        except CorruptInput as exc:  # where the stream broke: the line being read then
            raise CorruptInput(self.path, self.lines + 1, exc.message) from None
        if self.lines == 0:
            raise EmptyInput(self.path, None, "file is empty")


def decode_line(raw: bytes) -> tuple[str | None, str | None, str | None]:
    """``(text, None, None)``, or ``None``, the reason and a detail naming the bad byte's
    offset: ``invalid_utf8``, or ``not_text`` for a NUL byte. NUL is valid UTF-8 but never
    text: a line holding one is a binary file's, or a block of zeros that a crash or a full
    disk left in the file (cleaning would drop the NULs and keep the garbage around them)."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        return None, "not_text", (f"NUL byte at byte offset {nul}: not text (a binary file, or "
                                  "a block of zeros a crash left)")
    try:
        return raw.decode("utf-8"), None, None
    except UnicodeDecodeError as exc:
        return None, "invalid_utf8", f"invalid UTF-8 at byte offset {exc.start}"


def shown_text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    return raw[: REJECTED_TEXT_CHARS * 4].decode("utf-8", "replace")[:REJECTED_TEXT_CHARS]
