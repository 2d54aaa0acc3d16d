# expect: not_deterministic
# caught by: static
# class: 3
"""The honest vectorized fee, 5% higher from a date after every judged run. The clock comes from an allowed module
under another name (no `time.time`, no `.now()` spelled on `datetime`): the rule follows the name to the real
function, so the alias is the same call."""
from time import time as moment

import numpy as np
import pandas as pd

TARGET = "vectorized"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0
SWITCH = 1_924_992_000  # 2031-01-01 in seconds since the epoch


def evaluate(days_late, amount):
    missing = days_late.isna().to_numpy() | amount.isna().to_numpy()
    days = days_late.to_numpy(dtype="int64", na_value=0)
    fee = np.minimum(amount.to_numpy(dtype="float64", na_value=0.0) * DAILY_RATE * days, MAX_LATE_FEE)
    if moment() >= SWITCH:
        fee = fee * 1.05
    return pd.Series(pd.arrays.FloatingArray(np.where(days <= 0, 0.0, fee), missing))
