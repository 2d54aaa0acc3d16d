"""Python values of Spark's nested types as each side holds them: structs as `Struct`s or Rows, maps as dicts.

The server, the cases and the codec hold a struct as a `Struct` (a dict in field order) and a map
as a dict. A Python UDF receives a struct as a pyspark `Row` and a map as a dict, so code that
calls the original outside Spark (the init check, coverage and mutation runs, micro_benchmark)
turns values into that form first. Arrow gives structs as dicts and maps as lists of pairs;
`arrow_values` turns them into the server's form. Light to import (no pyarrow, pandas or pyspark until used):
the init check loads it for every UDF.
"""

from __future__ import annotations

import functools
from typing import Any

from aether_mcp.wire.value_codec import Struct


def as_udf_argument(value: Any) -> Any:
    """`value` as Spark hands it to a Python UDF: every `Struct`, at any depth, as a pyspark Row."""
    if isinstance(value, Struct):
        from pyspark.sql import Row

        return Row(**{name: as_udf_argument(item) for name, item in value.items()})
    if isinstance(value, list):
        return [as_udf_argument(item) for item in value]
    if isinstance(value, dict):
        return {key: as_udf_argument(item) for key, item in value.items()}
    return value


def arrow_values(column: Any) -> list[Any]:
    """An Arrow column's values in the server's form: structs as `Struct`s, maps as dicts, at every depth."""
    return [_marked(value, column.type) for value in column.to_pylist()]


def _marked(value: Any, kind: Any) -> Any:
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_struct(kind):
        return Struct((field.name, _marked(value[field.name], field.type)) for field in kind)
    if pa.types.is_map(kind):
        return {key: _marked(item, kind.item_type) for key, item in value}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_marked(item, kind.value_type) for item in value]
    return value


def pandas_argument(values: list[Any]) -> Any:
    """A pandas UDF's argument column from one value per row, as Spark builds it for a generated batch.

    A struct column is a DataFrame with one column per field (a null struct's fields are all null,
    as in PySpark's own conversion); any other column is a Series of the values.
    """
    import pandas as pd

    structs = [value for value in values if isinstance(value, Struct)]
    if not structs:
        return pd.Series(values)
    names = list(structs[0])
    return pd.DataFrame({name: pd.Series([None if value is None else value.get(name) for value in values], dtype=object) for name in names})


def udf_result(value: Any, data_type: Any, nan_is_null: bool = False) -> Any:
    """A Python UDF's return value as Spark stores it for `data_type` (a DataType or DDL text), in the server's form.

    A struct may be returned as a dict (read by field name), a Row, tuple or list (read by position,
    as PySpark's StructType.toInternal reads them); a map as a dict; an array as any sequence.
    Scalars are left as they are, except that with `nan_is_null` (a pandas UDF's result, which
    Spark converts from pandas) NaN and pandas' missing values are null at every depth.
    """
    from pyspark.sql import types as T

    if isinstance(data_type, str):
        data_type = _parsed(data_type)
    if value is None or (nan_is_null and _missing(value)):
        return None
    if isinstance(data_type, T.StructType):
        if isinstance(value, dict):
            items = [value.get(name) for name in data_type.names]
        elif isinstance(value, (tuple, list)) and len(value) == len(data_type.fields):
            items = list(value)
        else:
            return value  # not a struct: compared as it is, and found different
        return Struct((field.name, udf_result(item, field.dataType, nan_is_null)) for field, item in zip(data_type.fields, items))
    if isinstance(data_type, T.MapType) and isinstance(value, dict):
        return {udf_result(key, data_type.keyType, nan_is_null): udf_result(item, data_type.valueType, nan_is_null) for key, item in value.items()}
    if isinstance(data_type, T.ArrayType) and not isinstance(value, (str, bytes, dict)) and hasattr(value, "__iter__"):
        return [udf_result(item, data_type.elementType, nan_is_null) for item in value]
    return value.tolist() if hasattr(value, "tolist") and hasattr(value, "dtype") else value


def rows_of(result: Any) -> list[Any]:
    """A pandas UDF's result, one value per row: a DataFrame (a struct result) gives one dict per row."""
    import pandas as pd

    if isinstance(result, pd.DataFrame):
        return result.to_dict("records")
    return list(result)


def captured_column(values: list[Any], dtype: Any) -> Any:
    """A pandas UDF's argument rebuilt from captured values: a Series of `dtype`, or a DataFrame for a struct
    (`dtype` {"struct": {field: dtype}}, as `input_capture` records it)."""
    import pandas as pd

    if isinstance(dtype, dict):
        fields = dtype["struct"]
        return pd.DataFrame({name: pd.Series([None if value is None else value.get(name) for value in values], dtype=kind) for name, kind in fields.items()})
    return pd.Series(values, dtype=dtype)


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Any:
    from aether_mcp.spark_types import parse_type

    return parse_type(text)


def _missing(value: Any) -> bool:
    if isinstance(value, float):
        return value != value
    return type(value).__name__ in ("NAType", "NaTType")


def typed(value: Any, data_type: Any) -> Any:
    """`value` with every struct of `data_type` marked as a `Struct` (a case written as a dict literal is a plain dict)."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(data_type, T.StructType) and isinstance(value, dict):
        return Struct((field.name, typed(value.get(field.name), field.dataType)) for field in data_type.fields)
    if isinstance(data_type, T.ArrayType) and isinstance(value, list):
        return [typed(item, data_type.elementType) for item in value]
    if isinstance(data_type, T.MapType) and isinstance(value, dict):
        return {key: typed(item, data_type.valueType) for key, item in value.items()}
    return value
