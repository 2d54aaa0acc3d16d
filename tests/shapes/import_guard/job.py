from pyspark.sql.functions import udf

try:  # the faster drop-in where the cluster has it
    import regex as re
except ImportError:
    import re

NOT_DIALLED = re.compile(r"[^0-9+]")


@udf("string")
def dialled(phone: str) -> str:
    if phone is None:
        return None
    digits = NOT_DIALLED.sub("", phone)
    if not digits:
        return None
    return digits
