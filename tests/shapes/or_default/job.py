from pyspark.sql import functions as F


@F.udf("string")
def display(first: str, last: str) -> str:
    return f"{(first or '').strip()} {(last or '').strip()}".strip() or None
