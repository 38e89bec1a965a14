"""The shell examples and config files the README and the manual show, and small corpora of
one's own for them: a thousand-line Moses bitext, a reference with two MT systems' outputs of
a thousand lines, a thousand tweets. A config the text introduces as (`NAME.yaml`) is written
under that name, its `/data/...` paths pointing at these corpora under `owndata/`."""

from __future__ import annotations

import gzip
import json
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import REPO

#: where the examples' /data/... paths point, in a test's project
OWN = "owndata"
#: pages whose examples are checked: the README and every page of the manual
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def named_configs(text: str) -> dict[str, str]:
    """The YAML blocks a page introduces as a file, ``(`mine.yaml`):``, by name, their
    ``/data/`` paths pointed at :data:`OWN`."""
    return {name: body.replace("/data/", f"{OWN}/")
            for name, body in re.findall(r"\(`([\w-]+\.yaml)`\):\s*```yaml\n(.*?)```", text, re.S)}


def commands(text: str) -> list[tuple[str, list[str]]]:
    """Every command line of the page's ``sh`` blocks, with its words."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                found.append((line.strip(), words))
    return found


def run(project: Path, words: list[str], dry: bool) -> subprocess.CompletedProcess:
    """A page's command line in ``project``, from the venv beside this Python; a snakemake
    command with ``dry`` only plans (the config and the DAG, not a rebuild)."""
    import os

    bindir = Path(sys.executable).parent
    cmd = [str(bindir / words[0].removeprefix(".venv/bin/")), *words[1:]]
    if dry and words[0].endswith("snakemake") and "-n" not in words:
        cmd.append("-n")
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                               "PARAMILL_PROGRESS": "0"})


def own_corpora(project: Path, lines: int = 1000) -> Path:
    """The files the examples' configs name, under ``project/owndata``: a Moses bitext and a
    CzEng export from the sample's grammar with another seed, a reference and two systems'
    outputs, STS-B-layout dev pairs, a tweet archive of about ``lines`` tweets, labelled pairs."""
    own = project / OWN
    made = own / "made"
    python = sys.executable
    subprocess.run([python, str(REPO / "scripts/make-sample-bitext.py"), "--out", str(made / "bitext"),
                    "--seed", "101", "--moses-pairs", str(lines), "--czeng-pairs", str(lines // 4)],
                   check=True, capture_output=True)
    subprocess.run([python, str(REPO / "scripts/make-sample-pairs.py"), "--out", str(made / "pairs"),
                    "--seed", "103", "--pairs", "100", "--references", str(lines)],
                   check=True, capture_output=True)
    for src, dest in [("bitext/grammar.cs.gz", "europarl/ep.cs.xz"),
                      ("bitext/grammar.en.gz", "europarl/ep.en.xz"),
                      ("bitext/grammar-b.czeng.tsv.xz", "czeng16/part-01.gz"),
                      ("pairs/refs.en", "wmt21/newstest2021.en")]:
        (own / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(made / src, own / dest)
    for hyp in sorted((made / "pairs").glob("hyp.*.en")):
        shutil.copy(hyp, own / "wmt21" / hyp.name)
    (own / "stsbenchmark").mkdir()
    shutil.copy(REPO / "data/sample/sts/sts-dev.csv", own / "stsbenchmark/sts-dev.csv")
    (own / "twitter-url").mkdir()
    shutil.copy(REPO / "data/sample/tweets/labelled.tsv", own / "twitter-url/train.txt")
    (own / "tweets").mkdir()
    write_tweets(own / "tweets/2026-10.jsonl.gz", lines)
    return own


#: stories a news account posts and readers rephrase: (headline, rephrasings); {c} a city
STORIES = [
    ("Storm closes schools across {c} as heavy snow keeps falling",
     ["Schools in {c} are shut today because the heavy snow will not stop",
      "Heavy snowfall in {c} has forced every school to close its doors today",
      "All {c} schools closed while the snowstorm keeps dumping snow on the city"]),
    ("Council in {c} approves a new budget for public transport next year",
     ["The {c} council has voted through next year's public transport budget",
      "Next year's money for buses and trams in {c} was approved by the council",
      "{c} councillors agreed the public transport budget for the coming year"]),
    ("Firefighters in {c} rescue a family of four from a burning house overnight",
     ["A family of four was saved from a house fire in {c} by firefighters last night",
      "{c} firefighters pulled four people out of a burning home during the night",
      "Overnight fire in {c}: crews rescued all four members of a family"]),
    ("Local hospital in {c} opens a new children's ward after two years of work",
     ["The new children's ward at the {c} hospital is open after two years of building",
      "After two years of construction {c} hospital has opened its ward for children",
      "Kids in {c} now have a brand new hospital ward, opened this morning"]),
]
CITIES = ["Springfield", "Riverton", "Lakeside", "Hillview", "Brookfield", "Fairmont", "Oakdale",
          "Maplewood", "Cedar Falls", "Westbury", "Northgate", "Easton", "Southport"]


def write_tweets(path: Path, count: int) -> None:
    """About ``count`` tweets as v1.1 objects, one a line: news accounts' headlines with a
    link, readers' rephrasings sharing it, retweets and unrelated comments, over two days."""
    rng = random.Random(7)
    news, readers = ["nytimes", "bbcworld"], [f"reader{i:03d}" for i in range(120)]
    user_ids = {name: 50_000 + i for i, name in enumerate(news + readers)}
    ids = iter(range(1_900_000_000_000_000_000, 2_000_000_000_000_000_000, 7919))
    tweets = []

    def tweet(user: str, text: str, day: str, minute: int, url: str) -> dict:
        return {"id_str": str(next(ids)), "full_text": f"{text} {url}", "lang": "en",
                "created_at": f"{'Mon' if day.endswith('05') else 'Tue'} Oct "
                              f"{day[-2:]} {8 + minute // 60:02d}:{minute % 60:02d}:00 +0000 2026",
                "user": {"id_str": str(user_ids[user]), "screen_name": user},
                "entities": {"urls": [{"url": "https://t.co/x", "expanded_url": url}]}}

    story = 0
    while len(tweets) < count:
        day = "2026-10-05" if story % 2 == 0 else "2026-10-06"
        headline, rephrasings = STORIES[story % len(STORIES)]
        city = CITIES[story % len(CITIES)]
        url = f"https://news.example.org/{day.replace('-', '/')}/story-{story}"
        minute = story % 600
        tweets.append(tweet(news[story % 2], headline.format(c=city), day, minute, url))
        for k, text in enumerate(rephrasings):
            tweets.append(tweet(rng.choice(readers), text.format(c=city), day, minute + k + 1, url))
        tweets.append(tweet(rng.choice(readers), f"so sad about this, stay safe {city}", day,
                            minute + 5, url))
        story += 1
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(t, sort_keys=True) + "\n" for t in tweets[:count])
