"""The periodic live harvest as a user schedules it: ``scripts/harvest.sh`` once a day, through
real Snakemake, against the fake X API on a loopback port (``twitter.advanced.harvest.api_url``). Each
day adds only its new tweets, a month's pairs and the growth table follow, and a changed
harvest setting re-runs every day's job without a request for any day but the newest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from paramill.config import layout
from tests.fake_x import populate, serve

from .conftest import REPO, copy_project, executed, snakemake

pytestmark = pytest.mark.slow

TOKEN = "WORKFLOW-BEARER-TOKEN-0123456789"
#: one story a day per account's timeline, four replies each found by URL search (days that
#: have passed: a live harvest of a day to come is refused)
DAYS = {"2026-10-02": 1000, "2026-10-03": 2000, "2026-11-01": 3000}


def overlay(base: str, **harvest) -> str:
    """The live Twitter config over the sample's config.yaml (as configs/twitter.yaml is):
    no bitext needed (the identifier without the embedding model's cosine feature)."""
    settings = {"accounts": ["newsa", "newsb"], "max_results": 5, "max_pages": 10,
                "retries": 2, "backoff": 0.0, "api_url": base, **harvest}
    # written as a config file holds it: the settings only tuning needs under twitter.advanced
    return json.dumps(layout.unfold({"twitter": {
        "enabled": True, "source": "live", "archive": [], "dates": [],
        "raw_dir": "data/twitter/raw", "state": "data/twitter/state.json", "harvest": settings,
        "identify": {"model": "extended", "embed_model": None,
                     "train": [{"path": "data/sample/tweets/labelled.tsv", "format": "twitter-url"}]}}}))


def harvest(root: Path, day: str, config: str, token: str | None = TOKEN,
            ok: bool | None = None) -> subprocess.CompletedProcess:
    """``scripts/harvest.sh`` for ``day``, as cron runs it (credentials in the environment);
    ``ok``: whether it should succeed (with the credentials, unless said)."""
    given = root / "twitter.yaml"
    if not given.exists() or given.read_text() != config:  # (two at once read it as it is)
        given.write_text(config)  # JSON is YAML
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}", "PARAMILL_PROGRESS": "0",
           "HARVEST_DATE": day, "X_BEARER_TOKEN": token or "", "SNAKEMAKE": str(bindir / "snakemake"),
           "TWITTER_CONFIG": "twitter.yaml", "CORES": "2"}
    proc = subprocess.run(["scripts/harvest.sh"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)
    assert (proc.returncode == 0) == (bool(token) if ok is None else ok), f"harvest.sh {day}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    assert TOKEN not in proc.stdout + proc.stderr
    return proc


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "work/twitter/harvest").glob("*.parquet"))}


