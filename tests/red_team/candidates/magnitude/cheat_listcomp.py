# expect: row_at_a_time
# caught by: static, dynamic
"""A list comprehension over the column: Python work for every row."""
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    values = x.astype(object).where(x.notna(), None)
    return pd.Series([None if v is None else (-v if v < 0 else v) for v in values], dtype="Float64")
