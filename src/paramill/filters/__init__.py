"""Filters (one module each, one interface: :mod:`paramill.filters.base`), held-out data
for the model-based filters, selection, and analysis of the released corpus."""

from __future__ import annotations

import importlib
from typing import Any

from paramill.filters.base import Filter

#: filter name -> "module:class"; modules are imported only when used (torch, kenlm)
FILTERS = {
    "length": "paramill.filters.length:Length",
    "cost": "paramill.filters.cost:Cost",
    "overlap": "paramill.filters.overlap:Overlap",
    "bleu": "paramill.filters.bleu:Bleu",
    "kenlm": "paramill.filters.kenlm:Kenlm",
    "classifier": "paramill.filters.classifier:Classifier",
    "parascore": "paramill.filters.parascore:Parascore",
    "dual_xent": "paramill.filters.dual_xent:DualXent",
}


def filter_class(name: str) -> type[Filter]:
    if name not in FILTERS:
        raise ValueError(f"unknown filter {name!r}; known: {', '.join(FILTERS)}")
    module, cls = FILTERS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make(name: str, **options: Any) -> Filter:
    """A filter by name, with its settings and model paths as keyword options."""
    cls = filter_class(name)
    known = set(getattr(cls, "__dataclass_fields__", {}))
    unknown = set(options) - {k for k in known if not k.startswith("_")}
    if unknown:
        raise ValueError(f"filter {name}: unknown settings {sorted(unknown)}")
    return cls(**options)
