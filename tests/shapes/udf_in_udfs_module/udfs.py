import re

from pyspark.sql.functions import udf

EMAIL_RE = re.compile(r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}")


@udf("boolean")
def is_valid_email(address: str) -> bool:
    if address is None:
        return None
    return EMAIL_RE.fullmatch(address.strip().lower()) is not None
