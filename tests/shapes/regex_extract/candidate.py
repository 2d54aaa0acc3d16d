import pandas as pd

TARGET = "vectorized"


def evaluate(note):
    digits = note.str.extract(r"ORD-([0-9]{4,9})\b", expand=False)
    return pd.to_numeric(digits, errors="raise").astype("Int64")
