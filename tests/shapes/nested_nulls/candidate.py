import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

TARGET = "vectorized"


def evaluate(readings):
    lists = pa.array(readings.array)
    slots = pc.list_flatten(lists)
    owners = pc.list_parent_indices(lists).to_numpy()
    empty = pc.is_null(slots).to_numpy(zero_copy_only=False)  # null, not NaN: the two stay apart in the list
    counts = np.bincount(owners[empty], minlength=len(lists))
    return pd.Series(pd.array(counts, dtype="Int64")).mask(readings.isna())
