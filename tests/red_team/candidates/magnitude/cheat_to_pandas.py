# expect: host_round_trip
# caught by: static
"""Moves a device Series to the host before doing the work there."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    host = x.to_pandas() if hasattr(x, "to_pandas") else x
    values = host.to_numpy(dtype="float64", na_value=0.0)
    return pd.Series(pd.arrays.FloatingArray(np.where(values < 0, -values, values), host.isna().to_numpy()))