@pytest.fixture(scope="module")
def season(tmp_path_factory):
    """Three daily harvests over two months, then a day after a changed harvest setting;
    what each run executed, asked the API and left on disk."""
    root = copy_project(tmp_path_factory.mktemp("harvest"))
    (root / "scripts").mkdir()
    shutil.copy2(REPO / "scripts/harvest.sh", root / "scripts/harvest.sh")
    runs = {}
    with serve() as fake:
        config = overlay(fake.base)
        for day, start in DAYS.items():
            populate(fake, start=start, stories=2)
            before = len(fake.requests)
            proc = harvest(root, day, config)
            runs[day] = {"ran": executed(proc), "requests": fake.requests[before:],
                         "tables": snapshot(root),
                         "growth": (root / "results/twitter/growth.tsv").read_text(),
                         "october": (json.loads((root / "results/twitter/2026-10/stats.json").read_text()),
                                     pl.read_parquet(root / "results/twitter/2026-10/pairs.parquet"))}
        # a setting a day's table is built with changed (the URL expansions' timeout): every
        # day's job re-runs
        populate(fake, start=4000, stories=2)
        before = len(fake.requests)
        proc = harvest(root, "2026-11-02", overlay(fake.base, url_timeout=4.0))
        runs["changed"] = {"ran": executed(proc), "requests": fake.requests[before:],
                           "tables": snapshot(root)}
        # only how it is launched (another address for the same API, other retries) and what
        # the next fetch asks for (pages, page size, days a URL is searched) changed
        proc = harvest(root, "2026-11-02", overlay(fake.base.replace("127.0.0.1", "localhost"),
                                                    url_timeout=4.0, retries=7, max_pages=12,
                                                    max_results=10, search_days=3))
        runs["launch"] = {"ran": executed(proc)}
        # the accounts followed: they name the months' news tweets too (twitter_month's params)
        proc = harvest(root, "2026-11-02", overlay(fake.base, url_timeout=4.0, accounts=["newsa"]))
        runs["accounts"] = {"ran": executed(proc)}
        # no credentials in cron's environment: the script fails, its output says why
        runs["no_token"] = harvest(root, "2026-11-03", overlay(fake.base, url_timeout=4.0,
                                                               accounts=["newsa"]), token=None)
        runs["no_token_day"] = (root / "work/twitter/harvest/2026-11-03.parquet").exists()
        # beside another run that reads the month's pairs (a long monthly run): the day is
        # harvested, the month's step stops on Snakemake's lock and says so, and the next run
        # rebuilds the month with it
        config = overlay(fake.base, url_timeout=4.0, accounts=["newsa"])
        runs["locked"] = beside_a_run_reading(root, "results/twitter/2026-11/paraphrases.tsv",
                                              lambda: harvest(root, "2026-11-03", config, ok=False))
        runs["locked"].tables = snapshot(root)
        runs["after_lock"] = {"ran": executed(harvest(root, "2026-11-03", config)),
                              "days": json.loads((root / "results/twitter/2026-11/stats.json").read_text())["days"]}
        runs["all_requests"] = list(fake.requests)
        runs["expected"] = {t["id"] for ts in fake.timelines.values() for t in ts} | {
            t["id"] for t in fake.searchable}
        # two harvest.sh at once (two cron entries, a manual run beside cron): the second
        # waits for the first, then finds the day harvested and the month built
        populate(fake, start=6000, stories=1)
        together: dict[int, subprocess.CompletedProcess] = {}
        both = [threading.Thread(target=lambda k=k: together.setdefault(k, harvest(root, "2026-11-04", config)))
                for k in range(2)]
        for thread in both:
            thread.start()
        for thread in both:
            thread.join(900)
        runs["together"] = [(executed(p), p.stderr) for p in together.values()]
    return root, runs


HOLD = """
rule hold:
    input: "{read}"
    output: "held"
    shell: "touch holding; while [ ! -e release ]; do sleep 0.1; done; touch {{output}}"
"""


def beside_a_run_reading(root: Path, read: str, then):
    """``then()`` while another Snakemake run in ``root``, reading ``read``, holds its lock."""
    (root / "hold.smk").write_text(HOLD.format(read=read))
    holder = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", "hold.smk", "--cores", "1", "held"],
                              cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # its job runs: its lock is held
            if (root / "holding").exists() or holder.poll() is not None:
                break
            __import__("time").sleep(0.1)
        assert holder.poll() is None, "the holding run ended early"
        return then()
    finally:
        (root / "release").touch()
        holder.wait(timeout=120)
        for name in ("hold.smk", "held", "holding", "release"):
            (root / name).unlink(missing_ok=True)


def ids(table: bytes) -> set[str]:
    import io

    return set(pl.read_parquet(io.BytesIO(table))["tweet_id"])


def test_each_day_runs_its_harvest_its_month_and_the_growth_table_only(season):
    _, runs = season
    assert runs["2026-10-02"]["ran"] == {"harvest": 1, "twitter_identify": 1, "twitter_month": 1,
                                         "twitter_growth": 1}
    # the identifier and the other days' jobs are left as they were
    for day in ("2026-10-03", "2026-11-01"):
        assert runs[day]["ran"] == {"harvest": 1, "twitter_month": 1, "twitter_growth": 1}


def test_every_tweet_is_filed_once_under_the_day_that_fetched_it(season):
    _, runs = season
    tables = runs["2026-11-01"]["tables"]
    days = [ids(tables[f"{day}.parquet"]) for day in DAYS]
    assert all(days) and sum(map(len, days)) == len(set().union(*days))  # no tweet twice
    # each day's stories (ids from its start) are in its table: a story a day found by its URL
    for (day, start), found in zip(DAYS.items(), days):
        assert {i for i in found if start <= int(i) < start + 1000} == found, day
    # a day's table is never touched by the days after it
    assert runs["2026-10-03"]["tables"]["2026-10-02.parquet"] == tables["2026-10-02.parquet"]
    # timelines are asked only for what is newer than the last run's newest tweet
    since = [q.get("since_id", [None])[0] for p, q, _ in runs["2026-10-03"]["requests"]
             if p.endswith("/tweets") and p.startswith("/2/users/")]
    assert since and all(s is not None and int(s) >= 1000 for s in since)


