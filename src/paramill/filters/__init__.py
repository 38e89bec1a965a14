"""Filters (one module each, one interface: :mod:`paramill.filters.base`), held-out data
for the model-based filters, selection, and analysis of the released corpus.

A filter is found by its name: module ``paramill.filters.<name>`` holds one
:class:`~paramill.filters.base.Filter` subclass whose ``name`` is that name. Modules are
imported only when used (torch, kenlm); :func:`all_filters` imports them all (for the
schema generator). A package outside paramill adds a filter through the ``paramill.filters``
entry-point group: the entry point's name is the filter's name, its value the module (or the
class) that holds it; ``paramill config schema --write`` then puts it in the schema."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import pkgutil
from typing import Any

from paramill.filters.base import Filter

#: the entry-point group through which a package outside paramill adds filters
ENTRY_POINTS = "paramill.filters"


def _filter_in(module: Any) -> type[Filter] | None:
    found = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, Filter)
             and not inspect.isabstract(c)
             and c is not Filter and c.__module__ == module.__name__]
    return found[0] if found else None


def _outside(name: str | None = None) -> list[type[Filter]]:
    """The filters of the ``paramill.filters`` entry points (the one named ``name``)."""
    found = []
    for point in importlib.metadata.entry_points(group=ENTRY_POINTS):
        if name is None or point.name == name:
            loaded = point.load()
            cls = loaded if inspect.isclass(loaded) else _filter_in(loaded)
            if cls is None or cls.name != point.name:
                raise ValueError(f"entry point {point.name} = {point.value} ({ENTRY_POINTS}) "
                                 f"holds no Filter named {point.name!r}")
            found.append(cls)
    return found


def filter_class(name: str) -> type[Filter]:
    cls = None
    if name.isidentifier() and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        cls = _filter_in(importlib.import_module(f"{__name__}.{name}"))
    if cls is None and name.isidentifier():
        cls = next(iter(_outside(name)), None)
    if cls is None or cls.name != name:
        raise ValueError(f"unknown filter {name!r}; known: {', '.join(names())}")
    return cls


def all_filters() -> list[type[Filter]]:
    """Every filter of the package, in their declared order (imports them all)."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        cls = _filter_in(importlib.import_module(f"{__name__}.{info.name}"))
        if cls is not None:
            found.append(cls)
    return sorted(found + _outside(), key=lambda c: c.order)


def names() -> list[str]:
    """Filter names as the committed config schema lists them (no filter module imported)."""
    from paramill import config

    return list(config.schema()["properties"]["filters"]["properties"]["enabled"]["items"]["enum"])


def make(name: str, **options: Any) -> Filter:
    """A filter by name, with its settings and model paths as keyword options."""
    cls = filter_class(name)
    known = {f.name for f in dataclasses.fields(cls)}  # not the ClassVars (name, doc, ...)
    unknown = set(options) - {k for k in known if not k.startswith("_")}
    if unknown:
        raise ValueError(f"filter {name}: unknown settings {sorted(unknown)}")
    return cls(**options)
