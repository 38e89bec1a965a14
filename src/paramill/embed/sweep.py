"""The sweep target's grid: one embedding model per point of ``embed.sweep.grid``.

Pure Python over the resolved ``embed`` config section (no torch), so the workflow can
expand the grid when it builds the DAG."""

from __future__ import annotations

import itertools
from typing import Any

#: the grid's axes, in the order points are numbered
AXES = ("components", "units", "sp_vocab_size", "megabatch", "pairs", "release")


def sweep_points(embed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``sweep-NN`` -> {"spec", "train", "point", "release"}: the model spec and training
    settings of each point of the grid (the axes given, crossed in ``AXES`` order)."""
    sweep = embed["sweep"]
    keys = [k for k in AXES if sweep["grid"].get(k)]
    points = {}
    for i, values in enumerate(itertools.product(*(sweep["grid"][k] for k in keys))):
        point = dict(zip(keys, values))
        spec = {**embed["model"]}
        train = {**embed["train"], "max_pairs": sweep["pairs"]}
        for key in ("components", "units", "sp_vocab_size"):
            if key in point:
                spec[key] = point[key]
        if "megabatch" in point:
            train["megabatch"] = point["megabatch"]
        if "pairs" in point:
            train["max_pairs"] = point["pairs"]
        points[f"sweep-{i:02d}"] = {"spec": spec, "train": train, "point": point,
                                    "release": point.get("release", embed["release"])}
    return points


def model_settings(embed: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(model spec, training settings, release) of a model in ``embed.models`` or a
    sweep point."""
    if name in embed["models"]:
        return {**embed["model"], **embed["models"][name]}, embed["train"], embed["release"]
    found = sweep_points(embed).get(name)
    if found is None:
        raise ValueError(f"no embedding model {name!r} in embed.models or the sweep grid")
    return found["spec"], found["train"], found["release"]
