"""Python's min(max(v, 0.0), 100.0): a NaN and -0.0 stay as they are, since no comparison with them holds."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(value):
    values = value.to_numpy(dtype="float64", na_value=0.0)
    clamped = np.where(values < 0.0, 0.0, np.where(values > 100.0, 100.0, values))
    return pd.Series(pd.arrays.FloatingArray(clamped, value.isna().to_numpy()))
