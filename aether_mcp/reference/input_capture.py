"""Runs inside Spark's Python workers: records the arguments exactly as Spark delivers them to the UDF.

Coverage and mutation testing call the original (and its mutants) as plain Python on these
values, so they see what the UDF sees in the job: the Python types, NaN for nulls in pandas
Series, naive local datetimes. Values travel back as tagged JSON (`value_codec`), never pickles.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Struct


def capture_row(*args: Any) -> str:
    """A row UDF's arguments as received."""
    return value_codec.dumps([_plain(value) for value in args])


def capture_series(*series: pd.Series | pd.DataFrame) -> pd.Series:
    """A pandas UDF's batch as received: each row's values, with each column's dtype.

    A struct argument arrives as a DataFrame (one column per field): its rows are recorded as
    `Struct`s and its dtype as {"struct": {field: dtype}}, so `nested_values.captured_column`
    rebuilds the same DataFrame.
    """
    dtypes = [_dtype(s) for s in series]
    rows = [value_codec.dumps({"values": [_value(s, i) for s in series], "dtypes": dtypes}) for i in range(len(series[0]))]
    return pd.Series(rows, index=series[0].index, dtype=object)


def capture_group(*series: pd.Series | pd.DataFrame) -> str:
    """An aggregation's group as received: each column's values, with each column's dtype."""
    columns = [[_value(s, i) for i in range(len(s))] for s in series]
    return value_codec.dumps({"columns": columns, "dtypes": [_dtype(s) for s in series]})


def _dtype(column: pd.Series | pd.DataFrame) -> Any:
    if isinstance(column, pd.DataFrame):
        return {"struct": {str(name): str(kind) for name, kind in column.dtypes.items()}}
    return str(column.dtype)


def _value(column: pd.Series | pd.DataFrame, index: int) -> Any:
    if isinstance(column, pd.DataFrame):
        return Struct((str(name), _plain(column[name].iloc[index])) for name in column.columns)
    return _plain(column.iloc[index])


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple, str, bytes)):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return value
    if isinstance(value, (list, tuple)) and not hasattr(value, "__fields__"):
        return [_plain(item) for item in value]
    if isinstance(value, dict):  # a map (or, in a pandas UDF, a struct nested in an array or map)
        return {key: _plain(item) for key, item in value.items()}
    return value


def capture_inputs(spark: Any, config: Any, rows: list[list[Any]]) -> list[Any]:
    """The original's arguments for each row exactly as Spark delivers them (encoded, in row order).

    Runs in the reference worker's driver. Same UDF kind and transport as the original, so the
    values are the ones it receives.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from aether_mcp.evaluation.pandas_forms import for_spark
    from aether_mcp.evaluation.target_evaluation import OUTPUT, ROW_ID, RowCoercer, argument_columns, argument_schema, arrow_frame, group_rows, is_grouped, series_function

    schema = argument_schema(config)
    coerce = RowCoercer(schema)
    prepared = [coerce(index, row) for index, row in enumerate(rows)]
    frame = arrow_frame(spark, schema, prepared) or spark.createDataFrame(prepared, schema, verifySchema=False)
    if is_grouped(config):
        capture = F.pandas_udf(for_spark(capture_group, "aggregate", len(config.udf.args)), T.StringType())
        collected = group_rows(frame, config).groupBy(ROW_ID).agg(capture(*argument_columns(config)).alias(OUTPUT)).collect()
    else:
        if config.udf.kind == "pandas":
            capture = F.pandas_udf(series_function(capture_series), T.StringType())
        else:
            capture = F.udf(capture_row, T.StringType(), useArrow=config.udf.use_arrow)
        collected = frame.select(ROW_ID, capture(*argument_columns(config)).alias(OUTPUT)).collect()
    captured: list[Any] = [None] * len(prepared)
    for row in collected:
        captured[row[ROW_ID]] = row[OUTPUT]
    return captured
