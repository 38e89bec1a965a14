"""JSON Lines: one JSON object a line (what Hugging Face ``datasets``' ``to_json``, most web
exports and many released corpora write); plain, .gz, .xz, .zst or .bz2.

A corpus names the object's field for each role with ``fields`` (a bitext corpus ``cs`` and
``en``; a pair corpus ``s1`` and ``s2``, optionally ``score`` and ``label``); a role it leaves
out is read from the field of its own name, and a name with a dot reads inside an object
(``translation.cs``: the ``datasets`` layout of WMT's bitext). An STS set or the
identifier's labelled pairs are read from the fields their ``fields`` names, else from the
names ``datasets`` gives them: ``s1`` or ``sentence1``, ``s2`` or ``sentence2``, and
``score`` (or, as in STS-B there, ``label``) or ``label``.

A line that is not JSON is ``not_json``, one that is not an object ``not_object``, a
sentence's field absent or null ``missing_field``, a sentence that is not a string
``bad_field``, a score that is not a finite number ``bad_score`` and a label not
0/1/true/false ``bad_label``; a pair's score and label may be absent or null.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from paramill.text import numbers as strict
from paramill.formats.rows import Bad, BitextPair, Candidate, Labelled, Scored
from paramill.formats.reading import collect_labelled, json_lines
from paramill.io.lines import REJECTED_TEXT_CHARS
from paramill.config.typed import Settings, setting

NAME = "jsonl"
ALIASES: tuple[str, ...] = ()
#: an STS set or labelled pairs may name their fields (``fields``)
SET_FIELDS = True
DESCRIPTION = ("one JSON object a line, its fields named by `fields` (bitext: cs, en; pairs: "
               "s1, s2, optional score and label; `a.b` reads inside an object)")
#: the roles a corpus of each use reads: (required sentences, optional values)
ROLES = {"bitext": (("cs", "en"), ()), "pairs": (("s1", "s2"), ("score", "label"))}
#: the names a set given by its path alone is read by, the first present taken
NAMED = {"s1": ("s1", "sentence1"), "s2": ("s2", "sentence2"), "score": ("score", "label"),
         "label": ("label",)}
_ROLE_NAMES = sorted({r for needed, optional in ROLES.values() for r in (*needed, *optional)})
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}


@dataclass(frozen=True)
class Spec(Settings):
    path: str = setting(doc="The file. Plain, .gz, .xz, .zst or .bz2.", type="string")
    fields: dict[Annotated[str, {"enum": _ROLE_NAMES}], Annotated[str, {"minLength": 1}]] | None = setting(
        None, "The field (jsonl) or column (parquet) each role is read from: `{s1: question1, "
        "s2: question2, label: is_duplicate}`; jsonl: `{cs: translation.cs, en: "
        "translation.en}`, a dot reading inside an object. A role left out is read as without "
        "`fields`.", no_default=True)


def check(spec: Spec, use: str, where: str) -> None:
    """The roles ``fields`` names are those of ``use``, each from a field of its own."""
    needed, optional = ROLES[use]
    given = spec.fields or {}
    if stray := sorted(set(given) - {*needed, *optional}):
        raise ValueError(f"{where}.fields: a {use} corpus reads {', '.join((*needed, *optional))}, "
                         f"not {', '.join(stray)}")
    if twice := strict.repeated(given.values()):
        raise ValueError(f"{where}.fields: {', '.join(twice)} is named for more than one role")


def lookup(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    """(found, value) of the field ``name`` of ``obj``: the field of that name, else the one
    its dots lead to through nested objects."""
    if name in obj:
        return True, obj[name]
    value: Any = obj
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _shown(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)[:REJECTED_TEXT_CHARS]


def _parsed(value: Any, parse) -> tuple[Any, bool]:
    """``(parse(value), True)``; ``(None, True)`` for a value absent or null; ``(None,
    False)`` for one given that ``parse`` cannot read."""
    found = None if value is None else parse(value)
    return found, value is None or found is not None


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def objects(path: str, max_line_bytes: int) -> Iterator[tuple[int, dict[str, Any]] | Bad]:
    """Each non-blank line's object, or a :class:`Bad` (not UTF-8, too long, not JSON, not an
    object)."""
    for item in json_lines(path, max_line_bytes):
        if isinstance(item, Bad) or isinstance(item[1], dict):
            yield item
        else:
            yield Bad(item[0], "not_object", f"{_kind(item[1])}, not a JSON object", _shown(item[1]))


def values(line_no: int, obj: dict[str, Any], names: dict[str, str], needed: tuple[str, ...],
           optional: tuple[str, ...]) -> dict[str, Any] | Bad:
    """``{role: value}`` of one object: the ``needed`` sentences (strings; a field absent or
    null is ``missing_field``, another type ``bad_field``) and the ``optional`` values
    (None where absent), each read from its field in ``names``."""
    found: dict[str, Any] = {}
    for role in needed:
        there, value = lookup(obj, names[role])
        field = names[role] if names[role] == role else f"{names[role]} ({role})"
        if not there or value is None:
            return Bad(line_no, "missing_field", f"no field {field}", _shown(obj))
        if not isinstance(value, str):
            return Bad(line_no, "bad_field", f"field {field} is {_kind(value)}, not a string",
                       _shown(obj))
        found[role] = value
    return {**found, **{role: lookup(obj, names[role])[1] for role in optional}}


#: where a file's objects come from: ``(path, max_bytes)`` -> ``(line_no, object)`` or Bad
Source = Callable[[str, int], Iterator[tuple[int, dict[str, Any]] | Bad]]


def read(path: str, names: dict[str, str] | None, needed: tuple[str, ...],
         optional: tuple[str, ...], max_line_bytes: int, source: Source | None = None
         ) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]] | Bad]:
    """Per line: ``(line_no, object, values)`` (:func:`values`) or a :class:`Bad`. ``names``:
    each role's field; a role it does not name is read from the first of its :data:`NAMED`
    names the line's object has."""
    for item in (source or objects)(path, max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, obj = item
        fields = {r: (names or {}).get(r) or next((n for n in NAMED[r] if n in obj), NAMED[r][0])
                  for r in (*needed, *optional)}
        found = values(line_no, obj, fields, needed, optional)
        yield found if isinstance(found, Bad) else (line_no, obj, found)


def _names(spec: Spec, use: str) -> dict[str, str]:
    needed, optional = ROLES[use]
    return {role: (spec.fields or {}).get(role, role) for role in (*needed, *optional)}


def bitext(spec: Spec, max_line_bytes: int = 65536, source: Source | None = None
           ) -> Iterator[BitextPair]:
    """The ``cs`` and ``en`` fields of each line's object."""
    for item in read(spec.path, _names(spec, "bitext"), *ROLES["bitext"], max_line_bytes, source):
        if isinstance(item, Bad):
            yield BitextPair(item.line_no, item.text, None, item.reason, item.detail)
        else:
            yield BitextPair(item[0], item[2]["cs"], item[2]["en"])


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0,
          source: Source | None = None) -> Iterator[Candidate]:
    """One candidate a line: the ``s1`` and ``s2`` fields, the score and label where given."""
    names = _names(spec, "pairs")
    for item in read(spec.path, names, *ROLES["pairs"], max_line_bytes, source):
        if isinstance(item, Bad):
            yield Candidate(item.line_no, item.text, None, method, source_file=spec.path,
                            reason=item.reason, detail=item.detail)
            continue
        line_no, obj, v = item
        (score, score_ok), (label, label_ok) = _parsed(v["score"], strict.number), _parsed(v["label"], strict.label)
        if not score_ok:
            yield Candidate(line_no, _shown(obj), None, method, source_file=spec.path, reason="bad_score",
                            detail=f"field {names['score']}: score {_shown(v['score'])[:40]} is not a finite number")
        elif not label_ok:
            yield Candidate(line_no, _shown(obj), None, method, source_file=spec.path, reason="bad_label",
                            detail=f"field {names['label']}: label {_shown(v['label'])[:40]} is not 0/1/true/false")
        else:
            yield Candidate(line_no, v["s1"], v["s2"], method, 1, score, label, source_file=spec.path)


