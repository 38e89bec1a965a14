"""On-disk layouts of input data: one module per layout, one name per layout, one reader.

A format module declares

- ``NAME``: the layout's one name, in the config, on the command line and in the docs;
- ``ALIASES``: older names still read (a config written with one keeps working);
- ``DESCRIPTION``: one line for the docs and ``--help``;
- for each *use* it can be read as (:data:`USES`), a function of that name: ``bitext`` (a
  Czech-English corpus: :class:`BitextPair` rows), ``pairs`` (a paraphrase pair corpus:
  :class:`Candidate` rows), ``sts`` (an STS set: :class:`Scored` rows) or ``labelled`` (the
  identifier's labelled pairs: ``(pairs, labels, dropped)``, from :class:`Labelled` rows by
  :func:`collect_labelled`). A line that gives no row is a row with ``reason`` set (a
  :class:`Bad` for ``sts``; an error for ``labelled``); every line is read through
  :class:`paramill.io.LineStream` (strict UTF-8, bounded lines, a cut or corrupt file an
  :class:`~paramill.io.InputError` naming file and line);
- for the corpus uses (``bitext``, ``pairs``), ``Spec``: its own settings (a
  :class:`~paramill.settings.Settings` dataclass: they join the corpus's keys in the config
  schema) and, where it reads more than ``path``, ``files(spec)``: what a rule lists as its
  inputs.

The stages dispatch through :func:`reader` and build a corpus's settings with :func:`spec`;
the config schema's ``format`` enums and corpus keys come from :func:`enum` and
:func:`corpus_schema`. Adding a layout is one module here, its test and
``paramill config schema --write`` (docs/architecture.md). A module outside the package
joins through the ``paramill.formats`` entry-point group.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import json
import pkgutil
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any

import paramill.formats as _package
from paramill.config.typed import check_values, config_keys, object_schema


#: what a layout can be read as: the function its module defines for each, and where
USES = {
    "bitext": "a Czech-English corpus (`bitext.corpora.<name>.format`)",
    "pairs": "a paraphrase pair corpus (`pairs.corpora.<name>.format`)",
    "sts": "an STS evaluation set (`evaluate.sts[].format`)",
    "labelled": "the paraphrase identifier's labelled pairs "
                "(`twitter.identify.train`/`evaluate[].format`)",
}


#: the entry-point group through which a package outside paramill adds format modules
ENTRY_POINTS = "paramill.formats"
#: the entry-point group through which each corpus use names its corpus settings (a class
#: with ``from_dict(name, entry)``): the stages register them in pyproject.toml, so that the
#: config checks a corpus's entry as its stage reads it without importing the stage
CORPORA = "paramill.corpora"


@functools.cache
def _modules() -> tuple[ModuleType, ...]:
    """Every format module: this package's (a module that declares ``NAME``), then those of
    the ``paramill.formats`` entry points. Two modules may not share a name."""
    found = [importlib.import_module(f"{_package.__name__}.{info.name}")
             for info in pkgutil.iter_modules(_package.__path__)]
    found += [point.load() for point in importlib.metadata.entry_points(group=ENTRY_POINTS)]
    modules = tuple(m for m in found if hasattr(m, "NAME"))
    seen: dict[str, str] = {}
    for module in modules:
        for name in (module.NAME, *module.ALIASES):
            if name in seen and seen[name] != module.__name__:
                raise ValueError(f"format name {name!r} is declared by both {seen[name]} and "
                                 f"{module.__name__}")
            seen[name] = module.__name__
    return modules


def modules(use: str | None = None) -> list[ModuleType]:
    """The format modules (that can be read as ``use``), by name."""
    if use is not None and use not in USES:
        raise ValueError(f"unknown use {use!r}; known: {', '.join(USES)}")
    return sorted((m for m in _modules() if use is None or callable(getattr(m, use, None))),
                  key=lambda m: m.NAME)


def names(use: str | None = None) -> dict[str, str]:
    """Every name a format is read by (its own and its aliases) -> its one name."""
    return {name: module.NAME for module in modules(use)
            for name in (module.NAME, *module.ALIASES)}


def enum(use: str) -> list[str]:
    """The names a ``format`` key of ``use`` accepts: each layout's, then the old ones."""
    found = modules(use)
    return [m.NAME for m in found] + [a for m in found for a in m.ALIASES]


def layout(name: str, use: str | None = None) -> ModuleType:
    """The format module read by ``name`` (its name or an alias), readable as ``use``."""
    known = names(use)
    if name not in known:
        what = f"{use} format" if use else "format"
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(sorted(known))}")
    return next(m for m in modules(use) if m.NAME == known[name])


def reader(use: str, name: str) -> Callable[..., Any]:
    """The function that reads layout ``name`` as ``use``."""
    return getattr(layout(name, use), use)


