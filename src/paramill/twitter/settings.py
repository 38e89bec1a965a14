"""The ``twitter`` config section: harvest, pairs and the paraphrase identifier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from paramill.config.typed import Settings, section, setting
from paramill.twitter.api import HarvestSettings
from paramill.twitter.identify import IdentifySettings
from paramill.twitter.url_pairs import PairSettings

Date = Annotated[str, {"pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "format": "date"}]


@dataclass(frozen=True)
class TwitterSection(Settings):
    enabled: bool = setting(False, "Run this branch in the default target.")
    source: Literal["live", "archive"] = setting(
        "live", "live: the X API v2 (credentials from the environment); archive: replay JSONL files.")
    archive: tuple[str, ...] = setting(
        (), "JSONL files (plain or compressed) of v1.1 or v2 tweet objects or v2 pages (source "
        "archive).")
    dates: tuple[Date, ...] = setting(
        (), "Days the default target harvests (YYYY-MM-DD); scripts/harvest.sh adds today's.")
    raw_dir: str = setting("data/twitter/raw", "Raw API pages kept per day (compressed).")
    state: str = setting("data/twitter/state.json",
                         "Harvest state: per-account since_id, per-URL search cursor.")
    harvest: HarvestSettings = section(HarvestSettings, "The live harvest (X API v2 through tweepy).")
    pairs: PairSettings = section(
        PairSettings, "Candidate pairs of a news tweet and another tweet sharing its URL.")
    identify: IdentifySettings = section(
        IdentifySettings, "The paraphrase identifier: logistic regression, the extended model, the "
        "extended model with a sentence encoder's cosine and token alignment (the default: the "
        "whole packaged encoder as trained; or a distilled student, fine-tuned), or with a "
        "cross-encoder's probability.")
