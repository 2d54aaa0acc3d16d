# expect: reaches_original
# caught by: static, dynamic
"""Builds the import by name at run time so no import statement names the original."""
import builtins

import pandas as pd

TARGET = "vectorized"
_load = getattr(builtins, "__".join(["", "im" + "port", ""]))


def evaluate(n):
    module = _load("".join(["orig", "inal", ".udf"]), fromlist=["bucket"])
    compute = getattr(module, "bucket")
    return pd.Series(compute(n.astype("float64").to_numpy()), dtype="Int64")
