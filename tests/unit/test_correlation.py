"""paramill.correlation against scipy.stats, which it stands in for."""

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, rankdata, spearmanr

from paramill.correlation import pearson, ranks, spearman


@pytest.mark.parametrize("seed", range(5))
def test_pearson_and_spearman_equal_scipys_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=300)
    y = 0.3 * x + rng.normal(size=300)
    tied_x, tied_y = np.round(x, 1), rng.integers(0, 6, size=300).astype(float)  # many ties
    for a, b in ((x, y), (tied_x, y), (tied_x, tied_y), (list(tied_y), list(x))):
        assert pearson(a, b) == pytest.approx(pearsonr(a, b)[0], abs=1e-12)
        assert spearman(a, b) == pytest.approx(spearmanr(a, b)[0], abs=1e-12)
    assert ranks(tied_y).tolist() == rankdata(tied_y).tolist()


def test_hand_computed_values_and_undefined_cases():
    assert ranks([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3])) and math.isnan(spearman([2, 2], [1, 5]))
    assert math.isnan(pearson([1.0], [2.0])) and math.isnan(spearman([], []))
    with pytest.raises(ValueError, match="one length"):
        pearson([1, 2], [1, 2, 3])