def files(name: str, spec: Any) -> list[str]:
    """The files that data in layout ``name`` reads (its rule's inputs): ``spec`` is a
    corpus's layout settings, or the path of a set given by its path alone (an STS set, a
    labelled set). A module that reads more than ``path`` says so with ``files``."""
    module = layout(name)
    if hasattr(module, "files"):
        return list(module.files(spec))
    return [spec if isinstance(spec, str) else spec.path]


def spec(use: str, name: str, data: dict[str, Any], where: str,
         stage_keys: tuple[str, ...] = ()) -> Any:
    """The layout's own settings (its ``Spec``) from a corpus's keys ``data`` (the stage's
    own keys, ``stage_keys``, taken out): a key of no format, one the layout does not take,
    a missing or bad value is an error naming ``where`` and the key."""
    module = layout(name, use)
    cls = module.Spec
    own = config_keys(cls)
    if stray := sorted(set(data) - set(own)):
        others = sorted(set(stray) & set(corpus_schema(use)["properties"]))
        unknown = sorted(set(stray) - set(others))
        if unknown:
            known = sorted({*stage_keys, *corpus_schema(use)["properties"]})
            raise ValueError(f"{where}: unknown keys {unknown} (known: {', '.join(known)})")
        raise ValueError(f"{where}: format {name} takes no {', '.join(others)} (its keys: "
                         f"{', '.join(own) or 'none'})")
    if missing := [f.name for f in dataclasses.fields(cls) if f.name in own and f.name not in data
                   and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]:
        raise ValueError(f"{where}: format {name} needs {' and '.join(f'`{k}`' for k in missing)}")
    check_values(cls, data, where)
    hints = typing.get_type_hints(cls)
    made = cls(**{k: tuple(v) if isinstance(v, list) and _is_tuple(hints[k]) else v
                  for k, v in data.items()})
    if hasattr(module, "check"):
        module.check(made, use, where)
    return made


def corpus(cls: type, use: str, name: str, data: Any, where: str) -> Any:
    """A stage's corpus settings ``cls`` (its own keys, ``format``, and ``layout``: the
    layout's ``Spec``) from the config entry ``data`` of corpus ``name``."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a corpus is an object of keys, not a {type(data).__name__}")
    if "format" not in data:
        raise ValueError(f"{where}: no format")
    own = {k: v for k, v in data.items() if k in config_keys(cls)}
    check_values(cls, own, where)
    layout = spec(use, data["format"], {k: v for k, v in data.items() if k not in own}, where,
                  tuple(config_keys(cls)))
    return cls(name=name, layout=layout, **own)


def _is_tuple(hint: Any) -> bool:
    """Whether a field declared ``hint`` holds a tuple (``tuple[...]``, maybe ``| None``)."""
    return typing.get_origin(hint) is tuple or any(typing.get_origin(a) is tuple
                                                   for a in typing.get_args(hint))


@functools.cache
def corpus_schema(use: str) -> dict[str, Any]:
    """The keys every layout of ``use`` adds to a corpus (each described with the layouts
    that take it) and, per layout, the keys it needs: joined into the stage's corpus schema."""
    props: dict[str, Any] = {}
    takers: dict[str, list[str]] = {}
    needs: dict[tuple[str, ...], list[str]] = {}  # required keys -> the layouts that need them
    for module in modules(use):
        node = object_schema(module.Spec, defaults=True)
        for key, value in node["properties"].items():
            # no default in the schema: a layout that does not take the key would get it;
            # the layout's Spec fills it in (the description says it)
            if "default" in value:
                value = dict(value)
                default = value.pop("default")
                value["description"] = (f"{value.get('description', '')} "
                                         f"Default: {json.dumps(default)}.")
            props.setdefault(key, value)
            takers.setdefault(key, []).append(module.NAME)
        if node.get("required"):
            needs.setdefault(tuple(node["required"]), []).extend([module.NAME, *module.ALIASES])
    for key, node in props.items():
        node["description"] = (f"{', '.join(takers[key])}: {node.get('description', '')}"
                               .strip())
    conditions = [{"if": {"properties": {"format": {"enum": names}}},
                   "then": {"required": list(keys)}} for keys, names in needs.items()]
    return {"properties": props, "allOf": conditions}


def format_doc(use: str) -> str:
    """Each layout of ``use`` in one line: ``name: description`` (the docs and the schema)."""
    return "; ".join(f"{m.NAME}: {m.DESCRIPTION}" for m in modules(use))


@functools.cache
def corpus_settings(use: str) -> type:
    """The settings class of a corpus of ``use`` (``bitext``, ``pairs``), as its stage
    registered it (:data:`CORPORA`)."""
    found = {point.name: point for point in importlib.metadata.entry_points(group=CORPORA)}
    if use not in found:
        raise ValueError(f"no corpus settings registered for {use!r} (entry points {CORPORA}: "
                         f"{', '.join(sorted(found)) or 'none'}); is paramill installed?")
    return found[use].load()
