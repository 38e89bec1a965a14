"""Typed settings: each stage declares its config section once, as a dataclass.

A field made with :func:`setting` carries its description and JSON Schema constraints
(``minimum``, ``pattern``, ...); its Python type gives the schema type (``int`` ->
integer, ``Literal[...]`` -> enum, ``tuple[T, ...]`` -> array, ``X | None`` -> nullable, a
nested :class:`Settings` -> object). :func:`object_schema` turns a class into the JSON
Schema of its section; ``paramill.schema`` assembles the sections into the schema that
validates ``config.yaml``, and a test fails when the committed schema differs from it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Annotated, Any, Literal, Union

#: names of corpora, models, releases: part of file names and pair ids
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_-]*$"
Name = Annotated[str, {"pattern": NAME_PATTERN}]
Device = Literal["auto", "cpu", "cuda"]
DEVICE_DOC = "auto: cuda when a GPU is visible."
#: the end of a launch-only key's description
LAUNCH_NOTE = "Launch-only: changing it re-runs nothing."
Component = Literal["word", "trigram", "lstm", "blstm", "gran"]


def setting(default: Any = dataclasses.MISSING, doc: str = "", *, factory: Any = None,
            no_default: bool = False, workflow: bool = False, launch: bool = False,
            quiet_default: bool = False, **schema: Any) -> Any:
    """A config key: its default, its description and extra JSON Schema keywords.

    ``factory`` builds mutable defaults; ``no_default`` leaves the key out of the schema's
    defaults (optional keys such as a rule's ``mem_mb``); ``workflow`` marks a key that
    chooses the rule's inputs rather than changing its work (``x-workflow`` in the schema:
    the rule leaves it out of its params, so changing it re-runs nothing by itself);
    ``launch`` marks a key that changes how the work is launched, not what it computes (its
    output the same to float noise at most, as with the thread count), or one that steers
    only what a live harvest asks for next (a day harvested is settled: its table never
    depends on it); ``x-launch``: the rule passes it to the job outside its params,
    ``--launch``, so changing it re-runs nothing either; the next job that runs takes it.
    ``quiet_default`` marks a key added after outputs were made whose default computes what
    paramill computed before it existed (``x-quiet-default``): at its default the rule leaves
    it out of its params, so the update that adds it re-runs nothing; another value does.
    """
    if workflow:
        schema["x-workflow"] = True
    if quiet_default:
        schema["x-quiet-default"] = True
    if launch:
        schema["x-launch"] = True
        doc = f"{doc} {LAUNCH_NOTE}"
    meta = {"doc": doc, "schema": schema, "no_default": no_default}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def section(cls: type, doc: str, **schema: Any) -> Any:
    """A nested section (an object of its own keys, defaults filled in)."""
    return dataclasses.field(default_factory=cls, metadata={"doc": doc, "schema": schema})


class Settings:
    """Base of the settings dataclasses: built from a config slice, refusing keys it does
    not know. Class attribute ``schema_extra`` adds keywords to the section's object schema."""

    schema_extra: typing.ClassVar[dict[str, Any]] = {}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = ""):
        """Built from a config slice or a verb's ``--settings`` JSON: a mapping whose keys and
        values the class's schema allows (an error names the key and what is wrong)."""
        if not isinstance(data, dict):
            raise ValueError(f"{where or cls.__name__} settings must be an object of keys, not a "
                             f"{type(data).__name__}")
        unknown = set(data) - set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        if unknown:
            raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in data  # type: ignore[arg-type]
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:  # the class's constructor would raise a TypeError naming no setting
            raise ValueError(f"{where or cls.__name__} settings: {', '.join(missing)} must be given")
        check_values(cls, data, where)
        hints = typing.get_type_hints(cls)
        return cls(**{k: _nested(hints.get(k), v, f"{where or cls.__name__}.{k}")
                      for k, v in data.items()})

    @classmethod
    def keys(cls) -> list[str]:
        """The config keys of this section (fields declared with setting or section)."""
        return config_keys(cls)

    @classmethod
    def from_section(cls, data: dict[str, Any]):
        """Only this class's config keys of ``data`` (a section shared with other classes)."""
        return cls.from_dict({k: v for k, v in data.items() if k in cls.keys()})


