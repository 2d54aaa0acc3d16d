"""Contact de-duplication prep job.

Normalises the e-mail addresses of a contacts extract so that the same
mailbox written in different ways ("  Jane.Doe+news@GoogleMail.com",
"mailto:janedoe@gmail.com") ends up with one key.  Writes parquet.

Usage::

    spark-submit job.py INPUT_PATH OUTPUT_PATH

The normaliser is also registered as the SQL function ``normalize_email`` so
analysts' SQL in the same session can use it.
"""

import re
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

# "mailto:" prefixes come from addresses scraped out of HTML links; the
# scheme is case-insensitive ("MAILTO:" shows up too).
_MAILTO_PREFIX = re.compile(r"^mailto:", re.IGNORECASE)

# Google ignores dots and "+tag" suffixes in the local part, and
# googlemail.com is an alias of gmail.com.
_GMAIL_DOMAINS = frozenset({"gmail.com", "googlemail.com"})
_CANONICAL_GMAIL = "gmail.com"


def _normalize_email(raw):
    """Canonical form of an e-mail address, or None if it is not usable.

    Steps: strip surrounding whitespace, drop a leading "mailto:", lower-case,
    then for Gmail drop the "+tag", remove dots from the local part and map
    googlemail.com to gmail.com.  Anything without exactly one "@" or with an
    empty local part or domain (after clean-up) is rejected with None.
    """
    if raw is None:
        return None
    email = _MAILTO_PREFIX.sub("", raw.strip()).lower()
    if email.count("@") != 1:
        return None
    local, domain = email.split("@")
    if domain in _GMAIL_DOMAINS:
        local = local.split("+", 1)[0].replace(".", "")
        domain = _CANONICAL_GMAIL
    if not local or not domain:
        return None
    return f"{local}@{domain}"


normalize_email = F.udf(_normalize_email, StringType())


def main():
    if len(sys.argv) != 3:
        print(f"usage: {sys.argv[0]} INPUT_PATH OUTPUT_PATH", file=sys.stderr)
        return 2
    input_path, output_path = sys.argv[1], sys.argv[2]

    spark = SparkSession.builder.appName("contact_cleanup").getOrCreate()
    try:
        spark.udf.register("normalize_email", _normalize_email, StringType())

        if input_path.endswith(".csv"):
            contacts = spark.read.csv(
                input_path, header=True, schema="contact_id string, raw string"
            )
        else:
            contacts = spark.read.parquet(input_path)

        cleaned = contacts.withColumn("email", normalize_email(F.col("raw")))
        cleaned.createOrReplaceTempView("contacts_clean")
        # Same function from SQL: the rejected rows, for the data-quality report.
        rejected = spark.sql(
            "SELECT count(*) AS n FROM contacts_clean "
            "WHERE raw IS NOT NULL AND normalize_email(raw) IS NULL"
        ).first()["n"]
        print(f"rejected e-mail addresses: {rejected}")

        cleaned.write.mode("overwrite").parquet(output_path)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
