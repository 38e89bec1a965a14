"""Columns found by name, shared by the layouts whose columns carry names (``parquet``,
``csv``): which column each role is read from, given by a corpus's ``fields`` or found by
the roles' usual names, and a score or label read from a column's value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from paramill.text import numbers as strict
from paramill.formats import jsonl, tsv
from paramill.errors import InputError

C = TypeVar("C")

#: the columns a corpus's role is found by without ``fields`` (one of them at most)
FOUND_BY = {"pairs": {"s1": tsv.REF_NAMES, "s2": tsv.CAND_NAMES, "score": ("score",), "label": ("label",)},
            "bitext": {"cs": ("cs",), "en": ("en",)}}
#: how missing sentence roles are said (as a TSV's header says it)
MISSING = {"pairs": "have no s1 (reference) and s2 (paraphrase) columns",
           "bitext": "have no `cs` and `en` columns"}
#: how a score or label is read, and what one that cannot be is not
PARSE = {"score": (strict.number, "a finite number"), "label": (strict.label, "0/1/true/false")}


def corpus_roles(path: str, names: Sequence[str], use: str, given: dict[str, str],
                 column: Callable[[str, str], C], plain: Callable[[str], C]) -> dict[str, C]:
    """{role: column} of a corpus whose columns are ``names``: those ``given`` (its
    ``fields``; ``column(role, name)`` finds one or raises), the others found by their usual
    names (:data:`FOUND_BY`, ``plain(name)`` the column; a column given for a role is not
    found for another)."""
    found = {role: column(role, name) for role, name in given.items()}
    taken = {name for name in given.values() if name in names}
    for role, choices in FOUND_BY[use].items():
        if role in found:
            continue
        at = [n for n in names if n in choices and n not in taken]
        if len(at) > 1:
            raise InputError(path, None, f"columns {list(names)} name the {role} twice")
        if at:
            found[role] = plain(at[0])
    if not set(jsonl.ROLES[use][0]) <= set(found):
        raise InputError(path, None, f"columns {list(names)} {MISSING[use]}")
    return found


def set_roles(path: str, names: Sequence[str], needed: tuple[str, ...], optional: tuple[str, ...],
              plain: Callable[[str], C], column: Callable[[str, str], C],
              given: dict[str, str] | None = None) -> dict[str, C]:
    """{role: column} of a set given by its path (an STS set, labelled pairs): those its
    ``fields`` give (``column(role, name)`` finds one or raises), each other role from its
    first :data:`jsonl.NAMED` name among ``names`` not taken by a role before it (an
    optional role may have none)."""
    given = given or {}
    found: dict[str, C] = {role: column(role, name) for role, name in given.items()}
    taken: set[str] = set(given.values())
    for role in (*needed, *optional):
        if role in found:
            continue
        name = next((n for n in jsonl.NAMED[role] if n in names and n not in taken), None)
        if name is None and role in needed:
            raise InputError(path, None, f"no column {' or '.join(jsonl.NAMED[role])} (it has "
                                         f"{', '.join(names)[:200]})")
        if name is not None:
            found[role] = plain(name)
            taken.add(name)
    return found


#: the roles a set given by its path reads: (sentences, optional values)
SET_ROLES = {"sts": (("s1", "s2"), ("score",)), "labelled": (("s1", "s2"), ("label",))}


def check_set_fields(use: str, fmt: str, fields: dict[str, str] | None, where: str) -> None:
    """A set's ``fields`` (an STS set's, labelled pairs'): only for a layout whose columns
    carry names (``SET_FIELDS``), only the roles of ``use``, each from a column of its own."""
    if not fields:
        return
    from paramill.formats import registry

    if not getattr(registry.layout(fmt, use), "SET_FIELDS", False):
        takes = ", ".join(m.NAME for m in registry.modules(use) if getattr(m, "SET_FIELDS", False))
        raise ValueError(f"{where}.fields: format {fmt} takes no fields (its columns are in a "
                         f"fixed order; {takes} take them)")
    needed, optional = SET_ROLES[use]
    if stray := sorted(set(fields) - {*needed, *optional}):
        raise ValueError(f"{where}.fields: {'an STS set' if use == 'sts' else 'labelled data'} "
                         f"reads {', '.join((*needed, *optional))}, not {', '.join(stray)}")
    if twice := strict.repeated(fields.values()):
        raise ValueError(f"{where}.fields: {', '.join(twice)} is named for more than one role")


def parsed(given: Any, role: str, column: str) -> tuple[Any, str | None]:
    """A score or label read (None where ``given`` is None), and the detail of one that
    cannot be read, naming its ``column``."""
    parse, what = PARSE[role]
    found = None if given is None else parse(given)
    if given is not None and found is None:
        return None, f"column {column}: {role} {str(given)[:40]!r} is not {what}"
    return found, None
