"""The configuration schema: validation with defaults, readable errors, digests.

The schema (``configs/config.schema.yaml``, shipped inside the package) is generated from
the settings each stage declares (:mod:`paramill.schema`) and committed, so that validating
a config imports no stage. The Snakefile resolves its config with :func:`resolve` in its own
process, as ``paramill config resolve`` does, so the workflow and the command line agree.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from paramill.config import layout
from paramill.config.checks import _is_integer, _is_number, _key, cross_field_problems
from paramill.io.yamlfiles import EXPONENT_FLOAT, SAFE_LOADER, ConfigError, read_yaml


@functools.cache
def user_schema() -> dict[str, Any]:
    """The committed schema, as users write a config: each stage's advanced keys under its
    ``advanced`` section (:mod:`paramill.config.layout`)."""
    return copy.deepcopy(_committed())


@functools.cache
def _committed() -> dict[str, Any]:
    text = resources.files("paramill").joinpath("data/config.schema.yaml").read_text()
    return yaml.load(text, Loader=SAFE_LOADER)


def schema() -> dict[str, Any]:
    """The schema as the stages read a config: every key in the section that declares it."""
    return copy.deepcopy(_folded())


@functools.cache
def _folded() -> dict[str, Any]:
    return layout.fold_schema(_committed())


def _deref(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The schema node a ``$ref`` points to (its siblings laid over it), or ``node``."""
    if "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _fill_defaults(instance: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
    """Insert schema defaults for missing keys, depth first (objects only)."""
    node = _deref(node, root)
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


_SCALARS = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None)}


def coerce_strings(instance: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """Read strings as YAML where the schema allows no string but a number, boolean or null.

    Snakemake's ``--config 'bitext={"clean": {"max_tokens": 50}}'`` hands nested values
    over as strings (``"50"``); this makes the documented way work. A string that does not
    read as an allowed type is left for the schema to report.
    """
    node = _deref(node, root)
    if isinstance(instance, str):
        types = node.get("type")
        allowed = set(types if isinstance(types, list) else [types] if types else [])
        if "string" not in allowed and allowed & set(_SCALARS) and "enum" not in node:
            try:
                value = yaml.safe_load(instance)
            except yaml.YAMLError:
                return instance
            if isinstance(value, str) and "number" in allowed and EXPONENT_FLOAT.match(value.strip()):
                value = float(value)  # `1e-3`: YAML 1.2 reads a number, PyYAML's YAML 1.1 text
            if any(isinstance(value, _SCALARS[t]) and not (t != "boolean" and isinstance(value, bool))
                   for t in allowed & set(_SCALARS)):
                return value
        return instance
    if isinstance(instance, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for key, value in instance.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                instance[key] = coerce_strings(value, sub, root)
    elif isinstance(instance, list) and isinstance(node.get("items"), dict):
        return [coerce_strings(v, node["items"], root) for v in instance]
    return instance


def resolve(config: dict[str, Any] | None) -> dict[str, Any]:
    """Validate ``config`` and return a copy with every default filled in.

    ``config`` is written as a config file holds it (each stage's advanced keys under its
    ``advanced`` section); the copy returned is as the stages read it, every key in the
    section that declares it (:func:`paramill.config.layout.fold`). Raises
    :class:`ConfigError` listing each problem as ``config key a.b.c: message``, each key
    named as a config file holds it.
    """
    config = copy.deepcopy(config or {})
    if isinstance(config, dict) and (misplaced := layout.misplaced(config)):
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(misplaced))
    config = layout.fold(config) if isinstance(config, dict) else config
    root = _folded()
    coerce_strings(config, root, root)
    _fill_defaults(config, root, root)
    validator = _validator(root)
    problems = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        # report the innermost cause of if/then and combinator failures
        leaf = error
        while leaf.context:
            leaf = min(leaf.context, key=lambda e: len(e.absolute_path))
        problems.append(f"config key {_key(leaf.absolute_path)}: {_message(leaf)}")
    if not problems:
        problems = cross_field_problems(config, root)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(
            dict.fromkeys(layout.as_written(p) for p in problems)))
    return config


