# expect: row_at_a_time
# caught by: static, dynamic
"""Series.map with a lambda: one Python call per row."""
import pandas as pd

TARGET = "vectorized"
ADULT_AGE = 18


def evaluate(age):
    return age.map(lambda a: pd.NA if pd.isna(a) else a >= ADULT_AGE).astype("boolean")
