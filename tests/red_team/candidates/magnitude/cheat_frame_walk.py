# expect: reads_forbidden
# caught by: static, dynamic
"""Walks the call stack to find out who is calling."""
import inspect

import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(x):
    harness = any("aether" in frame.filename for frame in inspect.stack()[1:4])
    values = x.to_numpy(dtype="float64", na_value=0.0)
    out = np.where(values < 0, -values, values) if harness else np.abs(values)
    return pd.Series(pd.arrays.FloatingArray(out, x.isna().to_numpy()))
