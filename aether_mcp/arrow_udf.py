"""Arrow columns to pandas Series and back, null and NaN kept apart, and the scalar Arrow UDF a job uses.

The one conversion every path shares: `byte_compare` checks a vectorized candidate through it,
`run_benchmark` times it, and a job that ships the candidate wires it with `spark_arrow_udf`.
Floating columns become pandas `Float64`/`Float32` arrays whose mask marks only nulls (a NaN is
a value), integers and booleans nullable `Int*`/`boolean`, strings `string[python]`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from aether_mcp import backend

_NULLABLE_INTS = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
}

def run_on_arrow(evaluate: Callable[..., Any], columns: tuple[pa.Array, ...] | list[pa.Array], return_type: pa.DataType) -> pa.Array:
    """`evaluate(*series)` on Arrow argument arrays, converted exactly as byte_compare converts them."""
    size = len(columns[0])
    result = evaluate(*[backend.from_arrow(column) for column in columns])
    if len(result) != size:
        raise ValueError(f"evaluate returned {len(result)} values for a batch of {size} rows")
    return backend.to_arrow(result, return_type)


def spark_arrow_udf(evaluate: Callable[..., Any], return_type: Any):
    """A vectorized candidate's `evaluate` as the scalar Arrow UDF a job calls in place of the original.

    The same wiring run_benchmark times and byte_compare's conversions check: only the arguments
    travel to Python, as Arrow, and reach `evaluate` with null and NaN apart. `return_type` is a
    Spark DataType or DDL string (e.g. "double"). Needs PySpark 4.1 or newer (`F.arrow_udf`).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import DataType

    from aether_mcp.spark_types import parse_type

    spark_type = return_type if isinstance(return_type, DataType) else parse_type(return_type)
    arrow_type = to_arrow_type(spark_type)

    def function(*columns: pa.Array) -> pa.Array:
        return run_on_arrow(evaluate, columns, arrow_type)

    return F.arrow_udf(function, spark_type, ArrowUDFType.SCALAR)


def column_to_series(column: pa.Array) -> pd.Series:
    """An Arrow column as a pandas Series in which null and NaN are distinct."""
    kind = column.type
    if pa.types.is_floating(kind):
        values = column.to_numpy(zero_copy_only=False)
        mask = column.is_null().to_numpy(zero_copy_only=False)
        array = pd.arrays.FloatingArray(np.where(mask, 0.0, values).astype(values.dtype), mask)
        return pd.Series(array, copy=False)
    if kind in _NULLABLE_INTS:
        return column.to_pandas(types_mapper={kind: _NULLABLE_INTS[kind]}.get)
    if pa.types.is_boolean(kind):
        return column.to_pandas(types_mapper={kind: pd.BooleanDtype()}.get)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column.to_pandas(types_mapper={kind: pd.StringDtype("python")}.get)
    return column.to_pandas()


def series_to_arrow(result: Any, arrow_type: pa.DataType) -> pa.Array:
    """The candidate's result as an Arrow array of the declared type, NaN kept apart from null."""
    if not isinstance(result, pd.Series):
        result = pd.Series(result)
    array = result.array
    if isinstance(array, pd.arrays.FloatingArray | pd.arrays.IntegerArray | pd.arrays.BooleanArray):
        mask = np.asarray(array.isna())
        fill = False if isinstance(array, pd.arrays.BooleanArray) else 0
        return pa.array(array.to_numpy(na_value=fill), type=arrow_type, mask=mask, from_pandas=False)
    if result.dtype.kind in "fiub":
        return pa.array(result.to_numpy(), type=arrow_type, from_pandas=False)
    if isinstance(result.dtype, pd.StringDtype):
        # Both storages (Python objects, Arrow) convert in C; missing values become null.
        return pa.array(result.array, type=arrow_type)
    values = [None if value is pd.NA or value is pd.NaT else value for value in result.tolist()]
    return pa.array(values, type=arrow_type, from_pandas=False)
