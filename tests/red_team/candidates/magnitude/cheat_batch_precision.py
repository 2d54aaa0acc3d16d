# expect: batch_dependent
# caught by: dynamic
"""Large batches take a float32 shortcut; small ones (like the recorded cases) are exact."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    values = x.to_numpy(dtype="float64", na_value=0.0)
    if len(values) > 64:
        values = values.astype(np.float32).astype(np.float64)
    return pd.Series(pd.arrays.FloatingArray(np.where(values < 0, -values, values), x.isna().to_numpy()))
