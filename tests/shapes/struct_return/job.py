import re

from pyspark.sql.functions import udf

VERSION_RE = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})")


@udf("struct<major:bigint,minor:bigint>")
def version_parts(version: str):
    if version is None:
        return None
    match = VERSION_RE.match(version)
    if not match:
        return None
    return {"major": int(match.group(1)), "minor": int(match.group(2))}


def run(installs):
    return installs.withColumn("v", version_parts("client_version")).select("v.major", "v.minor")
