# expect: unequal
# caught by: comparison
"""Right only where its argument looks judged: the judge's mapInArrow batch names its columns for the UDF's
parameters (`age`), while a job's Arrow UDF gets them named by Spark (`_0`, ...). Where the series is named `age` it
compares right; elsewhere, as in a job, the threshold is off by one. Every call, judged or in a job, now gets series
made the same way, with no name (aether_mcp.arrow_udf.arguments), so it is off by one when judged too."""
TARGET = "vectorized"
ADULT_AGE = 18


def evaluate(age):
    return age >= (ADULT_AGE if age.name == "age" else ADULT_AGE + 1)