def sts(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None,
        source: Source | None = None) -> Iterator[Scored | Bad]:
    """Each pair and its gold score as given (``s1``/``sentence1``, ``s2``/``sentence2``,
    ``score`` or else ``label``, or the fields ``fields`` names; a pair without a score is
    skipped and counted)."""
    for item in read(path, fields, ("s1", "s2"), ("score",), max_line_bytes, source):
        yield item if isinstance(item, Bad) else Scored(item[2]["s1"], item[2]["s2"], item[2]["score"])


def labelled(path: str, max_line_bytes: int = 65536, fields: dict[str, str] | None = None,
             source: Source | None = None) -> tuple[list[tuple[str, str]], list[int], int]:
    """The pairs and their ``label`` (0/1/true/false; absent or null: debatable, dropped),
    from the fields ``fields`` names or ``datasets``' names; a line that gives no pair is an
    error naming the file and line."""
    def row(item: tuple[int, dict[str, Any], dict[str, Any]] | Bad) -> Labelled | Bad:
        if isinstance(item, Bad):
            return item
        line_no, _, v = item
        label, readable = _parsed(v["label"], strict.label)
        if not readable:
            return Bad(line_no, "bad_label", f"label {_shown(v['label'])[:40]} is not "
                       "0/1/true/false", None)
        return Labelled(line_no, v["s1"], v["s2"], label)

    return collect_labelled((row(i) for i in read(path, fields, ("s1", "s2"), ("label",),
                                                  max_line_bytes, source)), path)
