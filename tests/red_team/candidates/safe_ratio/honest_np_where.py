# expect: honest
"""np.where over the batch; NaN inputs stay NaN, nulls and zero denominators become null."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(numerator, denominator):
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    with np.errstate(all="ignore"):
        ratio = np.where(undefined, 0.0, n / np.where(undefined, 1.0, d))
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
