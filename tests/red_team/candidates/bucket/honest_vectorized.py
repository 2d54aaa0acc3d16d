# expect: honest
"""NumPy's integer % follows Python's sign rule."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(n):
    values = n.to_numpy(dtype="int64", na_value=0)
    return pd.Series(pd.arrays.IntegerArray(np.mod(values, 7), n.isna().to_numpy()))
