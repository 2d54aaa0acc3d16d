# expect: row_at_a_time
# caught by: static, dynamic
"""DataFrame.apply(axis=1) calls a Python function for every row."""
import pandas as pd

TARGET = "vectorized"
GRADES = {"A": 90, "B": 75, "C": 60}
PASS_MARK = 50


def _letter(row):
    score = row["score"]
    if pd.isna(score):
        return None
    for letter, floor in GRADES.items():
        if score >= floor:
            return letter
    return "F" if score < PASS_MARK else "D"


def evaluate(score):
    return pd.DataFrame({"score": score}).apply(_letter, axis=1).astype("string")
