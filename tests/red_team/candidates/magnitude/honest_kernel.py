# expect: honest
"""The branch in a kernel, -0.0 and NaN passing through."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _magnitude(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = -x[i] if x[i] < 0 else x[i]


def evaluate(x):
    out = np.zeros(len(x))
    _magnitude.forall(len(out))(out, x.to_numpy(dtype="float64", na_value=0.0))
    return pd.Series(pd.arrays.FloatingArray(out, x.isna().to_numpy()))
