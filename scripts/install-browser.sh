#!/usr/bin/env bash
# Debian's chromium and chromedriver for the report's browser test
# (tests/workflow/test_report_browser.py). Installed when missing and we are root with
# apt-get; otherwise a note, and that test is skipped with the reason. Never fails the install.
set -uo pipefail
if [[ -n "${PARAMILL_NO_BROWSER:-}" ]]; then echo "browser: skipped (PARAMILL_NO_BROWSER)"; exit 0; fi
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "browser: chromium and chromedriver present"; exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "browser: installing Debian packages chromium chromium-driver"
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
       --no-install-recommends chromium chromium-driver >/dev/null; then
    exit 0
  fi
fi
echo "browser: chromium/chromedriver not installed (as root: apt-get install chromium" \
     "chromium-driver); the report's browser test will be skipped" >&2
exit 0
