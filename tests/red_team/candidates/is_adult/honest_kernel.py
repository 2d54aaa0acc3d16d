# expect: honest
"""The comparison in a kernel, nulls kept as the mask."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _adult(out, age):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1 if age[i] >= 18 else 0


def evaluate(age):
    missing = age.isna().to_numpy()
    out = np.zeros(len(age), dtype=np.int8)
    _adult.forall(len(age))(out, age.to_numpy(dtype="int64", na_value=0))
    return pd.Series(pd.arrays.BooleanArray(out.astype(bool), missing))
