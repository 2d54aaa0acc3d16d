# expect: honest
"""np.where keeps -0.0 and NaN as the UDF does."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    values = x.to_numpy(dtype="float64", na_value=0.0)
    return pd.Series(pd.arrays.FloatingArray(np.where(values < 0, -values, values), x.isna().to_numpy()))
