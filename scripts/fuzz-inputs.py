#!/usr/bin/env python3
"""Hostile-input check of the commands that read users' files: each sample input mutated 24
ways (empty, blank lines, cut mid-line, invalid UTF-8, NUL, a surrogate's bytes, CRLF, a lone
CR, tabs removed or added, a tab doubled (the fields after it shifted), a line of tabs, a 300 KB line, 100,000 nested brackets, a BOM,
U+2028/NEL, random bytes, no final newline, every line twice, a stray quote, five random
byte changes) and read by the command that takes it, in this process: bitext and pairs
ingest in every sample layout (and as JSON Lines); the tweet-archive replay; the identifier's
labelled pairs in its four layouts (Twitter URL, PIT-2015, a.toks/b.toks/sim.txt, JSON Lines: written from the sample's
labelled tweets); embed train from TSV pairs; the STS sets in their three layouts
(SentEval's two files each mutated in turn); SimLex-999 against a lexicon, and a lexicon against SimLex-999; the sample's
pairs as Parquet read by pairs ingest, embed train and lexicon build (and, written
DELTA_BYTE_ARRAY, by pairs ingest); an embedding model
file read by evaluate sts. The STS and SimLex cases read a tiny embedding model and lexicon,
built here first.

A run passes when each case exits 0 or exits 2 with one error line naming the mutated file;
a traceback, another exit status or an error that does not name the file fails it (exit 1).
Nothing is written outside a temporary folder. Not part of `make test` (a few minutes);
run it after changing a reader:

    .venv/bin/python scripts/fuzz-inputs.py [CASE ...]
"""

from __future__ import annotations

import atexit
import contextlib
import gzip
import io
import json
import lzma
import os
import random
import re
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from paramill import cli  # noqa: E402

SAMPLE = ROOT / "data" / "sample"


def plain(path: Path) -> bytes:
    data = path.read_bytes()
    return {".gz": gzip.decompress, ".xz": lzma.decompress}.get(path.suffix, lambda b: b)(data)


#: the mutation that leaves the data and puts the case's files (and outputs) under a folder
#: whose name holds a Latin-1 byte: an error naming such a file is the expected answer
LATIN1_NAME = "latin1_name"


