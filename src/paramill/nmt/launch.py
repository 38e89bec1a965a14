"""Run an OpenNMT-py tool repeatably: ``python -m paramill.nmt.launch TOOL SEED ARGS...``.

OpenNMT-py seeds python, numpy and torch from its ``seed`` option, but not SentencePiece,
whose subword sampling (the source side's regularisation, ``subword_alpha``) then draws a
fresh seed each run: the vocabulary counts and the whole training differed run to run.
This launcher seeds every generator (:func:`paramill.device.deterministic`), turns on
torch's deterministic algorithms and fixes the thread count, then runs the tool's own
``main`` in this process. TOOL is ``build_vocab`` or ``train``.
"""

from __future__ import annotations

import importlib
import sys

TOOLS = {"build_vocab": "onmt.bin.build_vocab", "train": "onmt.bin.train"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] not in TOOLS or not argv[1].lstrip("-").isdigit():
        print(f"usage: python -m paramill.nmt.launch {{{','.join(TOOLS)}}} SEED ARGS...", file=sys.stderr)
        return 2
    tool, seed, rest = argv[0], int(argv[1]), argv[2:]
    from paramill.device import deterministic

    deterministic(seed)
    sys.argv = [f"onmt_{tool}", *rest]
    result = importlib.import_module(TOOLS[tool]).main()
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover - run as a module by paramill.nmt.train
    sys.exit(main())
