# expect: host_round_trip
# caught by: static
"""Runs on CuPy when it can, then pulls the result to the host with asnumpy."""
import pandas as pd

try:
    import cupy as xp
except ImportError:
    import numpy as xp

TARGET = "vectorized"


def evaluate(numerator, denominator):
    n = xp.asarray(numerator.to_numpy(dtype="float64", na_value=0.0))
    d = xp.asarray(denominator.to_numpy(dtype="float64", na_value=0.0))
    undefined = xp.asarray(numerator.isna().to_numpy() | denominator.isna().to_numpy()) | (d == 0)
    with xp.errstate(all="ignore"):
        ratio = xp.where(undefined, 0.0, n / xp.where(undefined, 1.0, d))
    if hasattr(xp, "asnumpy"):
        ratio, undefined = xp.asnumpy(ratio), xp.asnumpy(undefined)
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
