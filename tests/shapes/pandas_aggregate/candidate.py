from pyspark.sql import functions as F

TARGET = "sql"


def build(values):
    # pandas' max() and min() skip NaN (and the nulls Arrow hands over as NaN); Spark orders NaN above every number.
    # Adding 0.0 turns -0.0 into 0.0: Spark's max and min may keep either zero, pandas' difference of equal zeros is 0.0.
    kept = F.when(~F.isnan(values), values + F.lit(0.0))
    spread = F.max(kept) - F.min(kept)
    # a NaN result (inf - inf) comes back from a pandas UDF as null
    return F.when(~F.isnan(spread), spread)
