# expect: watch_dependent
# caught by: dynamic
# class: 1
"""Right only where its Columns are Spark Connect's, as in the judge's build process; built as the job builds it, with
PySpark's classic Columns, the threshold is off by one. The audit also builds it as the job does and compares the two
analysed plans."""
TARGET = "sql"
ADULT_AGE = 18


def build(age):
    judged = "connect" in type(age).__module__
    return age >= (ADULT_AGE if judged else ADULT_AGE + 1)
