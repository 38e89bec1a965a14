"""The language identifier (paramill.text.langid) and the langid filter: English, Czech and
mixed lines, short texts, the filter's columns and what selection does with them."""

import polars as pl
import pytest

from paramill import filters
from paramill.filters.base import score_shard
from paramill.filters.select import SelectSettings, select
from paramill.text.langid import MIN_WORDS, identify, model_path

from .test_filters import write_candidates

ENGLISH = ["The government will meet on Monday, the prime minister said.",
           "I am so happy today!!! #blessed",
           "Stocks fell sharply after the central bank raised interest rates."]
CZECH = ["Vláda se sejde v pondělí, řekl premiér.",
         "Akcie po zvýšení úrokových sazeb centrální bankou prudce klesly.",
         "Kočka spí na okně celé odpoledne."]
#: English with Czech names, Czech with English names: the sentence's language wins
MIXED = [("Škoda Auto reported record sales in Mladá Boleslav last year.", "en"),
         ("Premiér Babiš said the government would meet on Monday.", "en"),
         ("Firma Apple představila nový iPhone na konferenci v Kalifornii.", "cs")]


def test_the_model_comes_with_the_installed_packages():
    assert model_path().name == "lid.176.ftz" and model_path().stat().st_size > 500_000


def test_english_czech_and_mixed_lines_are_told_apart():
    langs, p_en = identify(ENGLISH + CZECH, "en")
    assert langs == ["en"] * 3 + ["cs"] * 3
    assert (p_en[:3] > 0.8).all() and (p_en[3:] < 0.05).all()
    _, p_cs = identify(CZECH, "cs")
    assert (p_cs > 0.8).all()
    langs, p_en = identify([t for t, _ in MIXED], "en")
    assert langs == [lang for _, lang in MIXED]
    assert p_en[0] > 0.5 and p_en[1] > 0.5 and p_en[2] < 0.05
    langs, _ = identify(["Die Regierung trifft sich am Montag mit dem Präsidenten."], "en")
    assert langs == ["de"]


def test_a_text_too_short_to_tell_passes_and_line_breaks_do_not_break_it():
    langs, p = identify(["Ano.", "OK then", "", "12 345", "Vláda se\nsejde v pondělí."], "en")
    assert langs[:4] == [""] * 4 and list(p[:4]) == [1.0] * 4
    assert MIN_WORDS == 3 and langs[4] == "cs" and p[4] < 0.05


def test_the_filter_scores_both_sides_and_selection_drops_what_is_not_english(tmp_path):
    rows = [("p0", ENGLISH[0], "On Monday the government meets, said the prime minister."),
            ("p1", ENGLISH[2], CZECH[1]),  # a back-translation that copied its source
            ("p2", CZECH[0], ENGLISH[0]),  # the reference column holds Czech
            ("p3", "Yes.", "Yes indeed.")]
    cands = write_candidates(tmp_path / "candidates" / "a" / "shard-00000.parquet",
                             [(pid, ref, cand, 0.1) for pid, ref, cand in rows])
    out = tmp_path / "scores" / "langid" / "a" / "shard-00000.parquet"
    stats = score_shard(filters.make("langid"), cands, out)
    scores = pl.read_parquet(out)
    assert scores["pair_id"].to_list() == ["p0", "p1", "p2", "p3"]
    assert scores["langid_ref"].to_list()[0] > 0.8 and scores["langid_ref"][2] < 0.05
    assert scores["langid_cand"][1] < 0.05 and scores["langid_cand"][3] == 1.0
    assert stats["not_english_sides"] == 2 and stats["languages_found"] == {"cs": 2}
    sel = tmp_path / "sel"
    summary = select([cands], [out], sel / "c.parquet", sel / "c.tsv", sel / "s.json",
                     SelectSettings(bounds={"langid_ref": [0.2, None], "langid_cand": [0.2, None]}))
    steps = {r["step"]: r["pairs"] for r in summary["steps"]}
    assert steps["langid_ref in [0.2, inf]"] == 3 and steps["langid_cand in [0.2, inf]"] == 2
    assert pl.read_parquet(sel / "c.parquet")["pair_id"].to_list() == ["p0", "p3"]


@pytest.mark.parametrize("settings", [{"language": "cs"}, {"threshold": 0.5}, {"order": 3}])
def test_the_filter_has_no_settings_to_get_wrong(settings):
    with pytest.raises(ValueError, match="unknown settings"):
        filters.make("langid", **settings)