def mutations(data: bytes, rnd: random.Random) -> Iterator[tuple[str, bytes]]:
    lines = data.split(b"\n")
    line = lines[min(3, len(lines) - 1)]

    def at(new: bytes) -> bytes:  # the fourth line replaced
        return data.replace(line, new, 1)

    yield "empty", b""
    yield "blank_lines", b"\n\n\n"
    yield "cut", data[: len(data) // 2 + 7]
    yield "invalid_utf8", at(line[:5] + b"\xff\xfe" + line[5:])
    yield "nul", at(line[:5] + b"\x00" + line[5:])
    yield "surrogate", at(line[:5] + b"\xed\xa0\x80" + line[5:])
    value = line.find(b'": "') + 4 if b'": "' in line else 5  # inside a JSON string, if any
    yield "escaped_nul", at(line[:value] + b"\\u0000" + line[value:])  # JSON's NUL
    yield "escaped_surrogate", at(line[:value] + b"\\ud83d" + line[value:])  # half an emoji
    key = re.match(rb'\s*[\[,]?\s*\{\s*("[^"\\]+")\s*:', line)
    if key:  # a JSON object naming its first key again
        yield "duplicate_key", at(line.replace(b"{", b"{" + key.group(1) + b': "again", ', 1))
    yield "crlf", data.replace(b"\n", b"\r\n")
    yield "lone_cr", at(line[:5] + b"\r" + line[5:])
    yield "tabs_removed", at(line.replace(b"\t", b" "))
    yield "tabs_added", at(line + b"\t\t")
    yield "tab_doubled", at(line.replace(b"\t", b"\t\t", 1))  # every field after it shifted
    yield "only_tabs", at(b"\t\t\t")
    yield "long_line", at(line + b"x" * 300_000)
    yield "deep", at(b"[" * 100_000 + b"]" * 100_000)  # deeper than Python's JSON parser goes
    yield LATIN1_NAME, data  # the data unchanged, in a folder whose name is not UTF-8
    yield "bom", b"\xef\xbb\xbf" + data
    yield "separators", at(line[:5] + "\u2028\u0085".encode() + line[5:])
    yield "binary", bytes(rnd.randrange(256) for _ in range(2000))
    yield "no_final_newline", data.rstrip(b"\n")
    yield "twice", data + data
    yield "quote", at(b'"' + line)
    for k in range(4):
        changed = bytearray(data)
        for _ in range(5):
            if changed:
                changed[rnd.randrange(len(changed))] = rnd.randrange(256)
        yield f"random{k}", bytes(changed)


def ingest(group: str, spec: Callable[[dict[str, str]], dict]) -> Callable[[dict[str, str], Path], list[str]]:
    return lambda files, out: [group, "ingest", "--corpus", "c", "--out", str(out / "out"),
                               "--spec", json.dumps(spec(files))]


def replay(files: dict[str, str], out: Path) -> list[str]:
    return ["twitter", "harvest", "--date", "2026-11-03", "--out", str(out / "day.parquet"),
            "--archive", files["archive"], "--url-cache", str(out / "cache.json"),
            "--twitter-settings", json.dumps({"source": "archive", "raw_dir": str(out / "raw"),
                                              "state": str(out / "state.json")})]


def run(argv: list[str]) -> tuple[int | str, str]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    except BaseException:  # noqa: BLE001 - what this script looks for
        return "traceback", traceback.format_exc()
    return status, err.getvalue()


def scratch(prefix: str) -> Path:
    """A temporary folder for what the cases read besides the file under test, removed when
    the script ends."""
    where = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    return where


def identify_as(layout: str) -> Callable[[dict[str, str], Path], list[str]]:
    """The identifier trained on the file (twitter-url, pit2015) or its directory (toks)."""
    def command(files: dict[str, str], out: Path) -> list[str]:
        path = str(Path(files["a"]).parent) if layout == "toks" else files["path"]
        if layout == "toks":  # the input is the folder: the outputs go beside it, not into it
            out = out.with_name(f"{out.name}-out")
        settings = {"model": "lr", "train": [{"path": path, "format": layout}]}
        return ["twitter", "identify", "--embed-model", "", "--out", str(out / "paraid.pt"),
                "--report", str(out / "paraid.json"), "--settings", json.dumps(settings)]
    return command


def labelled_layouts() -> dict[str, Path]:
    """The sample's labelled tweets written as PIT-2015 (votes (n, 6-n) of six, as (pos,
    neg)) and as the tokenised a.toks/b.toks/sim.txt (debatable pairs left out): the sample
    has the Twitter URL layout only."""
    where = scratch("paramill-fuzz-labelled-")
    rows = [line.split("\t") for line in (SAMPLE / "tweets/labelled.tsv").read_text().splitlines()]
    votes = [int(r[2].strip("()").split(",")[0]) for r in rows]
    (where / "dev.data").write_text("".join(f"{k}\tT{k}\t{r[0]}\t{r[1]}\t({n}, {6 - n})\tx\ty\n"
                                            for k, (r, n) in enumerate(zip(rows, votes))))
    kept = [(r, n) for r, n in zip(rows, votes) if n != 3]
    (where / "a.toks").write_text("".join(f"{r[0]}\n" for r, _ in kept))
    (where / "b.toks").write_text("".join(f"{r[1]}\n" for r, _ in kept))
    (where / "sim.txt").write_text("".join(f"{int(n > 3)}\n" for _, n in kept))
    return {name: where / name for name in ("dev.data", "a.toks", "b.toks", "sim.txt")}


def embed(files: dict[str, str], out: Path) -> list[str]:
    return ["embed", "train", files["path"], "--out", str(out / "model.pt"),
            "--settings", json.dumps({"epochs": 1, "batch_size": 8, "megabatch": 1}),
            "--spec", json.dumps({"components": ["word"], "dim": 8})]  # SentencePiece units


_BUILT: dict[str, Path] = {}


def built(what: str) -> Path:
    """A tiny embedding model or lexicon from the sample's pairs (once a run), for the
    readers that need one beside the file under test."""
    if what not in _BUILT:
        where = scratch("paramill-fuzz-built-")
        tsv = where / "pairs.tsv"
        rows = [line.split("\t") for line in plain(SAMPLE / "pairs/grammar.paranmt.txt.gz")
                .decode().splitlines()]
        tsv.write_text("".join(f"{r[0]}\t{r[1]}\n" for r in rows[:400]))
        status, text = run(embed({"path": str(tsv)}, where))
        if status != 0:
            sys.exit(f"building the tiny embedding model failed: {text}")
        _BUILT["model"] = where / "model.pt"
        import pyarrow as pa
        import pyarrow.parquet as pq

        corpus = where / "corpus.parquet"
        pq.write_table(pa.table({"s1": [r[0] for r in rows], "s2": [r[1] for r in rows]}), corpus)
        status, text = run(["lexicon", "build", str(corpus), "--tsv", str(where / "lexicon.tsv"),
                            "--neighbours", str(where / "neighbours.tsv"), "--stats",
                            str(where / "stats.json"), "--settings", json.dumps({"min_count": 1, "min_parascore": None})])
        if status != 0:
            sys.exit(f"building the tiny lexicon failed: {text}")
        _BUILT["lexicon"] = where / "lexicon.tsv"
    return _BUILT[what]


def sts(layout: str) -> Callable[[dict[str, str], Path], list[str]]:
    def command(files: dict[str, str], out: Path) -> list[str]:
        return ["evaluate", "sts", "--model", str(built("model")), "--tsv", str(out / "sts.tsv"),
                "--json", str(out / "sts.json"), "--datasets",
                json.dumps([{"name": "s", "year": "x", "format": layout, "path": files["path"]}])]
    return command


def simlex(files: dict[str, str], out: Path) -> list[str]:
    return ["lexicon", "simlex", "--lexicon", str(built("lexicon")), "--simlex", files["path"],
            "--tsv", str(out / "simlex.tsv"), "--json", str(out / "simlex.json")]


def simlex_with(files: dict[str, str], out: Path) -> list[str]:
    return ["lexicon", "simlex", "--lexicon", files["lexicon"], "--simlex",
            str(SAMPLE / "simlex/simlex-sample.txt"), "--tsv", str(out / "simlex.tsv"),
            "--json", str(out / "simlex.json")]


def sample_jsonl() -> dict[str, Path]:
    """The sample's inputs as JSON Lines, as `datasets`' `to_json` writes them: the labelled
    tweets (question1, question2, is_duplicate; and sentence1, sentence2, label for the
    identifier), the Moses bitext inside `translation`, the STS sample (sentence1, sentence2,
    label): the sample holds no JSON Lines corpus of its own."""
    where = scratch("paramill-fuzz-jsonl-")
    rows = [line.split("\t") for line in (SAMPLE / "tweets/labelled.tsv").read_text().splitlines()]
    votes = [int(r[2].strip("()").split(",")[0]) for r in rows]
    dump = lambda objs: "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)  # noqa: E731
    (where / "qqp.jsonl").write_text(dump({"question1": r[0], "question2": r[1], "is_duplicate": int(n > 3)}
                                          for r, n in zip(rows, votes)))
    (where / "paws.jsonl").write_text(dump({"sentence1": r[0], "sentence2": r[1],
                                            "label": None if n == 3 else int(n > 3)}
                                           for r, n in zip(rows, votes)))
    cs, en = (plain(SAMPLE / f"bitext/grammar.{side}.gz").decode().splitlines() for side in ("cs", "en"))
    (where / "wmt.jsonl").write_text(dump({"translation": {"cs": a, "en": b}} for a, b in zip(cs, en)))
    sts_rows = [line.split("\t") for line in (SAMPLE / "sts/sts-sample.tsv").read_text().splitlines()]
    (where / "stsb.jsonl").write_text(dump({"sentence1": r[1], "sentence2": r[2], "label": float(r[0])}
                                           for r in sts_rows if len(r) == 3))
    return {name: where / f"{name}.jsonl" for name in ("qqp", "paws", "wmt", "stsb")}


def sample_json_arrays() -> dict[str, Path]:
    """The JSON Lines sets above as whole-file arrays: pandas' `to_json(orient="records")`
    writes the array on one line (qqp, wmt), `json.dump(indent=2)` over many (paws, stsb)."""
    where = scratch("paramill-fuzz-json-")
    for name, path in JSONL.items():
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        (where / f"{name}.json").write_text(json.dumps(rows, ensure_ascii=False,
                                                       indent=2 if name in ("paws", "stsb") else None))
    return {name: where / f"{name}.json" for name in JSONL}


def sample_parquet(prefixed: bool = False) -> Path:
    """The sample's ParaNMT pairs as Parquet (s1, s2, parascore), for the Parquet readers:
    the sample holds no Parquet file of its own. ``prefixed``: the text written
    ``DELTA_BYTE_ARRAY`` in version 2 pages of 2 KB, whose headers the guarded read looks
    into (a mutated header is then read by paramill before Arrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = scratch("paramill-fuzz-parquet-") / "pairs.parquet"
    layout = ({"use_dictionary": False, "column_encoding": {"s1": "DELTA_BYTE_ARRAY", "s2": "DELTA_BYTE_ARRAY"},
               "data_page_version": "2.0", "data_page_size": 2048} if prefixed else {})
    rows = []
    for line in plain(SAMPLE / "pairs/grammar.paranmt.txt.gz").decode().splitlines():
        fields = line.split("\t")
        with contextlib.suppress(IndexError, ValueError):  # the sample's own bad rows
            rows.append((fields[0], fields[1], float(fields[2])))
    rows = rows[:300]
    pq.write_table(pa.table({"s1": [r[0] for r in rows], "s2": [r[1] for r in rows],
                             "parascore": [r[2] for r in rows]}), path, row_group_size=100, **layout)
    return path


def sample_hub_parquet() -> dict[str, Path]:
    """The sample's bitext, STS set and labelled tweets as the Hub's Parquet exports hold
    such sets: WMT's `translation` struct of cs and en; sentence1, sentence2, label."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = scratch("paramill-fuzz-hub-")
    cs, en = (plain(SAMPLE / f"bitext/grammar.{side}.gz").decode().splitlines() for side in ("cs", "en"))
    pq.write_table(pa.table({"translation": [{"cs": a, "en": b} for a, b in zip(cs, en)]}),
                   where / "wmt.parquet", row_group_size=100)
    sts_rows = [r for r in (line.split("\t") for line in (SAMPLE / "sts/sts-sample.tsv").read_text().splitlines())
                if len(r) == 3]
    pq.write_table(pa.table({"sentence1": [r[1] for r in sts_rows], "sentence2": [r[2] for r in sts_rows],
                             "label": [float(r[0]) for r in sts_rows]}), where / "stsb.parquet")
    rows = [line.split("\t") for line in (SAMPLE / "tweets/labelled.tsv").read_text().splitlines()]
    votes = [int(r[2].strip("()").split(",")[0]) for r in rows]
    pq.write_table(pa.table({"sentence1": [r[0] for r in rows], "sentence2": [r[1] for r in rows],
                             "label": pa.array([None if n == 3 else int(n > 3) for n in votes], pa.int64())}),
                   where / "paws.parquet")
    return {name: where / f"{name}.parquet" for name in ("wmt", "stsb", "paws")}


def sample_csv() -> dict[str, Path]:
    """The sample's labelled tweets as Kaggle's Quora Question Pairs CSV (every field quoted),
    its bitext with `;` between fields, its STS set with `datasets`' names."""
    import csv

    where = scratch("paramill-fuzz-csv-")
    rows = [line.split("\t") for line in (SAMPLE / "tweets/labelled.tsv").read_text().splitlines()]
    votes = [int(r[2].strip("()").split(",")[0]) for r in rows]
    with open(where / "qqp.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, quoting=csv.QUOTE_ALL)
        out.writerow(["id", "question1", "question2", "is_duplicate"])
        out.writerows([k, r[0], r[1], int(n > 3)] for k, (r, n) in enumerate(zip(rows, votes)))
    with open(where / "paws.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["sentence1", "sentence2", "label"])
        out.writerows([r[0], r[1], "" if n == 3 else int(n > 3)] for r, n in zip(rows, votes))
    cs, en = (plain(SAMPLE / f"bitext/grammar.{side}.gz").decode().splitlines() for side in ("cs", "en"))
    with open(where / "wmt.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, delimiter=";")
        out.writerow(["cs", "en"])
        out.writerows(zip(cs, en))
    sts_rows = [r for r in (line.split("\t") for line in (SAMPLE / "sts/sts-sample.tsv").read_text().splitlines())
                if len(r) == 3]
    with open(where / "stsb.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["sentence1", "sentence2", "score"])
        out.writerows([r[1], r[2], r[0]] for r in sts_rows)
    return {name: where / f"{name}.csv" for name in ("qqp", "paws", "wmt", "stsb")}


def lexicon(files: dict[str, str], out: Path) -> list[str]:
    return ["lexicon", "build", files["path"], "--tsv", str(out / "lexicon.tsv"), "--neighbours",
            str(out / "neighbours.tsv"), "--stats", str(out / "stats.json"),
            "--settings", json.dumps({"min_count": 1})]


def sts_with(files: dict[str, str], out: Path) -> list[str]:
    return ["evaluate", "sts", "--model", files["model"], "--tsv", str(out / "sts.tsv"),
            "--json", str(out / "sts.json"), "--datasets",
            json.dumps([{"name": "s", "year": "x", "format": "tsv",
                         "path": str(SAMPLE / "sts/sts-sample.tsv")}])]


PARQUET = sample_parquet()
PREFIXED = sample_parquet(prefixed=True)
HUB = sample_hub_parquet()
CSV = sample_csv()
LABELLED = labelled_layouts()
JSONL = sample_jsonl()
JSON = sample_json_arrays()

#: name: (the files, by role, and the command line reading them)
CASES = {
    "moses": ({"cs": SAMPLE / "bitext/grammar.cs.gz", "en": SAMPLE / "bitext/grammar.en.gz"},
              ingest("bitext", lambda f: {"format": "moses", "cs": f["cs"], "en": f["en"]})),
    "czeng1": ({"path": SAMPLE / "bitext/grammar-b.czeng.tsv.xz"},
               ingest("bitext", lambda f: {"format": "czeng1", "path": f["path"]})),
    "paranmt": ({"path": SAMPLE / "pairs/grammar.paranmt.txt.gz"},
                ingest("pairs", lambda f: {"format": "paranmt", "path": f["path"]})),
    "references": ({"reference": SAMPLE / "pairs/refs.en", "hypothesis": SAMPLE / "pairs/hyp.system-a.en"},
                   ingest("pairs", lambda f: {"format": "references", "reference": f["reference"],
                                              "hypotheses": {"a": f["hypothesis"]}})),
    "twitter-url": ({"path": SAMPLE / "tweets/labelled.tsv"},
                    ingest("pairs", lambda f: {"format": "twitter-url", "path": f["path"]})),
    "tsv": ({"path": SAMPLE / "tweets/labelled.tsv"},  # four columns read as two: none readable
            ingest("pairs", lambda f: {"format": "tsv", "path": f["path"]})),
    "archive": ({"archive": SAMPLE / "tweets/tweets.jsonl.gz"}, replay),
    "labelled": ({"path": SAMPLE / "tweets/labelled.tsv"}, identify_as("twitter-url")),
    "labelled-pit2015": ({"path": LABELLED["dev.data"]}, identify_as("pit2015")),
    "labelled-toks": ({role: LABELLED[f"{role}.toks" if role in "ab" else "sim.txt"]
                       for role in ("a", "b", "sim")}, identify_as("toks")),
    "embed-tsv": ({"path": SAMPLE / "pairs/grammar.paranmt.txt.gz"}, embed),  # s1, s2, score
    "sts-tsv": ({"path": SAMPLE / "sts/sts-sample.tsv"}, sts("tsv")),
    "sts-benchmark": ({"path": SAMPLE / "sts/sts-dev.csv"}, sts("stsbenchmark")),
    "simlex": ({"path": SAMPLE / "simlex/simlex-sample.txt"}, simlex),
    "parquet-pairs": ({"path": PARQUET}, ingest("pairs", lambda f: {"format": "parquet", "path": f["path"]})),
    "parquet-embed": ({"path": PARQUET}, embed),
    "parquet-lexicon": ({"path": PARQUET}, lexicon),
    "parquet-prefixed": ({"path": PREFIXED}, ingest("pairs", lambda f: {"format": "parquet", "path": f["path"]})),
    "model": ({"model": built("model")}, sts_with),  # a torch file, as evaluate sts reads it
    "lexicon-tsv": ({"lexicon": built("lexicon")}, simlex_with),  # lexicon build's table
    "jsonl-pairs": ({"path": JSONL["qqp"]}, ingest("pairs", lambda f: {
        "format": "jsonl", "path": f["path"],
        "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}})),
    "jsonl-bitext": ({"path": JSONL["wmt"]}, ingest("bitext", lambda f: {
        "format": "jsonl", "path": f["path"], "fields": {"cs": "translation.cs", "en": "translation.en"}})),
    "labelled-jsonl": ({"path": JSONL["paws"]}, identify_as("jsonl")),
    "sts-jsonl": ({"path": JSONL["stsb"]}, sts("jsonl")),
    "parquet-bitext": ({"path": HUB["wmt"]}, ingest("bitext", lambda f: {
        "format": "parquet", "path": f["path"], "fields": {"cs": "translation.cs", "en": "translation.en"}})),
    "labelled-parquet": ({"path": HUB["paws"]}, identify_as("parquet")),
    "sts-parquet": ({"path": HUB["stsb"]}, sts("parquet")),
    "csv-pairs": ({"path": CSV["qqp"]}, ingest("pairs", lambda f: {
        "format": "csv", "path": f["path"], "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}})),
    "csv-bitext": ({"path": CSV["wmt"]}, ingest("bitext", lambda f: {"format": "csv", "path": f["path"], "delimiter": ";"})),
    "labelled-csv": ({"path": CSV["paws"]}, identify_as("csv")),
    "sts-csv": ({"path": CSV["stsb"]}, sts("csv")),
    "json-pairs": ({"path": JSON["qqp"]}, ingest("pairs", lambda f: {
        "format": "json", "path": f["path"],
        "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}})),
    "json-bitext": ({"path": JSON["wmt"]}, ingest("bitext", lambda f: {
        "format": "json", "path": f["path"], "fields": {"cs": "translation.cs", "en": "translation.en"}})),
    "labelled-json": ({"path": JSON["paws"]}, identify_as("json")),
    "sts-json": ({"path": JSON["stsb"]}, sts("json")),
    "sts-senteval": ({"path": SAMPLE / "sts/STS.input.grammar.txt",
                      "gold": SAMPLE / "sts/STS.gs.grammar.txt"}, sts("senteval")),
}
#: files a layout finds beside another by name (senteval's STS.gs.* beside STS.input.*,
#: the tokenised layout's three files in one directory)
SIDE_BY_SIDE = {"STS.input.grammar.txt", "STS.gs.grammar.txt", "a.toks", "b.toks", "sim.txt"}


def main() -> int:
    wanted = sys.argv[1:] or list(CASES)
    unknown = set(wanted) - set(CASES)
    if unknown:
        print(f"unknown case(s) {sorted(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    rnd, failed = random.Random(1), 0
    with tempfile.TemporaryDirectory(prefix="paramill-fuzz-") as tmp:
        for name in wanted:
            sources, command = CASES[name]
            for role, source in sources.items():
                for mutation, data in mutations(plain(source), rnd):
                    folder = f"{name}-{role}-{mutation}".encode() + b"\xe9" * (mutation == LATIN1_NAME)
                    where = Path(tmp) / os.fsdecode(folder)
                    where.mkdir()
                    files = {}
                    for other, path in sources.items():
                        base = path.name.removesuffix('.gz').removesuffix('.xz')
                        # a layout that finds one file beside another by its name keeps the names
                        target = where / (base if base in SIDE_BY_SIDE else f"{other}-{base}")
                        target.write_bytes(data if other == role else plain(path))
                        files[other] = str(target)
                    status, text = run(command(files, where))
                    last = text.strip().splitlines()[-1] if text.strip() else ""
                    good = status == 0 or (status == 2 and Path(files[role]).name in last) or (
                        status == 2 and mutation == LATIN1_NAME and "its name is not UTF-8" in last)
                    failed += not good
                    print(f"{'ok ' if good else 'BAD'} {name:11} {role:10} {mutation:16} "
                          f"exit {status}: {last[:160]}")
                    if status == "traceback":
                        print(text, file=sys.stderr)
    print(f"{failed} case(s) failed", file=sys.stderr)
    return int(failed > 0)


if __name__ == "__main__":
    sys.exit(main())
