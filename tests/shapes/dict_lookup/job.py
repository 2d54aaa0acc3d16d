from pyspark.sql.functions import udf

COUNTRY_NAMES = {
    "US": "United States",
    "GB": "United Kingdom",
    "DE": "Germany",
    "FR": "France",
    "JP": "Japan",
    "BR": "Brazil",
}


@udf("string")
def country_name(code: str) -> str:
    if not code:
        return None
    return COUNTRY_NAMES.get(code.strip().upper(), "Unknown")
