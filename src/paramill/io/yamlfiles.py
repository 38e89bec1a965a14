"""Reading YAML config files: the safe loader that refuses a key given twice and reads
``1e-3`` as a number, the check against alias bombs and self-containing nodes, and the
error a config that cannot be used raises (:class:`ConfigError`, naming the file or key)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A config that does not match the schema; the message names the offending key."""


#: libyaml's safe loader where PyYAML was built with it (about 10x the pure-Python one: the
#: schema is read by every job, 0.8 s with the pure-Python loader)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UniqueKeyLoader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, refusing a mapping that names a key twice: YAML keeps the last value
    silently, so a second ``embed:`` section further down a config dropped the first one's
    settings without a word. Keys merged in with ``<<`` may be overridden, as YAML says.
    ``1e-3`` is a number, as in YAML 1.2 (PyYAML reads it as text)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping (lines {seen[key]} "
                    f"and {line}); YAML would keep the second silently. Merge them into one",
                    key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


#: a float with an exponent as YAML 1.2 writes it; PyYAML (YAML 1.1) wants a dot and a signed
#: exponent, so it reads the usual `learning_rate: 1e-3` as the text '1e-3'
EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
UniqueKeyLoader.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, list("-+0123456789."))


#: the most values (every mapping, list and scalar) a config may hold once its YAML aliases are
#: expanded: the presets hold a few hundred; an alias bomb of a kilobyte expands to billions
MAX_VALUES = 1_000_000


def check_expanded(data: Any, where: str, limit: int = MAX_VALUES) -> None:
    """A :class:`ConfigError` naming ``where`` when ``data`` contains itself (a YAML alias to
    an enclosing node) or holds more than ``limit`` values with its aliases expanded ("billion
    laughs": validating, printing or digesting it would walk every copy). Counted once per
    shared node, without recursion, so the check costs what the file's own nodes do."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        kids = list(node.values()) if isinstance(node, dict) else node
        if finished:
            active.discard(key)
            sizes[key] = 1 + sum(sizes.get(id(k), 1) for k in kids)
            if sizes[key] > limit:
                raise ConfigError(f"{where}: more than {limit:,} values once its YAML aliases are "
                                  "expanded (an alias bomb?)")
        elif key in active:
            raise ConfigError(f"{where}: a value contains itself (a YAML alias to the node it is in)")
        elif key not in sizes:
            active.add(key)
            stack.append((node, True))
            stack.extend((k, False) for k in kids)


def read_yaml(path: str | Path) -> Any:
    """The data of a YAML (or JSON) file. A file that is not UTF-8, not YAML (the line where
    it broke), nested too deeply, or that contains itself or expands past :data:`MAX_VALUES`
    through aliases is a :class:`ConfigError` naming it."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (byte {exc.start})") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {exc.context or ''} {exc.problem or ''}"
                          .replace("  ", " ").rstrip()) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read") from None
    check_expanded(data, str(path))
    return data