def test_the_months_grow_in_the_growth_table(season):
    _, runs = season
    first = pl.read_csv(runs["2026-10-02"]["growth"].encode(), separator="\t")
    growth = pl.read_csv(runs["2026-11-01"]["growth"].encode(), separator="\t")
    assert first["month"].to_list() == ["2026-10"] and first["days"].to_list() == [1]
    assert growth["month"].to_list() == ["2026-10", "2026-11"] and growth["days"].to_list() == [2, 1]
    october = growth.row(0, named=True)
    assert october["tweets"] > first["tweets"][0] and october["pairs"] > first["pairs"][0] > 0
    stats, pairs = runs["2026-11-01"]["october"]
    assert stats["pairs"] == pairs.height == october["pairs"]


def test_a_changed_table_setting_rebuilds_past_days_from_their_pages_with_no_request(season):
    _, runs = season
    changed = runs["changed"]
    # every day's job re-runs (its params changed), and each month after it
    assert changed["ran"] == {"harvest": 4, "twitter_month": 2, "twitter_growth": 1}
    before = runs["2026-11-01"]["tables"]
    for name, table in before.items():  # the past days: the same tweets as they were harvested
        assert ids(changed["tables"][name]) == ids(table), name
    # the requests of the run are the newest day's alone: each account's timeline once, since
    # the last run's newest tweet, and each recent URL searched once (a past day re-run live
    # asked again for every one)
    newest = ids(changed["tables"]["2026-11-02.parquet"])
    assert newest and all(4000 <= int(i) < 5000 for i in newest)
    timelines = [(p, int(q["since_id"][0])) for p, q, _ in changed["requests"] if p.endswith("/tweets")]
    assert sorted(p for p, _ in timelines) == ["/2/users/100/tweets", "/2/users/200/tweets"]
    assert min(s for _, s in timelines) >= 3000
    searches = Counter(q["query"][0] for p, q, _ in changed["requests"] if p == "/2/tweets/search/recent")
    assert len(searches) == 4 and set(searches.values()) == {1}  # 2 stories of 11-01, 2 of 11-02
    # every tweet the fake API holds was harvested, once
    union = set().union(*(ids(t) for t in changed["tables"].values()))
    assert union == runs["expected"]


def test_two_harvest_sh_at_once_run_one_after_another(season):
    """Two harvests started at once (two cron entries): the second waits for the first,
    saying so, then finds the day harvested and its month built; both end well."""
    _, runs = season
    ran = [executed_jobs for executed_jobs, _ in runs["together"]]
    assert sorted(r.get("harvest", 0) for r in ran) == [0, 1]
    assert sorted(r.get("twitter_month", 0) for r in ran) == [0, 1]
    assert any("another harvest.sh is running" in err and "waiting for it to end" in err
               for _, err in runs["together"])


def test_a_launch_only_change_reruns_no_day(season):
    _, runs = season
    # the newest day's harvest is complete: another address, retries, pages, page size or
    # search days re-run nothing
    assert runs["launch"]["ran"] == {}


