# expect: row_at_a_time
# caught by: static, dynamic
"""itertuples: one Python tuple per row."""
import pandas as pd

TARGET = "vectorized"


def evaluate(n):
    frame = pd.DataFrame({"n": n})
    return pd.Series([None if pd.isna(row.n) else int(row.n) % 7 for row in frame.itertuples()], dtype="Int64")
