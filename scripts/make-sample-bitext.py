#!/usr/bin/env python3
"""Generate paramill's sample Czech-English bitext from a small bilingual phrase grammar.

The grammar pairs Czech phrases with one or more English renderings (synonyms such as
"buys" / "is buying" / "purchases", "in town" / "in the city") and lets adverbials move
(time first or last). A Czech sentence therefore has several correct English
translations: the reference is one of them, and a model trained on the corpus that
translates the Czech back produces another -- a real paraphrase of the reference.

Deliberately dirty lines are mixed in so cleaning has work to do: exact duplicates,
duplicates that only appear after punctuation normalisation, empty sides, mismatched
lengths, text outside latin-1/latin-2, identical sides, over-long pairs, and (in the
CzEng-format file) wrong column counts, invalid UTF-8 and a line over 64 KiB.

Everything is seeded: the same command writes the same bytes.

    python scripts/make-sample-bitext.py --out data/sample/bitext --seed 13
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import random
from pathlib import Path

# --- the grammar ------------------------------------------------------------------
# subjects: Czech nominative -> English renderings
SUBJECTS = {
    "muž": ["the man"],
    "žena": ["the woman", "the lady"],
    "učitel": ["the teacher"],
    "lékař": ["the doctor", "the physician"],
    "student": ["the student"],
    "můj bratr": ["my brother"],
    "moje sestra": ["my sister"],
    "náš soused": ["our neighbour", "our neighbor"],
    "starý pán": ["the old man", "the old gentleman"],
    "malá dívka": ["the little girl", "the small girl"],
    "řidič": ["the driver"],
    "kuchař": ["the cook", "the chef"],
    "ten chlapec": ["that boy", "the boy"],
    "naše babička": ["our grandmother", "our grandma"],
}

# verbs: Czech (affirmative, negative) -> English (base, 3sg, -ing) synonyms, progressive ok?,
# and the objects (Czech accusative -> English renderings) that go with the verb
VERBS = [
    (("čte", "nečte"), [("read", "reads", "reading")], True,
     {"knihu": ["a book"], "noviny": ["the newspaper", "the paper"], "dopis": ["a letter"],
      "časopis": ["a magazine"], "zprávu": ["the report", "the message"]}),
    (("kupuje", "nekupuje"), [("buy", "buys", "buying"), ("purchase", "purchases", "purchasing")], True,
     {"chléb": ["bread"], "nové auto": ["a new car"], "lístek": ["a ticket"],
      "dárek": ["a present", "a gift"], "kávu": ["coffee"], "boty": ["shoes"]}),
    (("hledá", "nehledá"), [("look for", "looks for", "looking for"),
                            ("search for", "searches for", "searching for")], True,
     {"klíče": ["the keys"], "psa": ["the dog"], "práci": ["a job", "work"], "mapu": ["a map"],
      "telefon": ["the phone", "the telephone"]}),
    (("potřebuje", "nepotřebuje"), [("need", "needs", None), ("require", "requires", None)], False,
     {"pomoc": ["help", "assistance"], "peníze": ["money"], "nový počítač": ["a new computer"],
      "lékaře": ["a doctor"], "odpočinek": ["rest"]}),
    (("opravuje", "neopravuje"), [("repair", "repairs", "repairing"), ("fix", "fixes", "fixing")], True,
     {"kolo": ["the bike", "the bicycle"], "starý dům": ["the old house"], "auto": ["the car"],
      "střechu": ["the roof"], "hodiny": ["the clock"]}),
    (("píše", "nepíše"), [("write", "writes", "writing")], True,
     {"dopis": ["a letter"], "článek": ["an article"], "knihu": ["a book"],
      "e-mail": ["an email", "an e-mail"]}),
    (("vidí", "nevidí"), [("see", "sees", None)], False,
     {"psa": ["a dog"], "velký dům": ["a big house", "a large house"], "vlak": ["the train"],
      "řeku": ["the river"], "ptáka": ["a bird"]}),
    (("vaří", "nevaří"), [("cook", "cooks", "cooking"), ("make", "makes", "making")], True,
     {"polévku": ["soup", "a soup"], "večeři": ["dinner"], "oběd": ["lunch"], "kávu": ["coffee"]}),
    (("miluje", "nemiluje"), [("love", "loves", None)], False,
     {"hudbu": ["music"], "zahradu": ["the garden"], "moře": ["the sea"], "čokoládu": ["chocolate"]}),
    (("prodává", "neprodává"), [("sell", "sells", "selling")], True,
     {"staré auto": ["an old car"], "ovoce": ["fruit"], "knihy": ["books"], "lístky": ["tickets"]}),
    (("uklízí", "neuklízí"), [("clean", "cleans", "cleaning"), ("tidy", "tidies", "tidying")], True,
     {"kuchyni": ["the kitchen"], "pokoj": ["the room"], "byt": ["the flat", "the apartment"]}),
]

TIME = {
    "dnes": ["today"], "ráno": ["in the morning", "this morning"],
    "večer": ["in the evening", "tonight"], "každý den": ["every day", "each day", "daily"],
    "v sobotu": ["on Saturday"], "o víkendu": ["at the weekend", "on the weekend"],
    "teď": ["now", "right now"],
}
PLACE = {
    "doma": ["at home"], "v parku": ["in the park"], "ve městě": ["in town", "in the city"],
    "na trhu": ["at the market"], "v obchodě": ["in the shop", "in the store"],
    "na zahradě": ["in the garden"], "v práci": ["at work"],
}
MANNER = {"rychle": ["quickly", "fast"], "pomalu": ["slowly"], "znovu": ["again", "once more"],
          "opatrně": ["carefully"]}
THINK = {"myslím, že": ["I think", "I think that", "I believe that"],
         "říká, že": ["he says that", "she says that"]}


def cap(s: str) -> str:
    return s[0].upper() + s[1:]


def clause(rng: random.Random) -> tuple[str, str, bool]:
    """One clause: (Czech, English, is_question). No final punctuation, lower case."""
    subj_cs = rng.choice(list(SUBJECTS))
    subj_en = rng.choice(SUBJECTS[subj_cs])
    (aff, neg), en_forms, progressive, objects = rng.choice(VERBS)
    obj_cs = rng.choice(list(objects))
    obj_en = rng.choice(objects[obj_cs])
    base, s3, ing = rng.choice(en_forms)
    kind = rng.random()
    question = kind < 0.08
    negative = 0.08 <= kind < 0.28
    time = rng.choice(list(TIME)) if rng.random() < 0.45 else None
    place = rng.choice(list(PLACE)) if rng.random() < 0.35 else None
    manner = rng.choice(list(MANNER)) if rng.random() < 0.15 else None
    use_prog = progressive and ing and rng.random() < 0.4

    if question:
        verb_cs = aff
        cs_parts = [verb_cs, subj_cs, obj_cs] + [x for x in (place, time) if x]
        if use_prog:
            en_core = f"is {subj_en} {ing} {obj_en}"
        else:
            en_core = f"does {subj_en} {base} {obj_en}"
        tail = [rng.choice(d[x]) for d, x in ((PLACE, place), (TIME, time)) if x]
        return " ".join(cs_parts), " ".join([en_core, *tail]), True

    verb_cs = neg if negative else aff
    if negative:
        options = [f"does not {base}", f"doesn't {base}"]
        if use_prog:
            options = [f"is not {ing}", f"isn't {ing}"]
        verb_en = rng.choice(options)
    else:
        verb_en = f"is {ing}" if use_prog else s3
    # Czech: time may lead, follow the subject, or close the clause
    core_cs = [subj_cs, verb_cs, obj_cs]
    if manner:
        core_cs.insert(1, manner) if rng.random() < 0.5 else core_cs.append(manner)
    if place:
        core_cs.append(place)
    if time:
        where = rng.choice(["front", "after_subject", "end"])
        if where == "front":
            core_cs.insert(0, time)
        elif where == "after_subject":
            core_cs.insert(1, time)
        else:
            core_cs.append(time)
    # English: time leads or closes, manner after the object, place after the object
    core_en = [subj_en, verb_en, obj_en]
    if manner:
        core_en.append(rng.choice(MANNER[manner]))
    if place:
        core_en.append(rng.choice(PLACE[place]))
    if time:
        t = rng.choice(TIME[time])
        if rng.random() < 0.5 and t not in ("daily", "right now"):
            core_en.insert(0, t + ",") if rng.random() < 0.3 else core_en.insert(0, t)
        else:
            core_en.append(t)
    return " ".join(core_cs), " ".join(core_en), False


def sentence(rng: random.Random) -> tuple[str, str]:
    r = rng.random()
    cs, en, q = clause(rng)
    if r < 0.12 and not q:
        cs2, en2, q2 = clause(rng)
        if not q2:
            cs, en = f"{cs} a {cs2}", f"{en} and {en2}"
    elif r < 0.2 and not q:
        lead = rng.choice(list(THINK))
        cs = f"{lead} {cs}"
        en = f"{rng.choice(THINK[lead])} {en}"
    end = "?" if q else "."
    return cap(cs) + end, cap(en) + end


def fancy(cs: str, en: str, rng: random.Random) -> tuple[str, str]:
    """The same pair dressed in Unicode punctuation that normalisation maps back."""
    en = en.replace("n't", "n\u2019t")
    if rng.random() < 0.5:
        cs = cs.replace(" a ", " \u2013 a ", 1) if " a " in cs else cs
        en = en.replace(" and ", " \u2013 and ", 1) if " and " in en else en
    if rng.random() < 0.5:
        cs = f"\u201e{cs[:-1]}\u201c{cs[-1]}"
        en = f"\u201c{en[:-1]}\u201d{en[-1]}"
    if rng.random() < 0.4:
        cs = cs.replace(" ", "\u00a0", 1)
        en = en.replace(" ", "  ", 1)
    if rng.random() < 0.3 and cs.endswith("."):
        cs, en = cs[:-1] + "\u2026", en[:-1] + "\u2026"
    return cs, en


def unique_pairs(rng: random.Random, n: int, seen: set[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    while len(out) < n:
        pair = sentence(rng)
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


def dirty_moses(rng: random.Random, clean: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Dirty pairs for the Moses corpus (each side one line)."""
    dirty: list[tuple[str, str]] = []
    dirty += rng.sample(clean, 40)  # exact duplicates
    dirty += [fancy(*p, rng) for p in rng.sample(clean, 30)]  # duplicates after normalisation
    dirty += [fancy(*p, rng) for p in unique_pairs(rng, 40, set(clean))]  # fancy but new
    dirty += [("", p[1]) for p in rng.sample(clean, 12)]  # empty Czech
    dirty += [(p[0], "   ") for p in rng.sample(clean, 12)]  # empty English (white space)
    for _ in range(15):  # mismatched lengths: one Czech sentence, four English ones
        cs, _ = sentence(rng)
        dirty.append((cs, " ".join(sentence(rng)[1] for _ in range(5))))
    for cs, en in rng.sample(clean, 10):  # Czech side outside latin-2
        dirty.append((cs[:-1] + " \U0001F600" + cs[-1], en))
    dirty += [("Мужчина читает книгу.", "The man reads a book."),
              ("Женщина покупает хлеб.", "The woman buys bread."),
              ("男人在读书。", "The man is reading a book.")]
    for cs, en in rng.sample(clean, 8):  # English side outside latin-1
        dirty.append((cs, en[:-1] + " for 20 \u20ac" + en[-1]))
    dirty += [("Dvořák píše dopis.", "Dvořák writes a letter."),
              ("Paní Nováková čte noviny.", "Mrs Nováková is reading the newspaper.")]
    for _, en in rng.sample(clean, 10):  # untranslated: identical sides
        dirty.append((en, en))
    for _ in range(4):  # over-long pairs (more than 100 tokens a side)
        parts = [sentence(rng) for _ in range(16)]
        dirty.append((" ".join(p[0] for p in parts), " ".join(p[1] for p in parts)))
    return dirty


