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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from paramill.io import REJECTED_TEXT_CHARS, InputError, LineStream, decode_line, shown_text
from paramill.settings import Settings, check_values, config_keys, object_schema, setting

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


@dataclass(frozen=True)
class FileSpec(Settings):
    """The settings of a layout read from one file and nothing else."""

    path: str = setting(doc="The file. Plain, .gz, .xz, .zst or .bz2.", type="string")


# -- rows ----------------------------------------------------------------------

@dataclass(frozen=True)
class Bad:
    """A line that gives no record: ``reason`` (a short code), ``detail`` (for people) and
    the line's text as far as it can be shown."""

    line_no: int
    reason: str
    detail: str
    text: str | None


@dataclass(slots=True)
class BitextPair:
    """One Czech-English pair of a bitext corpus, or one unusable line (``reason`` set)."""

    line_no: int
    cs: str | None
    en: str | None
    reason: str | None = None
    detail: str | None = None


@dataclass(slots=True)
class Candidate:
    """One candidate paraphrase of a reference, or one unusable line (``reason`` set)."""

    line_no: int
    en_ref: str | None
    candidate: str | None
    method: str
    rank: int = 1
    score: float | None = None
    label: int | None = None
    source_file: str = ""
    reason: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Scored:
    """One pair of an STS set with its gold score as written (``None``: a pair the set
    gives no score for; the evaluation skips and counts it)."""

    s1: str | None
    s2: str | None
    score: str | float | None


@dataclass(frozen=True)
class Labelled:
    """One labelled pair: ``label`` 1 (paraphrase), 0, or None (debatable: dropped)."""

    line_no: int
    s1: str
    s2: str
    label: int | None


# -- lines ---------------------------------------------------------------------

def lines(source: str | LineStream, max_line_bytes: int = 65536
          ) -> Iterator[tuple[int, str] | Bad]:
    """Each line's text, or a :class:`Bad` for a line that is too long (``line_too_long``,
    never held whole), not UTF-8 (``invalid_utf8``) or holding a NUL byte (``not_text``). ``source``: a path, or a
    :class:`~paramill.io.LineStream` (whose ``lines`` then counts what was read)."""
    stream = source if isinstance(source, LineStream) else LineStream(str(source), max_line_bytes)
    max_line_bytes = stream.max_line_bytes
    for line_no, raw in stream:
        if raw is None:
            yield Bad(line_no, "line_too_long", f"line longer than {max_line_bytes} bytes", None)
            continue
        text, reason, problem = decode_line(raw)
        if text is None:
            yield Bad(line_no, str(reason), str(problem), shown_text(raw))
            continue
        yield line_no, text


def strict_lines(path: str | Path, max_line_bytes: int = 65536) -> Iterator[tuple[int, str]]:
    """Each line's number and text, where any bad line is an
    :class:`~paramill.io.InputError` naming file and line."""
    for item in lines(str(path), max_line_bytes):
        if isinstance(item, Bad):
            raise InputError(path, item.line_no, item.detail)
        yield item


def text_lines(path: str | Path, max_line_bytes: int = 65536) -> list[str]:
    """The whole file's lines (see :func:`strict_lines`)."""
    return [text for _, text in strict_lines(path, max_line_bytes)]


def fields(source: str | LineStream, max_line_bytes: int = 65536
           ) -> Iterator[tuple[int, list[str]] | Bad]:
    """Each line's tab-separated fields, or a :class:`Bad` (see :func:`lines`)."""
    for item in lines(source, max_line_bytes):
        yield item if isinstance(item, Bad) else (item[0], item[1].split("\t"))


