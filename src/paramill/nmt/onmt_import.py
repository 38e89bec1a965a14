"""Import OpenNMT-py without the packages only its unused transforms need.

OpenNMT-py 3.5.1 imports every data transform when ``onmt`` is imported (its transform
registry is filled at import time), so ``import onmt`` needs spaCy (``terminology``),
fastText (``clean``) and pyahocorasick (``terminology``, ``inlinetags``), although paramill
uses none of those transforms: it trains with the ``sentencepiece`` and ``filtertoolong``
transforms and decodes with its own code. Where one of them is not installed,
:func:`import_onmt` puts a placeholder module in its place while ``onmt`` is imported; the
modules of OpenNMT-py that import it keep it, and it fails with a clear message the moment
anything in it is used. Where it is installed, nothing changes.
"""

from __future__ import annotations

import importlib.util
import sys
import types

#: module -> (the PyPI package, the OpenNMT-py transforms that use it)
TRANSFORM_ONLY = {
    "spacy": ("spacy", "terminology"),
    "fasttext": ("fasttext-wheel", "clean"),
    "ahocorasick": ("pyahocorasick", "terminology, inlinetags"),
}


class _Placeholder(types.ModuleType):
    def __init__(self, name: str, package: str, transforms: str):
        super().__init__(name)
        self.__paramill_placeholder__ = True
        self._why = (f"{name} is not installed: OpenNMT-py's {transforms} transform(s) need it "
                     f"(pip install {package}); paramill's own steps do not use them")

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise ImportError(self._why)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def placeholders() -> list[str]:
    """Install a placeholder for each transform-only module that is missing; their names."""
    added = []
    for name, (package, transforms) in TRANSFORM_ONLY.items():
        if name in sys.modules or _installed(name):
            continue
        sys.modules[name] = _Placeholder(name, package, transforms)
        added.append(name)
    return added


def import_onmt():
    """``onmt``, imported with :func:`placeholders` in place. They leave ``sys.modules`` once
    it is imported (OpenNMT-py's modules keep theirs): a placeholder left there is a module
    other libraries find, and ``"spacy" in sys.modules`` is how ``datasets`` (its hashing,
    through dill) decides to ``import spacy`` and look into it, which raised the placeholder's
    ImportError in a process that had imported OpenNMT-py."""
    added = placeholders()
    try:
        import onmt
    finally:
        for name in added:
            if getattr(sys.modules.get(name), "__paramill_placeholder__", False):
                del sys.modules[name]
    return onmt
