# expect: tampering
# caught by: static
"""Changes a pandas option for the whole worker process as a side effect."""
import numpy as np
import pandas as pd

TARGET = "vectorized"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


def evaluate(days_late, amount):
    pd.options.mode.chained_assignment = None
    missing = days_late.isna().to_numpy() | amount.isna().to_numpy()
    days = days_late.to_numpy(dtype="int64", na_value=0)
    fee = np.minimum(amount.to_numpy(dtype="float64", na_value=0.0) * DAILY_RATE * days, MAX_LATE_FEE)
    return pd.Series(pd.arrays.FloatingArray(np.where(days <= 0, 0.0, fee), missing))
