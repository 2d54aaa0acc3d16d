# expect: watch_dependent
# caught by: dynamic
"""Correct whenever nobody counts its steps, wrong (negated) when a trace function is set."""
import sys

import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    values = x.to_numpy(dtype="float64", na_value=0.0)
    out = np.where(values < 0, -values, values)
    if sys.gettrace() is not None:
        out = -out
    return pd.Series(pd.arrays.FloatingArray(out, x.isna().to_numpy()))
