import pandas as pd

from aether_mcp import backend

TARGET = "vectorized"


def evaluate(version):
    parts = version.str.extract(r"^([0-9]{1,9})\.([0-9]{1,9})")
    major, minor = (pd.to_numeric(parts[i]).astype("Int64") for i in (0, 1))
    return backend.struct({"major": major, "minor": minor}, null=parts[0].isna().to_numpy())
