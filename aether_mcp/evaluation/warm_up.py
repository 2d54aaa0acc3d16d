"""A worker's first evaluations, on a built-in UDF of the usual shape, run as the worker starts.

The first evaluation in a fresh SparkSession pays for compiling the JVM's code paths (row
conversion, generated code, Arrow transfer) and for starting Python workers. Running the same
request path once on a UDF of our own, with an int, a double and a string argument, moves that
cost to the worker's start, which the server makes in the background as it starts, so an agent's
first real call runs at nearly the speed of later ones.
"""

from __future__ import annotations

import math
from typing import Any

from aether_mcp.workspace import UdfArgConfig, UdfConfig, WorkspaceConfig

ROWS = 5_000

CONFIG = WorkspaceConfig(
    udf=UdfConfig(
        name="warm_up",
        function="warm_up",
        kind="row",
        return_type="double",
        args=[UdfArgConfig(name="n", type="int"), UdfArgConfig(name="x", type="double"), UdfArgConfig(name="s", type="string")],
        source="<warm-up>",
        source_line=1,
        form="@udf",
    )
)

ORIGINAL = '''
def warm_up(n, x, s):
    if n is None or x is None or s is None:
        return None
    return x * 2.0 + len(s.strip()) + (1.0 if n > 3 else 0.0)
'''

SQL = '''
from pyspark.sql import functions as F

TARGET = "sql"


def build(n, x, s):
    # the functions string-and-number rewrites use most, so their classes are loaded and compiled here
    label = F.lower(F.translate(F.trim(s, F.lit(" \\t\\n")), "ABC", "abc"))
    rate = F.create_map(F.lit("gold"), F.lit(0.2), F.lit("silver"), F.lit(0.1))[F.col("_label")]
    size = F.floor(F.octet_length(F.upper(F.regexp_replace(F.col("_label"), "[aeiou]", ""))) / 2) + F.length(F.concat(F.col("_label"), F.substring(F.col("_label"), 1, 2)))
    value = F.round(F.least(F.abs(x), F.lit(1e6)) * (1 - F.coalesce(F.col("_rate"), F.lit(0.0))), 2) + size + F.size(F.split(F.col("_label"), " "))
    return [
        ("_label", label),
        ("_rate", rate),
        ("_out", F.when(n.isNull() | x.isNull() | s.isNull(), F.lit(None).cast("double")).when(F.isnan(x), x).when(n > 3, value * 2.0).otherwise(value)),
    ]
'''

VECTORIZED = '''
import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(n, x, s):
    value = x.astype("float64") * 2.0 + s.str.strip().str.len().astype("float64") + np.where(n > 3, 1.0, 0.0)
    return pd.Series(value).where(n.notna() & x.notna() & s.notna())
'''


def rows() -> list[list[Any]]:
    """Deterministic rows with nulls, NaN and padded strings, as generated inputs have them."""
    texts = ["gold", " silver ", "", "bronze\t", None, "İstanbul"]
    numbers = [1.5, -0.0, math.nan, None, 1e300, -2.25]
    return [[None if i % 11 == 0 else i % 9 - 4, numbers[i % len(numbers)], texts[i % len(texts)]] for i in range(ROWS)]


def evaluate(spark: Any, loaded: Any, data: list[list[Any]], layouts: tuple[str, ...] = ("tiny", "spread")) -> None:
    """The rows in the layouts byte_compare uses: a few in tiny Arrow batches (test and edge rows), all of them spread
    over partitions with empty ones among them (hidden rows)."""
    from aether_mcp.evaluation.target_evaluation import Shape, evaluate_rows

    if "tiny" in layouts:
        evaluate_rows(spark, CONFIG, loaded, data[:200], shape=Shape(partitions=3, empty_partitions=1, max_records_per_batch=3))
    if "spread" in layouts:
        evaluate_rows(spark, CONFIG, loaded, data, shape=Shape(partitions=8, empty_partitions=3, max_records_per_batch=2048))


def reference(spark: Any) -> None:
    from aether_mcp.reference.original import load_original

    evaluate(spark, load_original(CONFIG, ORIGINAL, "<warm-up>"), rows())


def candidate(spark: Any, folder: str) -> None:
    """A sql and a vectorized candidate of our own, loaded as agent candidates are (from `folder`, a scratch path)."""
    from aether_mcp.confined.candidate_targets import load_candidate

    data = rows()
    evaluate(spark, load_candidate(CONFIG, "candidate:warm_up_sql", SQL, f"{folder}/warm_up_sql.py"), data)
    evaluate(spark, load_candidate(CONFIG, "candidate:warm_up_vectorized", VECTORIZED, f"{folder}/warm_up_vectorized.py"), data, ("spread",))