def write_gzip(path: Path, lines: list[str]) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write("".join(line + "\n" for line in lines).encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/sample/bitext", help="output directory")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--moses-pairs", type=int, default=2600, help="clean pairs, Moses corpus")
    parser.add_argument("--czeng-pairs", type=int, default=1000, help="clean pairs, CzEng corpus")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    seen: set[tuple[str, str]] = set()
    moses_clean = unique_pairs(rng, args.moses_pairs, seen)
    moses = moses_clean + dirty_moses(rng, moses_clean)
    rng.shuffle(moses)
    write_gzip(out / "grammar.cs.gz", [cs for cs, _ in moses])
    write_gzip(out / "grammar.en.gz", [en for _, en in moses])

    czeng_clean = unique_pairs(rng, args.czeng_pairs, seen)
    rows = [f"{cs}\t{en}" for cs, en in czeng_clean]
    rows += [f"{cs}\t{en}" for cs, en in rng.sample(moses_clean, 25)]  # in the earlier corpus
    rows += [f"{cs}\t{en}" for cs, en in rng.sample(czeng_clean, 15)]  # within this corpus
    rng.shuffle(rows)
    lines: list[bytes] = []
    for i, row in enumerate(rows):
        score = f"{0.5 + rng.random() / 2:.4f}"
        lines.append(f"sample-b-{i:06d}\t{score}\t{row}".encode())
    bad = [
        b"sample-b-bad1\t0.9000\tChyb\xc4\x9bj\xc3\xadc\xc3\xad sloupec",  # 3 columns
        b"sample-b-bad2\t0.9000\tMu\xc5\xbe \xc4\x8dte knihu.\tThe man reads a book.\textra",
        b"sample-b-bad3\tMu\xc5\xbe \xc4\x8dte.",
        b"sample-b-bad4\t0.9100\tMu\xff\xfe \xc4\x8dte knihu.\tThe man reads a book.",  # bad UTF-8
        b"sample-b-bad5\t0.9100\t\xc3\x28 vid\xc3\xad psa.\tThe driver sees a dog.",
        b"sample-b-bad6\t0.9200\t" + b"Dlouh\xc3\xbd " * 14000 + b"\tA long line.",  # > 64 KiB
    ]
    for line in bad:
        lines.insert(rng.randrange(len(lines)), line)
    data = b"".join(line + b"\n" for line in lines)
    (out / "grammar-b.czeng.tsv.xz").write_bytes(lzma.compress(data, preset=6))
    print(f"wrote {len(moses)} Moses pairs and {len(lines)} CzEng lines to {out}")


if __name__ == "__main__":
    main()
