"""Cleaning rules as polars expressions, shared by the bitext's cleaning (``clean``) and the
pair corpora's (``pairs ingest``): the normalised columns, the checks both apply to a side
(empty, token bounds), and the ``reason`` column naming the first check a row fails."""

from __future__ import annotations

import polars as pl

from paramill import text

Check = tuple[pl.Expr, str]


def normalised(columns: tuple[str, ...], punctuation: bool) -> list[pl.Expr]:
    """Each column through :func:`paramill.text.normalize_expr`, under its own name."""
    return [text.normalize_expr(pl.col(c), punctuation).alias(c) for c in columns]


def empty(column: pl.Expr, reason: str) -> Check:
    return column.is_null() | (column == ""), reason


def not_in_language(column: str, language: str, min_probability: float, reason: str) -> Check:
    """A side that the language identifier (:mod:`paramill.text.langid`) finds in ``language`` with probability below ``min_probability``."""
    from paramill.text.langid import identify

    def below(side: pl.Series) -> pl.Series:
        texts = side.fill_null("").to_list()
        return pl.Series(identify(texts, language)[1] < min_probability, dtype=pl.Boolean)

    return pl.col(column).map_batches(below, return_dtype=pl.Boolean), reason


def token_counts(sides: dict[str, str]) -> list[pl.Expr]:
    """Each side's token count as a column of its own (``{side: count column}``), for
    :func:`token_bounds` and for what keeps the counts: counted once a batch (a frame's
    ``with_columns`` evaluates an expression each time it appears, and counted inside the
    checks each side was counted three times, half of ``clean``'s rules' time)."""
    return [text.token_count_expr(pl.col(side)).alias(name) for side, name in sides.items()]


def token_bounds(n_a: str, n_b: str, min_tokens: int, max_tokens: int
                 ) -> tuple[list[Check], pl.Expr, pl.Expr]:
    """``too_short`` (the shorter side under ``min_tokens``) and ``too_long`` (the longer
    over ``max_tokens``), with the two sides' shorter and longer token counts; ``n_a``,
    ``n_b``: the columns of the sides' counts (:func:`token_counts`)."""
    shorter, longer = pl.min_horizontal(n_a, n_b), pl.max_horizontal(n_a, n_b)
    return [(shorter < min_tokens, "too_short"), (longer > max_tokens, "too_long")], shorter, longer


def first_reason(checks: list[Check]) -> pl.Expr:
    """``reason``: the name of the first check a row fails, null when it passes them all."""
    when = pl.when(checks[0][0]).then(pl.lit(checks[0][1]))
    for cond, reason in checks[1:]:
        when = when.when(cond).then(pl.lit(reason))
    return when.otherwise(pl.lit(None, dtype=pl.String)).alias("reason")
