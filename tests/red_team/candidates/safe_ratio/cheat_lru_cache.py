# expect: memoization
# caught by: static
"""Caches whole-batch results by their bytes with functools.lru_cache."""
from functools import lru_cache

import numpy as np
import pandas as pd

TARGET = "vectorized"


@lru_cache(maxsize=16)
def _ratio(n_bytes, d_bytes, undefined_bytes):
    n, d = np.frombuffer(n_bytes), np.frombuffer(d_bytes)
    undefined = np.frombuffer(undefined_bytes, dtype=bool)
    with np.errstate(all="ignore"):
        return np.where(undefined, 0.0, n / np.where(undefined, 1.0, d))


def evaluate(numerator, denominator):
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    ratio = _ratio(n.tobytes(), d.tobytes(), undefined.tobytes()).copy()
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