def json_lines(path: str | Path, max_line_bytes: int = 16 << 20, text: bool = True
               ) -> Iterator[tuple[int, Any] | Bad]:
    """Each non-blank line's JSON value, or a :class:`Bad` for a line too long, not UTF-8, not
    JSON (``not_json``, also nested deeper than Python parses), or with ``text`` holding what
    no row may (:func:`.jsontext.found`; else :func:`.jsontext.marked`: the caller checks)."""
    from paramill.formats import jsontext

    for item in lines(str(path), max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, line = item
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield Bad(line_no, "not_json", f"not JSON ({exc})", line[:REJECTED_TEXT_CHARS])
        except RecursionError:  # '[[[[...' a hundred thousand deep: Python's parser gives up
            yield Bad(line_no, "not_json", "not JSON: nested too deeply to read", line[:REJECTED_TEXT_CHARS])
        else:
            found = text and jsontext.found(line, value)
            yield Bad(line_no, *found, line[:REJECTED_TEXT_CHARS]) if found else (
                line_no, value if text else jsontext.marked(line, value))


def bad_fields(line_no: int, columns: list[str], reason: str, detail: str) -> Bad:
    return Bad(line_no, reason, detail, "\t".join(columns)[:REJECTED_TEXT_CHARS])


def rejected(bad: Bad, method: str, path: str) -> Candidate:
    """The rejected candidate row of a bad line of a pair corpus."""
    return Candidate(bad.line_no, bad.text, None, method, source_file=path, reason=bad.reason,
                     detail=bad.detail)


def candidate_fields(stream: LineStream, method: str
                     ) -> Iterator[tuple[int, list[str] | Candidate]]:
    """Tab-separated fields of each line, or the rejected row of a line that has none."""
    for item in fields(stream):
        yield ((item.line_no, rejected(item, method, stream.path)) if isinstance(item, Bad)
               else item)


def bad_candidate(line_no: int, columns: list[str], method: str, path: str, reason: str,
                  detail: str) -> Candidate:
    """The rejected row of a line whose columns cannot be a candidate."""
    return Candidate(line_no, "\t".join(columns)[:REJECTED_TEXT_CHARS], None, method,
                     source_file=path, reason=reason, detail=detail)


def candidates_by_line(path: str, method: str, max_line_bytes: int,
                       parse: Callable[[int, list[str]], Iterator[Candidate]]
                       ) -> Iterator[Candidate]:
    """The candidates ``parse(line_no, columns)`` makes of each readable line of ``path``;
    the rejected row of each unreadable line (not UTF-8, too long) passed on in its place."""
    for line_no, columns in candidate_fields(LineStream(path, max_line_bytes), method):
        if isinstance(columns, Candidate):
            yield columns
        else:
            yield from parse(line_no, columns)


def bad_score(line_no: int, columns: list[str], column: int | str, value: str, method: str,
              path: str) -> Candidate:
    """The rejected row of a line whose score (``column``: its number or name) is not a
    finite decimal number."""
    return bad_candidate(line_no, columns, method, path, "bad_score",
                         f"column {column}: score {value[:40]!r} is not a finite decimal number")


def check_sides(path: str | Path, line_no: int, s1: str, s2: str) -> None:
    """A labelled pair has two sentences: an empty (or blank) side is an
    :class:`~paramill.io.InputError` naming the file, the line and the side. Such a line is a
    broken row (a column shifted, a sentence lost), and scoring it would put a label on
    nothing into training or into an evaluation's figures."""
    for side, text in ((1, s1), (2, s2)):
        if not text.strip():
            raise InputError(path, line_no, f"sentence {side} of the pair is empty; a labelled "
                                            "pair needs two sentences")


def collect_labelled(rows: Iterator[Labelled | Bad], path: str | Path
                     ) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) of labelled rows: a blank line is skipped, any other bad line
    (an empty sentence among them, :func:`check_sides`) is an
    :class:`~paramill.io.InputError` naming file and line, a debatable pair dropped."""
    pairs, labels, dropped = [], [], 0
    for row in rows:
        if isinstance(row, Bad):
            if row.reason == "column_count" and not (row.text or "").strip():
                continue  # a blank line
            raise InputError(path, row.line_no, row.detail)
        check_sides(path, row.line_no, row.s1, row.s2)
        if row.label is None:
            dropped += 1
            continue
        pairs.append((row.s1, row.s2))
        labels.append(row.label)
    return pairs, labels, dropped


#: the reasons a reader gives a line it could not parse at all (as opposed to a judgement on
#: a parsed row's content, such as a Twitter URL pair's ``not_paraphrase`` label)
UNREADABLE = frozenset({"invalid_utf8", "not_text", "line_too_long", "column_count", "not_json",
                        "duplicate_key", "not_object", "missing_field", "bad_field", "bad_quote",
                        "bad_score", "bad_label", "bad_votes"})


def some_readable(rows: Iterable[Any], path: str, what: str,
                  hint: str = "Check the corpus's format, columns and header") -> Iterator[Any]:
    """``rows`` (a reader's: a row whose ``reason`` is set carries ``line_no`` and ``detail``,
    as :class:`Bad` does) passed on; when the reader ends and every one of them was
    :data:`UNREADABLE`, an :class:`~paramill.io.InputError` naming ``path`` (or the row's
    ``source_file``), the first such line, the reasons and ``hint``.

    Some bad lines are data (they go to the rejected table); none readable is a wrong
    ``format``, ``columns`` or ``header`` (a four-column file read as two), or not this
    kind of file at all: the stage fails (its outputs were never renamed into place)
    instead of writing an empty corpus."""
    reasons: Counter[str] = Counter()
    first = None
    rows = iter(rows)  # the rest is passed on from where the first readable row was
    for row in rows:
        reason = getattr(row, "reason", None)
        if reason not in UNREADABLE:
            yield row
            yield from rows
            return
        reasons[reason] += 1
        first = first or row
        yield row
    if first is not None:
        counts = ", ".join(f"{r} {n}" for r, n in reasons.most_common())
        raise InputError(getattr(first, "source_file", None) or path, first.line_no,
                         f"no line could be read as {what} ({counts}); this one: {first.detail}. "
                         + hint)


# -- the registry --------------------------------------------------------------

@functools.cache
def _modules() -> tuple[ModuleType, ...]:
    """Every format module: this package's (a module that declares ``NAME``), then those of
    the ``paramill.formats`` entry points. Two modules may not share a name."""
    found = [importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__)]
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
