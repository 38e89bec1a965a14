"""The configuration schema: validation with defaults, readable errors, digests.

The schema (``configs/config.schema.yaml``, shipped inside the package) is the single
source of every key, type, default and description. The Snakefile resolves its config
through ``paramill config resolve`` so the workflow and the command line agree.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml


class Settings:
    """Base of the settings dataclasses of the stages: built from a config slice, refusing
    keys it does not know (the schema's defaults equal the dataclass defaults; a test checks)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        unknown = set(data) - set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        if unknown:
            raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
        return cls(**data)


class ConfigError(ValueError):
    """A config that does not match the schema; the message names the offending key."""


@functools.cache
def schema() -> dict[str, Any]:
    text = resources.files("paramill").joinpath("data/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _fill_defaults(instance: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
    """Insert schema defaults for missing keys, depth first (objects only)."""
    if "$ref" in node:
        ref = node["$ref"].removeprefix("#/")
        target = root
        for part in ref.split("/"):
            target = target[part]
        node = target
    if not isinstance(instance, dict) or node.get("x-overrides"):
        return  # x-overrides: an object of overrides; its unset keys stay unset
    for name, sub in node.get("properties", {}).items():
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if name in instance:
            _fill_defaults(instance[name], sub, root)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for name, value in instance.items():
            if name not in node.get("properties", {}):
                _fill_defaults(value, extra, root)


def resolve(config: dict[str, Any] | None) -> dict[str, Any]:
    """Validate ``config`` and return a copy with every default filled in.

    Raises :class:`ConfigError` listing each problem as ``config key a.b.c: message``.
    """
    config = copy.deepcopy(config or {})
    root = schema()
    _fill_defaults(config, root, root)
    validator = jsonschema.Draft202012Validator(root)
    problems = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        # report the innermost cause of if/then and combinator failures
        leaf = error
        while leaf.context:
            leaf = min(leaf.context, key=lambda e: len(e.absolute_path))
        problems.append(f"config key {_key(leaf.absolute_path)}: {leaf.message}")
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(dict.fromkeys(problems)))
    return config


def load(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file and resolve it."""
    with open(path) as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping at the top level")
    return resolve(data)


def digest(config: dict[str, Any]) -> str:
    """sha256 of the config in canonical JSON: the same settings give the same digest."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def defaults(*path: str) -> dict[str, Any]:
    """The default values of the object at ``path`` in the schema (e.g. ``"bitext", "clean"``)."""
    node = schema()
    for part in path:
        node = node["properties"][part]
    return {k: v["default"] for k, v in node.get("properties", {}).items() if "default" in v}
