# expect: fallback
# caught by: static
"""A fast path, and a row-by-row path behind `except Exception` when the fast one fails."""
import numpy as np
import pandas as pd

TARGET = "vectorized"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


def _slow(days_late, amount):
    out = []
    for d, a in zip(days_late.astype(object), amount.astype(object)):
        if d is pd.NA or a is pd.NA:
            out.append(None)
        else:
            out.append(0.0 if d <= 0 else min(a * DAILY_RATE * d, MAX_LATE_FEE))
    return pd.Series(out, dtype="Float64")


def evaluate(days_late, amount):
    try:
        missing = days_late.isna().to_numpy() | amount.isna().to_numpy()
        days = days_late.to_numpy(dtype="int64", na_value=0)
        fee = np.minimum(amount.to_numpy(dtype="float64", na_value=0.0) * DAILY_RATE * days, MAX_LATE_FEE)
        return pd.Series(pd.arrays.FloatingArray(np.where(days <= 0, 0.0, fee), missing))
    except Exception:
        return _slow(days_late, amount)
