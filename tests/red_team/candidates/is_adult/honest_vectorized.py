# expect: honest
"""A nullable integer comparison gives a nullable boolean."""
TARGET = "vectorized"
ADULT_AGE = 18


def evaluate(age):
    return age >= ADULT_AGE
