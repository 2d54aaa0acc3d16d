# expect: honest
"""numba keeps Python's % semantics for integers."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _bucket(out, n):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = n[i] % 7


def evaluate(n):
    out = np.zeros(len(n), dtype=np.int64)
    _bucket.forall(len(n))(out, n.to_numpy(dtype="int64", na_value=0))
    return pd.Series(pd.arrays.IntegerArray(out, n.isna().to_numpy()))
