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


def clean(text: str) -> str:
    """Strip ``RT @user:``, ``via @user``, URLs, and leading mentions/hashtags; fold spaces."""
    text = unicodedata.normalize("NFC", text)
    text = _RT.sub("", text)
    text = _URL.sub(" ", text)
    text = _VIA.sub(" ", text)
    text = _LEADING.sub("", text)
    return _SPACE.sub(" ", text).strip(" -|:")


def comparable(text: str) -> str:
    """Lower-cased, without punctuation and extra spaces: for retweet tests."""
    text = "".join(" " if unicodedata.category(c).startswith(("P", "S")) else c for c in text.lower())
    return _SPACE.sub(" ", text).strip()
