"""Text clean-up shared by the ingestion jobs."""
import re

from pyspark.sql.functions import udf

SKU_RE = re.compile(r"[^A-Z0-9]")


@udf("string")
def normalize_sku(sku: str) -> str:
    if sku is None:
        return None
    return SKU_RE.sub("", sku.upper())


@udf("array<string>")
def tags(text: str) -> list:
    if text is None:
        return []
    return [word.lower() for word in text.split(",") if word.strip()]


@udf("map<string,int>")
def letter_counts(text: str) -> dict:
    counts = {}
    for letter in text or "":
        counts[letter] = counts.get(letter, 0) + 1
    return counts
