#!/usr/bin/env python3
"""Write the sample tweets (data/sample/tweets/): news-style headlines by three made-up
news accounts, rephrasings by other users sharing the same URLs, automatic and manual
retweets, page-title copies, a post edited after a typo (both versions, as a search finds
them) and noise, as v2 pages and v1.1 objects in one JSONL file; and a small labelled set in
the Twitter URL corpus raw format. Seeded; written for this project (no real tweets).

    python scripts/make-sample-tweets.py
"""

from __future__ import annotations

import datetime
import gzip
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "sample" / "tweets"
NEWS = ["paramill_news", "sample_daily", "example_times"]
USERS = [f"reader{i:02d}" for i in range(40)]
DATES = ["2026-10-05", "2026-10-06", "2026-10-20", "2026-11-02", "2026-11-03"]
CITIES = ["Springfield", "Riverton", "Lakeside", "Hillview", "Brookfield", "Fairmont"]

# (headline, rephrasings, unrelated comment); {c} is a city, {n} a number
STORIES = [
    ("Flooding forces {n} families to leave their homes in {c} after heavy overnight rain",
     ["Heavy rain overnight in {c} has driven {n} families out of their homes because of floods",
      "{n} families in {c} had to evacuate their houses as floodwater rose after a night of rain",
      "Floods after the overnight downpour made {n} families in {c} abandon their homes"],
     "my basement is always dry no matter what the weather does honestly"),
    ("City council in {c} approves a new budget with {n} million for public schools",
     ["The {c} city council has passed a budget that gives public schools {n} million",
      "{c} council votes yes on a new budget including {n} million for its public schools",
      "Public schools in {c} will get {n} million under the budget the council just approved"],
     "council meetings are the most boring thing to watch on a friday night"),
    ("Scientists discover a new species of frog in the forests near {c}",
     ["A new kind of frog has been found by scientists in the woods outside {c}",
      "Researchers have identified a previously unknown frog species in forests close to {c}",
      "Near {c} scientists came across a frog species nobody had described before"],
     "frogs are loud at night and i cannot sleep with the window open"),
    ("Local hospital in {c} opens a children's ward with {n} new beds",
     ["The hospital in {c} has opened a new ward for children with {n} beds",
      "{n} new beds for young patients as the {c} hospital opens its children's ward",
      "A children's ward with {n} beds opened today at the local hospital in {c}"],
     "hospital food has never been good anywhere i have ever been to"),
    ("Train services between {c} and the capital are suspended after a signal failure",
     ["A signal failure has stopped trains running between {c} and the capital",
      "Rail services linking {c} with the capital are halted because of a signalling fault",
      "No trains between {c} and the capital today after the signals failed"],
     "i drive everywhere anyway so trains never matter much to me at all"),
    ("Police in {c} arrest {n} people after a string of bicycle thefts",
     ["{n} people have been arrested by {c} police following a series of bike thefts",
      "After several bicycles were stolen police in {c} detained {n} suspects",
      "{c} police make {n} arrests over a wave of stolen bicycles in the city"],
     "just bought a new lock for my bike and it weighs more than the bike"),
    ("Heat wave pushes temperatures in {c} above {n} degrees for the third day",
     ["Temperatures in {c} climbed past {n} degrees for a third straight day of the heat wave",
      "For the third day running the heat wave kept {c} above {n} degrees",
      "{c} sweltered above {n} degrees again as the heat wave entered its third day"],
     "ice cream for dinner is a perfectly reasonable choice in any weather"),
    ("The central bank raises interest rates by {n} basis points to fight inflation",
     ["Interest rates go up by {n} basis points as the central bank tries to curb inflation",
      "To tackle inflation the central bank lifted rates by {n} basis points",
      "The central bank has increased its interest rate by {n} basis points against rising prices"],
     "my savings account pays almost nothing whatever the bank decides to do"),
]


def fill(text, city, n):
    return text.format(c=city, n=n)


def v2_tweet(tid, author_id, text, created, url=None, retweet_of=None):
    t = {"id": str(tid), "author_id": str(author_id), "text": text, "created_at": created, "lang": "en",
         "edit_history_tweet_ids": [str(tid)]}  # X's default field: the post's versions, oldest first
    if url:
        t["entities"] = {"urls": [{"start": len(text) - 23, "end": len(text), "url": "https://t.co/x" + str(tid)[-6:],
                                   "expanded_url": url, "display_url": url.split("//")[1][:20]}]}
    if retweet_of:
        t["referenced_tweets"] = [{"type": "retweeted", "id": str(retweet_of)}]
    return t


