# expect: evades_watch
# caught by: static, dynamic
"""Switches the step counter off first, then divides row by row."""
import sys

import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(numerator, denominator):
    try:
        sys.settrace(None)
    except PermissionError:
        pass
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    with np.errstate(all="ignore"):
        ratio = np.where(undefined, 0.0, n / np.where(undefined, 1.0, d))
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
