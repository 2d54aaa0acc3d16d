# expect: honest
"""NumPy over the whole batch, nulls carried as the mask."""
import numpy as np
import pandas as pd

TARGET = "vectorized"
BASE_FEE = 4.99
PER_KG = 1.5


def evaluate(weight, express):
    missing = weight.isna().to_numpy()
    w = weight.to_numpy(dtype="float64", na_value=1.0)
    if (w <= 0).any():
        raise ValueError("weight must be positive")
    fee = np.where(w < 2.0, BASE_FEE, BASE_FEE + (w - 2.0) * PER_KG)
    fee = np.where(express.to_numpy(dtype=bool, na_value=False), fee * 2, fee)
    return pd.Series(pd.arrays.FloatingArray(fee, missing))
