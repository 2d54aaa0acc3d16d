from pyspark.sql.functions import udf
from pyspark.sql.types import ArrayType, StringType


@udf(returnType=ArrayType(StringType()))
def tags(raw: str):
    if raw is None:
        return None
    return [tag.strip().lower() for tag in raw.split(",") if tag.strip()]