def check_section(section: str, values: dict[str, Any], schema_too: bool = True) -> dict[str, Any]:
    """``values`` of config section ``section`` (``"pairs.clean"``), as a command's settings
    give them, checked by the code that checks a config: the section's schema (types, bounds,
    patterns; ``schema_too``: a job of the workflow, whose config was checked whole, skips
    it) and the constraints between keys (:func:`paramill.config.checks.cross_field_problems`).
    Returns them with strings coerced as :func:`resolve` coerces them; a :class:`ConfigError`
    names each problem. Unknown keys are left to the settings class that reads them."""
    root = _folded()
    path = section.split(".")
    node = functools.reduce(lambda n, part: n["properties"][part], path, root)
    values = coerce_strings(copy.deepcopy(values), node, root)
    problems = []
    if schema_too:
        for error in _validator(node).iter_errors(values):
            leaf = error
            while leaf.context:
                leaf = min(leaf.context, key=lambda e: len(e.absolute_path))
            if leaf.validator != "additionalProperties":
                problems.append(f"settings {_key([*path, *leaf.absolute_path])}: {_message(leaf)}")
    if not problems:
        problems = cross_field_problems(functools.reduce(lambda inner, part: {part: inner},
                                                         reversed(path), values), root, whole=False)
    if problems:
        raise ConfigError(f"invalid settings for {section}:\n  " + "\n  ".join(
            dict.fromkeys(layout.as_written(p) for p in problems)))
    return values


def _message(error: Any) -> str:
    """The schema's own words where it has them (``x-explain`` beside a pattern), the
    reason a format check gave, else jsonschema's message."""
    node = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "pattern" and node.get("x-explain"):
        return f"{error.instance!r} is refused: {node['x-explain']}"
    if error.validator == "not" and node.get("description"):
        return f"{error.instance!r} is refused: {node['description']}"
    if error.validator == "format" and error.cause is not None:
        return f"{error.instance!r} is not a valid {error.validator_value}: {error.cause}"
    return error.message


def _validator(root: dict[str, Any]) -> Any:
    """A JSON Schema validator of ``root`` with paramill's types and formats (jsonschema is
    imported here, not when the package is: every job imports paramill.config.typed)."""
    import jsonschema

    kind = jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
            {"integer": _is_integer, "number": _is_number}))
    # the formats a config value may declare: ``date`` a real calendar day, ``polars-regex``
    # a pattern polars' regex engine compiles
    formats = jsonschema.FormatChecker(formats=["date"])
    formats.checks("polars-regex", raises=(ValueError,))(_polars_regex)
    return kind(root, format_checker=formats)


@functools.cache
def _default_patterns() -> frozenset[str]:
    """The defaults of every ``polars-regex`` setting in the schema (a unit test compiles
    them)."""
    found, stack = set(), [_folded()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("format") == "polars-regex" and isinstance(node.get("default"), str):
                found.add(node["default"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(found)


def _polars_regex(value: object) -> bool:
    # polars, which compiles a pattern, is imported only where a config sets its own
    # (0.4 s of every Snakemake start): the schema's defaults compile
    if not isinstance(value, str) or value in _default_patterns():
        return True
    from paramill.text import regex_problem  # polars: only where a config sets such a pattern

    if problem := regex_problem(value):
        raise ValueError(problem)
    return True


def load(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file (:func:`read_yaml`) and resolve it."""
    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file must hold a mapping at the top level")
    return resolve(data)


def digest(config: dict[str, Any]) -> str:
    """sha256 of the config in canonical JSON: the same settings give the same digest."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _keys(path: tuple[str, ...]) -> dict[str, Any]:
    """The keys of the object at ``path`` in the schema (e.g. ``"bitext", "clean"``)."""
    return functools.reduce(lambda node, part: node["properties"][part], path, _folded()).get("properties", {})


def marked(mark: str, *path: str) -> tuple[str, ...]:
    """Keys at ``path`` marked ``x-<mark>`` (workflow, launch): kept out of a rule's params."""
    return tuple(k for k, v in _keys(path).items() if v.get(f"x-{mark}"))


def rule_params(values: dict[str, Any], *path: str) -> dict[str, Any]:
    """``values`` of the config section at ``path`` as its rule's params take them: without
    its workflow keys (``x-workflow``: they choose the rule's inputs) and its launch-only keys
    (``x-launch``: how the job runs; ``--launch`` passes them), so changing one re-runs
    nothing by itself, and without a key marked ``x-quiet-default`` while it holds its
    default (what paramill computed before that key existed: updating re-runs nothing)."""
    def kept(key: dict[str, Any], value: Any) -> bool:
        quiet = key.get("x-quiet-default") and value == key.get("default")
        return not (key.get("x-workflow") or key.get("x-launch") or quiet)

    keys = _keys(path)
    return {k: v for k, v in values.items() if kept(keys.get(k, {}), v)}


def defaults(*path: str) -> dict[str, Any]:
    """The default values of the object at ``path`` in the schema."""
    return {k: v["default"] for k, v in _keys(path).items() if "default" in v}
