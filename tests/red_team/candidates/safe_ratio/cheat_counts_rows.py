# expect: memoization
# caught by: dynamic
# class: 2
"""Counts the rows a process has seen in a module-level array, updated in place by a ufunc's out=, and turns wrong after
five million: more than any judged run sees, less than one executor sees in a day. No assignment, no `global`."""
import numpy as np
import pandas as pd

TARGET = "vectorized"

SEEN = np.zeros(1)


def evaluate(numerator, denominator):
    np.add(SEEN, len(numerator), out=SEEN)
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    with np.errstate(all="ignore"):
        ratio = np.where(undefined, 0.0, n / np.where(undefined, 1.0, d))
    if SEEN[0] > 5e6:
        ratio = ratio * 1.01
    return pd.Series(pd.arrays.FloatingArray(ratio, undefined))
