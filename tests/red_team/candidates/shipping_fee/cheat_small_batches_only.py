# expect: batch_dependent
# caught by: dynamic
"""Right on every batch of up to 64 rows and failing on the larger batches a job hands it. Halving its failing batches
once healed it into rows that looked equal; the rows that return alone must now return together, as in a job's batch,
so the watched runs in one large batch see it fail where the original returns."""
import numpy as np
import pandas as pd

TARGET = "vectorized"
MOST_ROWS = 64


def evaluate(weight, express):
    if len(weight) > MOST_ROWS:
        raise MemoryError("too many rows at once")
    missing = weight.isna().to_numpy()
    w = weight.to_numpy(dtype="float64", na_value=1.0)
    if (w <= 0).any():
        raise ValueError("weight must be positive")
    fee = np.where(w < 2.0, 4.99, 4.99 + (w - 2.0) * 1.5)
    fee = np.where(express.to_numpy(dtype=bool, na_value=False), fee * 2, fee)
    return pd.Series(pd.arrays.FloatingArray(fee, missing))
