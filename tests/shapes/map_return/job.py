from collections import Counter

from pyspark.sql.functions import udf
from pyspark.sql.types import LongType, MapType, StringType


@udf(MapType(StringType(), LongType()))
def word_counts(text: str):
    if text is None:
        return None
    return dict(Counter(text.lower().split()))
