# expect: row_at_a_time
# caught by: static, dynamic
"""The UDF's rule once per row through builtin map(): no loop statement, no .map attribute."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def _bucket(v):
    return v % 7


def evaluate(n):
    values = n.to_numpy(dtype="int64", na_value=0)
    return pd.Series(pd.arrays.IntegerArray(np.array(list(map(_bucket, values)), dtype="int64"), n.isna().to_numpy()))