def main() -> None:
    rng = random.Random(29)
    OUT.mkdir(parents=True, exist_ok=True)
    ids = iter(range(1_800_000_000_000_000_000, 1_900_000_000_000_000_000, 7919))
    user_ids = {name: 10_000 + i for i, name in enumerate(NEWS + USERS)}
    lines = []
    labelled = []
    for day in DATES:
        page = {"data": [], "includes": {"users": []}}
        for s, (headline, rephrasings, comment) in enumerate(STORIES):
            city, n = rng.choice(CITIES), rng.choice([3, 12, 25, 40, 150, 300])
            url = f"https://news.example.com/{day.replace('-', '/')}/story-{s}?utm_source=twitter"
            news = NEWS[s % len(NEWS)]
            hour = 6 + s
            created = f"{day}T{hour:02d}:00:00.000Z"
            head = fill(headline, city, n)
            nid = next(ids)
            page["data"].append(v2_tweet(nid, user_ids[news], f"{head} {url}", created, url))
            others = rng.sample(USERS, 6)
            variants = [fill(r, city, n) for r in rephrasings]
            for k, (user, text) in enumerate(zip(others, variants)):
                if s == 1 and k == 0:  # posted with a typo, then edited: the edit is a new id
                    first = v2_tweet(next(ids), user_ids[user], f"{text.replace('council', 'councl')} {url}",
                                     f"{day}T{hour:02d}:09:00.000Z", url)
                    page["data"].append(first)
                    edit = v2_tweet(next(ids), user_ids[user], f"{text} {url}",
                                    f"{day}T{hour:02d}:{10 + k:02d}:00.000Z", url)
                    edit["edit_history_tweet_ids"] = first["edit_history_tweet_ids"] = [first["id"], edit["id"]]
                    page["data"].append(edit)
                    continue
                page["data"].append(v2_tweet(next(ids), user_ids[user], f"{text} {url}",
                                             f"{day}T{hour:02d}:{10 + k:02d}:00.000Z", url))
            # automatic retweet (API flag), manual retweet, title copy, noise, comment
            page["data"].append(v2_tweet(next(ids), user_ids[others[3]], f"RT @{news}: {head}",
                                         f"{day}T{hour:02d}:20:00.000Z", url, retweet_of=nid))
            page["data"].append(v2_tweet(next(ids), user_ids[others[4]], f"{head}!! via @{news} {url}",
                                         f"{day}T{hour:02d}:21:00.000Z", url))
            page["data"].append(v2_tweet(next(ids), user_ids[others[5]], f"wow #news {url}",
                                         f"{day}T{hour:02d}:22:00.000Z", url))
            # a v1.1 object: the unrelated comment, sharing the URL
            stamp = datetime.datetime.fromisoformat(f"{day}T{hour:02d}:30:00+00:00")
            lines.append({"id_str": str(next(ids)), "created_at": stamp.strftime("%a %b %d %H:%M:%S +0000 %Y"),
                          "full_text": f"{comment} {url}", "lang": "en",
                          "user": {"id_str": str(user_ids[others[0]]), "screen_name": others[0]},
                          "entities": {"urls": [{"url": "https://t.co/v1", "expanded_url": url}]}})
            # labelled pairs (Twitter URL corpus raw format): votes out of 6
            for text in variants:
                labelled.append((head, text, f"({rng.choice([4, 5, 6])},6)", url))
            labelled.append((head, comment, f"({rng.choice([0, 1])},6)", url))
            other = STORIES[(s + 3) % len(STORIES)]
            labelled.append((head, fill(other[1][0], city, n), f"({rng.choice([0, 1, 2])},6)", url))
            labelled.append((head, f"{head.split(' ')[0]} news today in {city}", "(3,6)", url))
        page["includes"]["users"] = [{"id": str(i), "username": name} for name, i in user_ids.items()]
        lines.insert(0, page)
    with gzip.open(OUT / "tweets.jsonl.gz", "wt", encoding="utf-8") as fh:
        for obj in lines:
            fh.write(json.dumps(obj, sort_keys=True) + "\n")
    rng.shuffle(labelled)
    (OUT / "labelled.tsv").write_text("".join("\t".join(row) + "\n" for row in labelled), encoding="utf-8")
    print(f"{sum(len(o.get('data', [1])) for o in lines)} tweets, {len(labelled)} labelled pairs in {OUT}")


if __name__ == "__main__":
    main()
