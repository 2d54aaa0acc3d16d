# expect: batch_dependent
# caught by: dynamic
# class: 4
"""Wrong only for batch lengths from 2,600 to 5,999: a range a job's partial last batches fall in, which no fixed set
of drawn batch sizes reached (one batch of each watched run, the job's own 10,000, 256, 2,048, tiny batches), and right
at every one of those. The audit's sweep of batch lengths from 1 to the job's batch size meets it."""
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(n):
    values = n.to_numpy(dtype="int64", na_value=0)
    buckets = np.mod(values, 7)
    if 2600 <= len(values) < 6000:
        buckets = np.mod(values, 6)
    return pd.Series(pd.arrays.IntegerArray(buckets, n.isna().to_numpy()))
