"""Text normalisation and the project's one tokeniser, in Python and as polars expressions.

Both forms share the same tables and pattern, so a count made by a vectorised polars
expression over a shard equals the count :func:`tokenize` gives for one sentence.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # polars is imported where an expression is built: a featurising worker
    import polars as pl  # (tokenize only) does without it, 20 MB and 90 ms a process

#: Unicode punctuation mapped to its ASCII form (ParaBank 2 §3.1 "normalize Unicode
#: punctuation"; the table follows the spirit of Moses' normalize-punctuation.perl).
PUNCTUATION_MAP: dict[str, str] = {
    "\u201e": '"',  # „ Czech opening double quote
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201f": '"',  # ‟
    "\u00ab": '"',  # «
    "\u00bb": '"',  # »
    "\u2033": '"',  # ″
    "\u201a": "'",  # ‚ Czech opening single quote
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u201b": "'",  # ‛
    "\u2039": "'",  # ‹
    "\u203a": "'",  # ›
    "\u2032": "'",  # ′
    "\u00b4": "'",  # ´ used as apostrophe
    "\u2013": "-",  # – en dash
    "\u2014": "-",  # — em dash
    "\u2012": "-",  # ‒
    "\u2015": "-",  # ―
    "\u2212": "-",  # − minus sign
    "\u2010": "-",  # ‐ hyphen
    "\u2011": "-",  # ‑ non-breaking hyphen
    "\u2026": "...",  # …
    "\u00a0": " ",  # no-break space
    "\u2007": " ",
    "\u2009": " ",  # thin space
    "\u200a": " ",
    "\u202f": " ",  # narrow no-break space
    "\u3000": " ",
    "\u200b": "",  # zero-width space
    "\u200c": "",
    "\u200d": "",
    "\ufeff": "",  # BOM / zero-width no-break space
    "\u00ad": "",  # soft hyphen
}

#: Control characters that separate words (tab, line feed, vertical tab, form feed, a lone
#: carriage return, the information separators U+001C-U+001F, NEL, the line and paragraph
#: separators) become a space *before* the other control characters are removed, so
#: ``The\x0cdog`` stays two words. Listed explicitly: Python's ``\s`` and polars' (Rust)
#: ``\s`` disagree on U+001C-U+001F.
_SPACE_CONTROL = r"[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]"
#: The remaining control characters are removed; runs of white space folded.
_CONTROL = r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]"
_SPACES = r"\s+"
#: :data:`_SPACES` for polars, leaving a single " " alone: the same text out, without
#: replacing every space of a sentence by itself (3.5x faster on 500,000 sentences)
_SPACE_RUNS = r"\s{2,}|[^\S ]"

#: A character other than printable ASCII (U+0020-U+007E): a string without one is its own
#: NFC, and the punctuation map and the control characters' rules find nothing in it.
_NOT_PRINTABLE_ASCII = r"[^ -~]"
#: A code point from U+0300 (the first combining mark) on: every one below is a starter
#: that composes with no neighbour (Unicode's NFC quick check is "yes" for each, as ICU's
#: normaliser takes it), so a string without one is its own NFC.
_NFC_MAYBE = r"[^\x00-\x{2ff}]"

#: The tokeniser: runs of word characters, or single other non-space characters.
#: Unicode-aware both in Python's ``re`` and in polars' (Rust) regex engine.
TOKEN_PATTERN = r"\w+|[^\w\s]"
_TOKEN_RE = re.compile(TOKEN_PATTERN)

# latin-2 (ISO-8859-2) repertoire: ASCII, C1 and the 96 upper characters.
_LATIN2_UPPER = bytes(range(0xA0, 0x100)).decode("iso8859_2")
NOT_LATIN1_PATTERN = r"[^\x00-\x{ff}]"
NOT_LATIN2_PATTERN = "[^\\x00-\\x{9f}" + "".join(re.escape(c) for c in _LATIN2_UPPER) + "]"


def normalize(text: str, punctuation: bool = True) -> str:
    """NFC, punctuation mapped to ASCII (optional), separating controls made spaces, other
    control characters dropped, spaces folded."""
    text = unicodedata.normalize("NFC", text)
    if punctuation:
        text = "".join(PUNCTUATION_MAP.get(ch, ch) for ch in text)
    text = re.sub(_CONTROL, "", re.sub(_SPACE_CONTROL, " ", text))
    return re.sub(_SPACES, " ", text).strip()


def normalize_expr(expr: pl.Expr, punctuation: bool = True) -> pl.Expr:
    """The polars form of :func:`normalize`, for whole columns.

    NFC, the punctuation map and the control characters' rules change nothing in a string of
    printable ASCII (:data:`_NOT_PRINTABLE_ASCII`), and NFC nothing in one without a code point
    from U+0300 on (:data:`_NFC_MAYBE`): each runs on the strings it may change only, the
    others null to it (polars' NFC rebuilt every string, 0.7-1.4 µs each, where the check
    scans it: most of a column's normalising). Each step is referred to once, as an eager
    frame evaluates a subexpression as often as it appears."""
    import polars as pl

    nfc = _only(expr, _NFC_MAYBE).str.normalize("NFC")  # a subset of the others: not ASCII
    chars = pl.coalesce(nfc, _only(expr, _NOT_PRINTABLE_ASCII))
    if punctuation:
        chars = chars.str.replace_many(PUNCTUATION_MAP)
    chars = chars.str.replace_all(_SPACE_CONTROL, " ").str.replace_all(_CONTROL, "")
    return pl.coalesce(chars, expr).str.replace_all(_SPACE_RUNS, " ").str.strip_chars()


def _only(expr: pl.Expr, pattern: str) -> pl.Expr:
    """``expr`` where it matches ``pattern``, null elsewhere (what runs on the nulls costs
    nothing)."""
    import polars as pl

    return pl.when(expr.str.contains(pattern)).then(expr)


def regex_problem(pattern: str) -> str | None:
    """Why polars' (Rust) regex engine cannot compile ``pattern``, or None when it can."""
    import polars as pl

    try:
        pl.Series([""]).str.contains(pattern)
    except pl.exceptions.PolarsError as err:
        return str(err).splitlines()[0] if str(err) else "does not compile"
    return None


def tokenize(text: str) -> list[str]:
    """Split a sentence into word and punctuation tokens (language-neutral, Unicode-aware)."""
    return _TOKEN_RE.findall(text)


def token_count_expr(expr: pl.Expr) -> pl.Expr:
    """Number of :func:`tokenize` tokens, as a polars expression."""
    import polars as pl

    return expr.str.count_matches(TOKEN_PATTERN).cast(pl.Int32)


def encodable(text: str, codec: str) -> bool:
    """Whether ``text`` encodes in ``codec`` (e.g. ``latin-1``, ``iso8859_2``)."""
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True
