import pandas as pd

TARGET = "vectorized"


def evaluate(raw):
    # explode() gives pandas' default string dtype, whose .str methods are Arrow's (Arrow lowers "İ" to "i",
    # Python to "i̇"): back to Python strings first
    parts = raw.str.split(",").explode().astype(pd.StringDtype("python"))
    cleaned = parts.str.strip().str.lower()
    kept = cleaned[cleaned.fillna("") != ""]
    grouped = kept.groupby(level=0).agg(list)
    result = pd.Series([[] for _ in range(len(raw))], index=raw.index, dtype="object")
    result.loc[grouped.index] = grouped
    return result.where(raw.notna(), None).reset_index(drop=True)