@pytest.mark.parametrize("day", ["2026-02-30", "2026-1-05", "yesterday", "2026-11-02; rm -rf /"])
def test_harvest_sh_refuses_a_day_that_is_not_a_date(tmp_path, day):
    proc = subprocess.run([str(REPO / "scripts/harvest.sh")], env={**os.environ, "HARVEST_DATE": day,
                          "SNAKEMAKE": "/bin/false"}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr == f"harvest.sh: HARVEST_DATE '{day}' is not a date (YYYY-MM-DD)\n"


def test_other_accounts_rerun_the_months_and_no_day(season):
    _, runs = season
    assert runs["accounts"]["ran"] == {"twitter_month": 2, "twitter_growth": 1}


def test_a_failed_harvest_says_why_in_the_scripts_own_output(season):
    _, runs = season
    proc = runs["no_token"]
    # the job's log, shown by snakemake (--show-failed-logs): what a cron mail or log holds
    assert proc.returncode != 0
    assert "paramill twitter harvest: no X API credentials: set X_BEARER_TOKEN" in proc.stdout + proc.stderr
    assert runs["no_token_day"] is False


def test_beside_a_long_run_the_day_is_harvested_and_its_month_follows_the_next_run(season):
    """Snakemake locks the files a run reads and writes: a day's harvest goes on beside a long
    monthly run, and the month's step, which would write what that run reads, stops and
    says so; the next run rebuilds the month with the day."""
    _, runs = season
    locked = runs["locked"]
    assert executed(locked) == {"harvest": 1}
    assert "2026-11-03.parquet" in locked.tables
    assert "Directory cannot be locked" in locked.stdout + locked.stderr
    assert ("harvest.sh: 2026-11-03 is harvested, but 2026-11's pairs and the growth table were not "
            "rebuilt (above: why); the next harvest.sh run rebuilds them") in locked.stderr
    assert runs["after_lock"]["ran"] == {"twitter_month": 1, "twitter_growth": 1}
    assert runs["after_lock"]["days"] == 3


def test_a_day_whose_harvest_stopped_part_way_is_built_from_its_pages_by_the_next_run(tmp_path):
    """A harvest stopped after its timelines (a time limit, a lost node, here a refused
    search) saved the news tweets' pages and moved past them, but wrote no table: the month
    never read that day, and every pair of its stories was lost. The next day's run builds
    the stopped day's table from its pages, without a request for it."""
    root = copy_project(tmp_path)
    (root / "scripts").mkdir()
    shutil.copy2(REPO / "scripts/harvest.sh", root / "scripts/harvest.sh")
    with serve() as fake:
        config = overlay(fake.base)
        populate(fake, start=1000, stories=2)
        fake.faults = [("/2/tweets/search/recent", "free")]  # 403 on the first search: it stops
        stopped = harvest(root, "2026-10-05", config, ok=False)
        assert executed(stopped) == {"harvest": 1}  # and it failed: no month step
        assert list((root / "data/twitter/raw/2026-10-05").iterdir())  # its timelines' pages
        assert not (root / "work/twitter/harvest/2026-10-05.parquet").exists()
        populate(fake, start=2000, stories=2)
        before = len(fake.requests)
        proc = harvest(root, "2026-10-06", config)
        requests = fake.requests[before:]
    ran = executed(proc)
    assert ran["harvest"] == 2 and ran["twitter_month"] == 1  # 10-06, and 10-05 from its pages
    rebuilt = json.loads((root / "work/twitter/harvest/2026-10-05.parquet.prov.json").read_text())
    assert rebuilt["rebuilt_after"] == "2026-10-06"
    # the requests were 10-06's own: its timelines since the stopped day's news, and the
    # searches of both days' stories (those of 10-05 had not run)
    searched = {q["query"][0] for p, q, _ in requests if p == "/2/tweets/search/recent"}
    assert {"story-1000-0", "story-1000-1", "story-2000-0", "story-2000-1"} == {
        u.split("/")[-1].split("?")[0].split('"')[0] for u in searched}
    stats = json.loads((root / "results/twitter/2026-10/stats.json").read_text())
    pairs = pl.read_parquet(root / "results/twitter/2026-10/pairs.parquet")
    assert stats["days"] == 2
    # the stopped day's stories are paired: their news tweets came from its pages
    assert {"1000", "1100"} <= set(pairs["tweet_a"].cast(pl.Utf8)) | set(pairs["tweet_b"].cast(pl.Utf8))


def test_before_the_first_harvest_the_pipeline_runs_and_growth_waits_for_a_month(tmp_path):
    """A live config with no day harvested yet: the default targets leave the growth table
    out (it counted no month, and its job failed on a usage error) and train the identifier;
    asking for the table says why there is none."""
    root = copy_project(tmp_path)
    (root / "twitter.yaml").write_text(overlay("https://api.x.com"))
    dry = snakemake(root, "-n", "--configfile", "config.yaml", "twitter.yaml")
    assert executed(dry)["twitter_identify"] == 1
    assert not {"harvest", "twitter_month", "twitter_growth"} & set(executed(dry))
    asked = snakemake(root, "-n", "results/twitter/growth.tsv", "--configfile", "config.yaml",
                      "twitter.yaml", check=False)
    assert asked.returncode != 0 and ("results/twitter/growth.tsv: no month to count yet: twitter.dates is "
                                      "empty and no day is harvested in work/twitter/harvest") in asked.stdout + asked.stderr
