"""Text that JSON's escapes decode into but no text file holds.

A JSON string may write any UTF-16 code unit as an escape: ``\\u0000`` decodes to a NUL
character and ``\\ud83d`` without its pair to a lone surrogate (what a post cut inside an
emoji leaves). The line's bytes are valid UTF-8 and pass :func:`paramill.io.decode_line`,
but the decoded text does not: a NUL is never text (cleaning dropped it and glued the words
around it, ``in the\\u0000park`` became ``in thepark``), and a lone surrogate is no
character at all (writing it to Parquet failed the whole job: ``surrogates not allowed``).
:func:`problem` finds either in a decoded value, so that its line is a rejected row
(``not_text`` or ``invalid_utf8``, as the same bytes in a text file would be).

An object may also name a key twice (``{"s1": "a", "s2": "b", "s1": "c"}``): Python's
parser keeps the last value, others the first or refuse it, so which sentence the pair
holds depends on the reader. :func:`duplicate` finds it (``duplicate_key``), as the config
reader refuses a YAML key given twice.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: an escape that may decode to a NUL or a surrogate (checked first, on the line's text: a
#: line without one cannot hold either, and costs one substring search)
_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
#: a NUL or a surrogate in decoded text (a surrogate left after decoding has no pair: JSON
#: decodes a pair into its one character)
_BAD = re.compile("[\x00\ud800-\udfff]")


def may_hold(text: str) -> bool:
    """Whether the JSON ``text`` writes an escape that may decode to a NUL or a surrogate."""
    return "\\u" in text and _ESCAPE.search(text) is not None


def problem(value: Any) -> tuple[str, str] | None:
    """``(reason, detail)`` for the first string (or object key) of the decoded JSON
    ``value`` that holds a NUL (``not_text``) or a lone surrogate (``invalid_utf8``), the
    detail naming where (``field translation.cs``, ``element [2]``) and the character; None
    when every string is text."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            found = _BAD.search(item)
            if found:
                return _described(where, found.group(), found.start())
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                path = f"{where}.{key}" if where else str(key)
                if (found := _BAD.search(key)) is not None:
                    return _described(f"{path} (its name)", found.group(), found.start())
                stack.append((path, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in reversed(list(enumerate(item))))
    return None


def _described(where: str, char: str, at: int) -> tuple[str, str]:
    place = f"field {where}: " if where else ""
    if char == "\x00":
        return "not_text", f"{place}a NUL character (\\u0000) at character {at}: not text"
    return "invalid_utf8", (f"{place}a lone surrogate \\u{ord(char):04x} at character {at} (half "
                            "of a UTF-16 pair, as a post cut inside an emoji leaves): no "
                            "character, not UTF-8")


#: a quote, white space, a colon: a key whose colon :func:`duplicate` does not count
_SPACED_KEY = re.compile(r'"\s+:')


def _spaced_key(text: str) -> bool:
    """Whether a quote in ``text`` is followed by white space and a colon (searched only
    where a quote is followed by white space at all: four substring scans, where the
    regular expression costs more than the rest of the check)."""
    return (('" ' in text or '"\t' in text or '"\n' in text or '"\r' in text)
            and _SPACED_KEY.search(text) is not None)


class Repeated(dict):
    """A JSON object that named a key twice, its last value kept (as Python keeps it):
    :attr:`twice` is the key."""

    twice = ""


def _marking(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    marked = Repeated(value)
    marked.twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    return marked


def _keys(value: Any) -> int:
    """How many keys the objects in ``value`` hold, nested ones too."""
    count = 0
    if type(value) is dict:
        count = len(value)
        value = value.values()
    elif type(value) is not list:
        return 0
    for inner in value:
        if type(inner) is dict or type(inner) is list:
            count += _keys(inner)
    return count


def _maybe_twice(text: str, value: Any) -> bool:
    """Whether an object of the JSON ``text`` (decoded as ``value``) may name a key twice. In
    a text where no quote is followed by white space and a colon, every key's closing quote
    is followed by its colon, so as many ``":`` as ``value`` holds keys means each key once;
    another text (a key given twice, a value holding ``\\":``, a space before a colon) may."""
    try:
        return text.count('":') != _keys(value) or _spaced_key(text)
    except RecursionError:  # nested as deeply as the parser goes
        return True


def marked(text: str, value: Any) -> Any:
    """``value``, the JSON ``text`` decoded; where an object of it names a key twice, ``text``
    decoded again with each such object a :class:`Repeated` (for :func:`repeated`)."""
    return json.loads(text, object_pairs_hook=_marking) if _maybe_twice(text, value) else value


def repeated(value: Any) -> str | None:
    """The key named twice by the first :class:`Repeated` object in ``value`` (itself
    included), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Repeated):
            return item.twice
        inner = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend(x for x in inner if isinstance(x, (dict, list)))
    return None


def twice(key: str) -> tuple[str, str]:
    """The rejected row's reason and detail for an object that names ``key`` twice."""
    return "duplicate_key", (f"the key {key!r} is given twice in one object (JSON readers "
                             "differ on which value they keep: Python's the last, others the "
                             "first or none)")


def duplicate(text: str, value: Any) -> tuple[str, str] | None:
    """``("duplicate_key", detail)`` when an object of the JSON ``text`` (decoded as
    ``value``) names a key twice; None when none does (:func:`_maybe_twice` first: a text
    it clears is not decoded again)."""
    if not _maybe_twice(text, value):
        return None
    key = repeated(json.loads(text, object_pairs_hook=_marking))
    return None if key is None else twice(key)


def found(text: str, value: Any) -> tuple[str, str] | None:
    """``(reason, detail)`` of the first thing the JSON ``text``, decoded as ``value``, holds
    that no row may: a NUL or lone surrogate (:func:`problem`), a key given twice
    (:func:`duplicate`); None for none."""
    return (may_hold(text) and problem(value)) or duplicate(text, value)
