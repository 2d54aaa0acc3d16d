# expect: row_at_a_time
# caught by: static, dynamic
"""np.vectorize looks vectorized but is a Python loop."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def _ratio(n, d):
    if n is None or d is None or d == 0:
        return None
    return n / d


def evaluate(numerator, denominator):
    n = numerator.astype(object).where(numerator.notna(), None)
    d = denominator.astype(object).where(denominator.notna(), None)
    return pd.Series(np.vectorize(_ratio, otypes=[object])(n.to_numpy(), d.to_numpy()), dtype="Float64")
