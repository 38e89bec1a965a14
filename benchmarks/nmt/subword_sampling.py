#!/usr/bin/env python3
"""Subword regularisation as NMT training draws it (the source side, ``subword_nbest: -1``,
``subword_alpha: 0.1``): speed and strength of paramill's seeded whole-lattice sampler
(``paramill.nmt.lattice``), of the stand-in it replaced (one of the sentence's 64 best), and
of SentencePiece's own sampler (unseeded, the reference for what ``nbest_size=-1`` means).

A unigram SentencePiece model (``--vocab`` pieces, character coverage 0.9999, as
``nmt.spm``) is trained on the Czech sides of ../shared/data (newstest2021 and Tatoeba,
4,004 sentences). Speed: microseconds a sentence over all of them, twice (the first pass
meets each word for the first time, the second finds it kept). Strength: the share of the
words of the first ``--fidelity`` newstest2021 sentences (each drawn ``--draws`` times) whose
drawn segmentation is their Viterbi one (1.0: no regularisation).

    python benchmarks/nmt/subword_sampling.py [--vocab 8000] [--out FILE]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import sentencepiece as spm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import emit, machine  # noqa: E402

from paramill.nmt import lattice  # noqa: E402

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
FILES = ["wmt21-newstest-cs-en/newstest2021.cs-en.src.cs", "wmt21-newstest-cs-en/newstest2021.en-cs.ref.A.cs",
         "wmt21-newstest-cs-en/newstest2021.en-cs.ref.B.cs", "tatoeba-ces-eng/tatoeba.ces-eng.ces"]


def nbest64(sp, scores, rng):
    """The stand-in before 2026-12-01: one of the sentence's 64 best, P ~ P(x)^alpha."""
    import math

    def draw(text: str) -> list[str]:
        candidates = sp.nbest_encode(text, nbest_size=64, out_type=int)
        logp = [0.1 * sum(map(scores.__getitem__, ids)) for ids in candidates]
        top = max(logp)
        chosen = rng.choices(candidates, weights=[math.exp(v - top) for v in logp])[0]
        return [sp.id_to_piece(i) for i in chosen]
    return draw


def kept_best(sp, draw, sentences: list[str], draws: int) -> float:
    same = total = 0
    for _ in range(draws):
        for text in sentences:
            best, drawn = lattice.words(sp.encode(text, out_type=str)), lattice.words(draw(text))
            if len(best) == len(drawn):
                same += sum(a == b for a, b in zip(best, drawn))
                total += len(best)
    return round(same / total, 4)


def timed(draw, sentences: list[str]) -> float:
    start = time.perf_counter()
    for text in sentences:
        draw(text)
    return round((time.perf_counter() - start) / len(sentences) * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--fidelity", type=int, default=300)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    sentences = [line for name in FILES for line in (DATA / name).read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cs.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(input=f"{tmp}/cs.txt", model_prefix=f"{tmp}/cs", vocab_size=args.vocab,
                                       character_coverage=0.9999, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=f"{tmp}/cs.model")
    scores = [sp.get_score(i) for i in range(sp.get_piece_size())]
    rng = random.Random(13)
    ours = lattice.sampler(sp, 0.1)
    samplers = {
        "lattice": lambda text: ours(text, rng),
        "sentence_64_best": nbest64(sp, scores, rng),
        "sentencepiece_own": lambda text: sp.encode(text, out_type=str, enable_sampling=True,
                                                    nbest_size=-1, alpha=0.1),
    }
    report = {"benchmark": "subword_sampling", "machine": machine(), "sentences": len(sentences),
              "pieces": sp.get_piece_size(), "alpha": 0.1, "results": {}}
    news = sentences[:args.fidelity]
    for name, draw in samplers.items():
        first, second = timed(draw, sentences), timed(draw, sentences)
        report["results"][name] = {"us_per_sentence_first_pass": first, "us_per_sentence_second_pass": second,
                                   "words_at_viterbi": kept_best(sp, draw, news, args.draws)}
    report["results"]["viterbi"] = {"us_per_sentence_first_pass": timed(lambda t: sp.encode(t, out_type=str),
                                                                        sentences)}
    emit(report, args.out)


if __name__ == "__main__":
    main()
