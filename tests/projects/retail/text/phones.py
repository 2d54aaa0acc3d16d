"""Phone numbers in E.164, with a third-party parser."""
import phonenumbers
from pyspark.sql.functions import udf


@udf("string")
def e164(raw: str) -> str:
    if raw is None:
        return None
    return phonenumbers.format_number(phonenumbers.parse(raw, "US"), phonenumbers.PhoneNumberFormat.E164)
