"""The ``filters`` config section, derived from the filter classes: the ``enabled`` enum,
one section per filter (with the models it scores with and whether it needs the Czech side,
as ``x-models``, ``x-needs-source``, ``x-needs-decoder`` and ``x-reads-tokens`` for the
workflow), held-out data, selection and
analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paramill.filters import all_filters
from paramill.filters.analysis import AnalysisSettings
from paramill.filters.base import Filter
from paramill.filters.heldout import HeldoutSettings
from paramill.filters.select import SelectSettings
from paramill.config.typed import (
    NAME_PATTERN,
    Settings,
    object_schema,
    overrides_schema,
    section,
    setting,
)


def filter_schema(cls: type[Filter]) -> dict[str, Any]:
    """The config section of one filter, with its workflow facts."""
    node = object_schema(cls.settings or cls)
    node = {**node, "default": {}, "description": cls.doc}
    if not node["properties"]:
        del node["properties"]
    if cls.models:
        node["x-models"] = dict(cls.models)
    if cls.needs_source:
        node["x-needs-source"] = True
    if cls.needs_decoder:
        node["x-needs-decoder"] = True
    if cls.reads_tokens:
        node["x-reads-tokens"] = True
    return node


@dataclass(frozen=True)
class FiltersSection(Settings):
    enabled: tuple[str, ...] = setting(
        (), "Filters that score every candidate shard (one job per filter and shard).",
        uniqueItems=True)
    heldout: HeldoutSettings = section(
        HeldoutSettings, "Held-out reference/translation pairs that train the KenLM, classifier "
        "and bootstrapped paraphrase-score models (and are left out of the corpus).")
    select: SelectSettings = section(
        SelectSettings, "The default release's selection (named `default`); `releases` adds named variants.")
    releases: dict[str, SelectSettings] = setting(
        factory=dict, doc="Named releases, each overriding `select` (e.g. strict: "
        "{bounds: {overlap_1: [0, 0.6]}}); written to results/corpus/<name>/.",
        propertyNames={"pattern": NAME_PATTERN, "not": {"const": "default"}},
        additionalProperties=overrides_schema(SelectSettings))
    analysis: AnalysisSettings = section(
        AnalysisSettings, "Statistics of the released corpus and of the scored candidates.")


def section_schema() -> dict[str, Any]:
    node = object_schema(FiltersSection)
    filters = all_filters()
    names = [f.name for f in filters]
    node["properties"]["enabled"].update(items={"enum": names}, default=names)
    props = {"enabled": node["properties"]["enabled"], "heldout": node["properties"]["heldout"]}
    props.update({f.name: filter_schema(f) for f in filters})
    props.update({k: v for k, v in node["properties"].items() if k not in props})
    return {**node, "properties": props}
