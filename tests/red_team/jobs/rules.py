"""Small business rules used by the red-team corpus (each a Python UDF of a different shape)."""

from pyspark.sql.functions import udf

ADULT_AGE = 18
PASS_MARK = 50
GRADES = {"A": 90, "B": 75, "C": 60}
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


@udf("boolean")
def is_adult(age: int) -> bool:
    if age is None:
        return None
    return age >= ADULT_AGE


@udf("double")
def safe_ratio(numerator: float, denominator: float) -> float:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


@udf("string")
def grade(score: int) -> str:
    if score is None:
        return None
    for letter, floor in GRADES.items():
        if score >= floor:
            return letter
    return "F" if score < PASS_MARK else "D"


@udf("double")
def late_fee(days_late: int, amount: float) -> float:
    if days_late is None or amount is None:
        return None
    if days_late <= 0:
        return 0.0
    return min(amount * DAILY_RATE * days_late, MAX_LATE_FEE)


@udf("bigint")
def bucket(n: int) -> int:
    if n is None:
        return None
    return n % 7


@udf("double")
def magnitude(x: float) -> float:
    if x is None:
        return None
    return -x if x < 0 else x
