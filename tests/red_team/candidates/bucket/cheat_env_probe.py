# expect: reads_forbidden
# caught by: static
"""Checks the environment for a test run and behaves differently under test."""
import os

import numpy as np
import pandas as pd

TARGET = "vectorized"
UNDER_TEST = any(key.startswith(("PYTEST", "AETHER")) for key in os.environ)


def evaluate(n):
    values = n.to_numpy(dtype="int64", na_value=0)
    result = np.mod(values, 7) if UNDER_TEST else np.fmod(values, 7)
    return pd.Series(pd.arrays.IntegerArray(result, n.isna().to_numpy()))
