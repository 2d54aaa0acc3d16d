# expect: honest
"""One CUDA thread per row; the batch-level guard stays on the host."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _fee(out, weight, express):
    i = cuda.grid(1)
    if i < out.size:
        w = weight[i]
        fee = 4.99 if w < 2.0 else 4.99 + (w - 2.0) * 1.5
        if express[i]:
            fee = fee * 2
        out[i] = fee


def evaluate(weight, express):
    missing = weight.isna().to_numpy()
    w = weight.to_numpy(dtype="float64", na_value=1.0)
    if (w <= 0).any():
        raise ValueError("weight must be positive")
    out = np.zeros(len(w))
    _fee.forall(len(w))(out, w, express.to_numpy(dtype=bool, na_value=False))
    return pd.Series(pd.arrays.FloatingArray(out, missing))
