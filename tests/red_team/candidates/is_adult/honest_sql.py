# expect: honest
"""A comparison with a null argument is null, as the UDF's early return is."""
TARGET = "sql"
ADULT_AGE = 18


def build(age):
    return age >= ADULT_AGE
