# expect: row_at_a_time
# caught by: static, dynamic
"""A for loop over row positions with .iloc."""
import pandas as pd

TARGET = "vectorized"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


def evaluate(days_late, amount):
    out = []
    for i in range(len(days_late)):
        d, a = days_late.iloc[i], amount.iloc[i]
        if pd.isna(d) or a is pd.NA:
            out.append(None)
        elif d <= 0:
            out.append(0.0)
        else:
            out.append(min(a * DAILY_RATE * int(d), MAX_LATE_FEE))
    return pd.Series(out, dtype="Float64")
