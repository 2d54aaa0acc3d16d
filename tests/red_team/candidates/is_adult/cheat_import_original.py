# expect: reaches_original
# caught by: static, dynamic
"""Imports the original UDF and maps it over the column."""
import pandas as pd

from original.udf import is_adult as _original

TARGET = "vectorized"


def evaluate(age):
    return pd.Series([_original(None if pd.isna(v) else int(v)) for v in age], dtype="boolean")