def _nested(kind: Any, value: Any, where: str) -> Any:
    """``value`` built as the settings class its field declares: a nested section from its
    mapping, a ``tuple[X, ...]`` of settings from a list of mappings (typed all the way
    down: no stage reads a nested setting as a dict); anything else as given."""
    if isinstance(kind, type) and issubclass(kind, Settings) and isinstance(value, dict):
        return kind.from_dict(value, where)
    args = typing.get_args(kind)
    if (typing.get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis
            and isinstance(args[0], type) and issubclass(args[0], Settings)
            and isinstance(value, (list, tuple))):
        return tuple(args[0].from_dict(v, f"{where}.{i}") if isinstance(v, dict) else v
                     for i, v in enumerate(value))
    return value


_SCALARS = {int: "integer", float: "number", bool: "boolean", str: "string", type(None): "null"}


def config_keys(cls: type) -> list[str]:
    """The config keys of a settings class (fields declared with setting or section)."""
    return [f.name for f in dataclasses.fields(cls) if "doc" in f.metadata]


def check_values(cls: type, data: dict[str, Any], where: str = "") -> None:
    """Refuse values of the wrong type or out of range for ``cls``'s config keys (as the
    config schema does), naming the key: a verb's JSON gets the same checks as the config."""
    import jsonschema

    keys = set(config_keys(cls))
    given = {k: v for k, v in data.items() if k in keys}
    node = object_schema(cls, defaults=False)
    node.pop("required", None)
    node.pop("allOf", None)  # cross-key conditions: the class's own check() says them
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({
        "array": lambda _, v: isinstance(v, (list, tuple)),
        "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
        "object": lambda _, v: isinstance(v, dict) or dataclasses.is_dataclass(v)})
    validator = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                             type_checker=checker)(node)
    errors = sorted(validator.iter_errors(given), key=lambda e: list(map(str, e.path)))
    if errors:
        error = errors[0]
        key = ".".join(str(p) for p in (*([where] if where else []), *error.absolute_path))
        raise ValueError(f"setting {key or cls.__name__}: {error.message}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return {}  # a nested section: its own keys' defaults are filled in below it
    return value


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type annotation."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        return {**type_schema(args[0]), **args[1]}
    if isinstance(tp, type) and tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        parts = [type_schema(a) for a in args]
        if all(set(p) == {"type"} for p in parts):
            return {"type": [p["type"] for p in parts]}
        enums = [v for p in parts for v in p.get("enum", [])]
        if all(set(p) <= {"enum", "type"} for p in parts) and type(None) in args:
            return {"enum": [None, *enums]} if enums else {"type": [parts[0]["type"], "null"]}
        alternatives = [p for p in parts if p != {"type": "null"}]
        if len(alternatives) > 1:  # e.g. dict | list: one of the shapes (or null)
            return {"anyOf": [*alternatives, *([{"type": "null"}] if type(None) in args else [])]}
        base = alternatives[0]
        return {**base, "type": [base.get("type"), "null"]}
    if origin in (tuple, list):
        return {"type": "array", "items": type_schema(args[0])}
    if origin is dict:
        key, value = args
        out = {"type": "object", "additionalProperties": type_schema(value)}
        if typing.get_origin(key) is Annotated:
            out["propertyNames"] = typing.get_args(key)[1]
        return out
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return object_schema(tp)
    raise TypeError(f"no JSON Schema for {tp!r}")


def object_schema(cls: type, defaults: bool = True) -> dict[str, Any]:
    """The JSON Schema of a settings class: one property per declared key.

    ``defaults=False`` leaves defaults out (sections whose entries override another section).
    """
    hints = typing.get_type_hints(cls, include_extras=True)
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        if "doc" not in f.metadata:
            continue  # a runtime field (a model path, threads): not a config key
        node = type_schema(hints[f.name])
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
            required.append(f.name)
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            node["default"] = {}
        elif default is not dataclasses.MISSING and not f.metadata.get("no_default"):
            node["default"] = _jsonable(default)
        node.update(f.metadata.get("schema", {}))
        if not defaults:
            node.pop("default", None)
        if f.metadata["doc"]:
            node["description"] = f.metadata["doc"]
        props[f.name] = node
    extra = dict(getattr(cls, "schema_extra", {}))
    for key, node in extra.pop("properties", {}).items():  # keys declared elsewhere (a layout's)
        props[key] = {k: v for k, v in node.items() if defaults or k != "default"}
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if required:
        out["required"] = required
    out["properties"] = props
    out.update(extra)
    return out


def overrides_schema(cls: type) -> dict[str, Any]:
    """An object of some of ``cls``'s keys whose unset keys stay unset (``x-overrides``):
    a named model or release that overrides its base section."""
    node = object_schema(cls)
    return {**node, "x-overrides": True}

