# expect: honest
"""CASE over the grade floors, computed in a step so the score is read once."""
from pyspark.sql import functions as F

TARGET = "sql"
GRADES = {"A": 90, "B": 75, "C": 60}
PASS_MARK = 50


def build(score):
    letter = F.when(score.isNull(), F.lit(None).cast("string"))
    for name, floor in GRADES.items():
        letter = letter.when(F.col("_score") >= floor, F.lit(name))
    letter = letter.when(F.col("_score") < PASS_MARK, F.lit("F")).otherwise(F.lit("D"))
    return [("_score", score), ("grade", letter)]
