"""What ParaBank 2's latin-1 rule (`require_latin`) drops from English news and MT output:
for each file given, the lines whose text latin-1 cannot encode (after paramill's cleaning
normalisation), the characters responsible, and a sample of the lines. It decides the pair
corpora's default (`pairs.clean.require_latin`).

    python benchmarks/pairs/pairs_latin.py ../shared/data/wmt21-newstest-cs-en/newstest2021.cs-en.ref.A.en \\
        ../shared/data/wmt21-newstest-cs-en/system-outputs/*.en ../shared/data/tatoeba-ces-eng/tatoeba.ces-eng.eng
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from paramill.text import normalize  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="English text, one sentence a line")
    parser.add_argument("--sample", type=int, default=5, help="lines shown per file")
    args = parser.parse_args()
    report, total, dropped, chars = [], 0, 0, Counter()
    for name in args.files:
        lines = Path(name).read_text(encoding="utf-8").splitlines()
        bad = []
        for line in lines:
            text = normalize(line)
            try:
                text.encode("latin-1")
            except UnicodeEncodeError:
                bad.append(text)
                chars.update(c for c in text if ord(c) > 255)
        total, dropped = total + len(lines), dropped + len(bad)
        report.append({"file": Path(name).name, "lines": len(lines), "not_latin1": len(bad),
                       "share": round(len(bad) / max(len(lines), 1), 4),
                       "sample": bad[:args.sample]})
    print(json.dumps({"files": report, "lines": total, "not_latin1": dropped,
                      "share": round(dropped / max(total, 1), 4),
                      "characters": [{"char": c, "name": unicodedata.name(c, "?"), "lines": n}
                                     for c, n in chars.most_common(25)]},
                     indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
