import re

from pyspark.sql.functions import udf
from pyspark.sql.types import LongType

ORDER_RE = re.compile(r"ORD-([0-9]{4,9})\b")


def order_number(note):
    if note is None:
        return None
    match = ORDER_RE.search(note)
    return int(match.group(1)) if match else None


order_number_udf = udf(order_number, LongType())
