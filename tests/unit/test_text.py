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


def _unguarded(expr: pl.Expr) -> pl.Expr:
    """normalize_expr as it was: every step on every string."""
    expr = expr.str.normalize("NFC").str.replace_many(text.PUNCTUATION_MAP)
    expr = expr.str.replace_all(text._SPACE_CONTROL, " ").str.replace_all(text._CONTROL, "")
    return expr.str.replace_all(text._SPACE_RUNS, " ").str.strip_chars()


def test_normalize_expression_runs_each_step_where_it_may_change_something_only():
    """The steps skipped for printable ASCII, and NFC for code points below U+0300, give the
    same text as every step on every string: strings of characters at both edges (U+007E,
    U+007F, U+02FF, U+0300), combining marks after letters, compositions of other starters
    (Hangul), singletons (the Angstrom sign), controls, punctuation, and nulls."""
    import random

    rng = random.Random(7)
    alphabet = ["a", "A", "e", " ", "~", "\x7f", "\x1f", "\t", "\u00e9", "\u00a0", "\u02ff",
                "\u0300", "\u0301", "\u030a", "\u0327", "\u1100", "\u1161", "\u212b", "\u2019",
                "\u2026", "\u0158", "\u00ad", "\u0344", "\U0001d15e", "\u3000"]
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(5000)]
    samples += ["plain ascii", "A\u0300", "\u1100\u1161", "\u212b", None]
    frame = pl.DataFrame({"s": samples})
    got = frame.select(text.normalize_expr(pl.col("s")))["s"].to_list()
    assert got == frame.select(_unguarded(pl.col("s")))["s"].to_list()
    assert got == [None if s is None else text.normalize(s) for s in samples]
    assert got[-5:] == ["plain ascii", "\u00c0", "\uac00", "\u00c5", None]


def test_every_pair_of_code_points_below_u0300_is_its_own_nfc():
    """What the NFC guard rests on: no code point below U+0300 changes under NFC, alone or
    beside any other of them (all 768 x 768 pairs, through polars' own NFC)."""
    chars = [chr(c) for c in range(0x300)]
    pairs = pl.Series("s", [a + b for a in chars for b in chars])
    assert (pairs.str.normalize("NFC") == pairs).all()
    assert not pairs.str.contains(text._NFC_MAYBE).any()


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
