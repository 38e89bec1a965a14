#!/usr/bin/env bash
# Periodic Twitter harvest: harvest one day (default: today, UTC) from the live X API, then
# rebuild that month's pairs and the growth table. For cron or SLURM scrontab:
#
#   # crontab -e   (every day at 02:30 UTC)
#   30 2 * * *  cd /path/to/paramill && X_BEARER_TOKEN=... scripts/harvest.sh >> logs/harvest.cron.log 2>&1
#
#   # scrontab -e  (SLURM)
#   #SCRON -t 02:00:00 -c 2 --mem=4G   (at 450 searches per 15 min, 2 h is ~3,600 searches:
#                                       size it: docs/methods/twitter.md)
#   30 2 * * *  cd /path/to/paramill && scripts/harvest.sh
#
# Credentials come from the environment variables named in twitter.advanced.harvest (never stored).
# Extra arguments go to snakemake (e.g. --profile slurm, --configfile my-twitter.yaml).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DAY="${HARVEST_DATE:-$(date -u +%F)}"
if ! [[ "$DAY" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || [[ "$(date -u -d "$DAY" +%F 2>/dev/null)" != "$DAY" ]]; then
  echo "harvest.sh: HARVEST_DATE '$DAY' is not a date (YYYY-MM-DD)" >&2
  exit 2
fi
MONTH="${DAY:0:7}"
# one harvest.sh at a time in this project (two cron entries, a manual run beside cron): a
# second waits for the first, then finds its day harvested or goes on from where it ended,
# instead of stopping on Snakemake's lock of the same files
mkdir -p .snakemake
exec 9>>.snakemake/harvest.sh.lock
if command -v flock > /dev/null && ! flock -n 9; then
  echo "harvest.sh: another harvest.sh is running in $PWD; waiting for it to end" >&2
  flock 9
fi
SNAKEMAKE="${SNAKEMAKE:-.venv/bin/snakemake}"
CONFIG=(--configfile config.yaml "${TWITTER_CONFIG:-configs/twitter.yaml}")
# Snakemake re-runs a day's harvest job only when a setting of its URL expansions changed
# (twitter.harvest.private_urls, twitter.advanced.harvest.expand_all, url_timeout); a day
# before the latest harvested (or the latest, harvested to its end, once its day is past)
# then rebuilds its table from its saved pages and fetches nothing, and today's only adds
# what is new (paramill.twitter.harvest)
# --show-failed-logs: a failed job's log (the harvest's own message) lands in the cron log
"$SNAKEMAKE" --cores "${CORES:-2}" --show-failed-logs "$@" "work/twitter/harvest/${DAY}.parquet" "${CONFIG[@]}"
# the day is kept whatever follows; the month's step may stop on Snakemake's lock beside a
# long monthly run (docs/periodic.md), and the next day's run then rebuilds it
"$SNAKEMAKE" --cores "${CORES:-2}" --show-failed-logs "$@" "results/twitter/${MONTH}/paraphrases.tsv" \
  results/twitter/growth.tsv "${CONFIG[@]}" || {
  echo "harvest.sh: ${DAY} is harvested, but ${MONTH}'s pairs and the growth table were not rebuilt" \
    "(above: why); the next harvest.sh run rebuilds them" >&2
  exit 1
}
