"""Files whose JSON is well formed but not of the shape a reader expects (edited by hand,
another program's, or an API's): every field of a good object set, one at a time, to
values of other JSON types."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

#: values of every JSON type, and of the wrong size or range for most fields
WRONG_JSON = [None, 1, -1, 1e308, 10**30, True, "", "x", "2026-13-45T99:00:00Z", [], [1], ["x"],
              {}, {"a": 1}, {"path": None, "sha256": 3}]


def json_paths(obj: Any, skip: Callable[[tuple], bool] = lambda path: False,
               path: tuple = ()) -> Iterator[tuple]:
    """Every path into ``obj`` (keys of objects, indexes of lists), the root left out, and
    below a path for which ``skip`` is true neither it nor what it holds."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        if skip((*path, key)):
            continue
        yield (*path, key)
        yield from json_paths(value, skip, (*path, key))


def edited(obj: Any, skip: Callable[[tuple], bool] = lambda path: False
           ) -> Iterator[tuple[tuple, Any, Any]]:
    """``(path, value, a copy of obj with value at path)`` for every path and wrong value."""
    for path in list(json_paths(obj, skip)):
        for value in WRONG_JSON:
            changed = copy.deepcopy(obj)
            parent = changed
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = value
            yield path, value, changed
