# expect: escape
# caught by: static
"""Splits the batch across a thread pool."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

TARGET = "vectorized"


def _ratio(n, d):
    with np.errstate(all="ignore"):
        return n / d


def evaluate(numerator, denominator):
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    safe_d = np.where(undefined, 1.0, d)
    half = len(n) // 2
    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(_ratio, (n[:half], n[half:]), (safe_d[:half], safe_d[half:])))
    ratio = np.where(undefined, 0.0, np.concatenate(parts))
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
