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
_VIA = re.compile(r"\s*\b(?:via|h/t)\s+@\w+\b:?", re.I)
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
