"""Tweet text: a tokeniser suited to tweets, and the clean-up before pairing."""

from __future__ import annotations

import re
import unicodedata

#: mentions, hashtags, URLs, emoticons, numbers with separators, words with inner
#: apostrophes/hyphens, then any other non-space character
TOKEN_RE = re.compile(r"""
    https?://\S+ | www\.\S+
  | @\w+ | \#\w+
  | [:;=8][-o*']?[)\](\[dDpP/\\|] | <3
  | \d+(?:[.,:]\d+)+
  | \w+(?:['’\-]\w+)*
  | \S
""", re.X | re.U)

_URL = re.compile(r"https?://\S+|www\.\S+")
_RT = re.compile(r"^\s*RT\s+@\w+:?\s*", re.I)
#: no leading \s*: the spaces before it are folded after, and at every place of a run of
#: spaces a leading \s* went over the rest of the run (25,000 spaces: 6 s a tweet)
_VIA = re.compile(r"\b(?:via|h/t)\s+@\w+\b:?", re.I)
_LEADING = re.compile(r"^(?:\s*[@#]\w+[:,]?)+\s*")
_SPACE = re.compile(r"\s+")


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


#: the most combining marks (non-starters) kept in a row: Unicode's stream-safe text format
#: (UAX #15) bounds a run at 30; a longer one is "Zalgo" text, no writing system's
MAX_MARKS = 30
#: a run of characters that might all be combining marks (every one is U+0300 or above)
_MAYBE_MARKS = re.compile("[^\x00-\u02ff]{%d}" % (MAX_MARKS + 1))


def capped_marks(text: str) -> str:
    """``text`` with each run of combining marks cut to :data:`MAX_MARKS`. NFC sorts a run
    by insertion, in time that grows with its square: a 25,000-character post of marks took
    0.3 s to normalise, 32,000 of them 0.5 s."""
    if not _MAYBE_MARKS.search(text):  # no run long enough: the text as it is
        return text
    out, run = [], 0
    for ch in text:
        run = run + 1 if unicodedata.combining(ch) else 0
        if run <= MAX_MARKS:
            out.append(ch)
    return "".join(out)


def clean(text: str) -> str:
    """Strip ``RT @user:``, ``via @user``, URLs, and leading mentions/hashtags; fold spaces
    (combining marks past :data:`MAX_MARKS` in a row dropped first)."""
    text = unicodedata.normalize("NFC", capped_marks(text))
    text = _RT.sub("", text)
    text = _URL.sub(" ", text)
    text = _VIA.sub(" ", text)
    text = _LEADING.sub("", text)
    return _SPACE.sub(" ", text).strip(" -|:")


def comparable(text: str) -> str:
    """Lower-cased, without punctuation and extra spaces: for retweet tests."""
    text = "".join(" " if unicodedata.category(c).startswith(("P", "S")) else c for c in text.lower())
    return _SPACE.sub(" ", text).strip()
