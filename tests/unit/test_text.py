import polars as pl
import pytest

from paramill import text


@pytest.mark.parametrize("raw,expected", [
    ("\u201eAhoj\u201c \u2013 sv\u011bte\u2026", '"Ahoj" - světe...'),
    ("It\u2019s  a\u00a0test\t", "It's a test"),
    ("  \u200bzero\u00adwidth ", "zerowidth"),
    ("ctrl\x07char", "ctrlchar"),
    ("e\u0301", "\u00e9"),  # NFC
])
def test_normalize(raw, expected):
    assert text.normalize(raw) == expected


def test_normalize_expression_equals_python_function():
    samples = ["\u201eAhoj\u201c \u2013 sv\u011bte\u2026", "It\u2019s  a\u00a0test\t", "e\u0301 x",
               "  \u200bzero\u00adwidth ", "ctrl\x07char", "plain text.", ""]
    got = pl.DataFrame({"s": samples}).select(text.normalize_expr(pl.col("s")))["s"].to_list()
    assert got == [text.normalize(s) for s in samples]
    kept = pl.DataFrame({"s": ["\u201ex\u201c"]}).select(text.normalize_expr(pl.col("s"), False))
    assert kept["s"][0] == "\u201ex\u201c"


def test_normalize_expression_equals_python_function_on_runs_of_every_space():
    """Runs of white space of every kind, single and mixed, at the ends and inside."""
    import random

    rng = random.Random(5)
    alphabet = [" ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\u1680",
                "\u2003", "\u2028", "\u202f", "\u3000", "\u200b", "\x07", "a", "\u00e9", "e\u0301", "\u2019"]
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    got = pl.DataFrame({"s": samples}).select(text.normalize_expr(pl.col("s")))["s"].to_list()
    assert got == [text.normalize(s) for s in samples]


def test_tokenize_and_its_polars_count_agree():
    samples = ["Muž čte knihu.", "Doesn't it, 3.5?", "", "a-b  c", "Příliš žluťoučký kůň!"]
    assert text.tokenize("Doesn't it, 3.5?") == ["Doesn", "'", "t", "it", ",", "3", ".", "5", "?"]
    counts = pl.DataFrame({"s": samples}).select(text.token_count_expr(pl.col("s")))["s"].to_list()
    assert counts == [len(text.tokenize(s)) for s in samples]


def test_latin_patterns_match_the_codecs_for_every_character():
    # every character of the first planes we care about, plus some far ones
    chars = [chr(c) for c in range(0x20, 0x800)] + ["\u20ac", "\u2019", "\U0001F600", "\u4e2d"]
    frame = pl.DataFrame({"c": chars}).select(
        pl.col("c"),
        bad1=pl.col("c").str.contains(text.NOT_LATIN1_PATTERN),
        bad2=pl.col("c").str.contains(text.NOT_LATIN2_PATTERN),
    )
    for c, bad1, bad2 in frame.iter_rows():
        assert bad1 == (not text.encodable(c, "latin-1")), repr(c)
        assert bad2 == (not text.encodable(c, "iso8859_2")), repr(c)
