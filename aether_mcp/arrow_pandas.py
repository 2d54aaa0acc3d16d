"""Arrow columns to pandas Series and back, null and NaN kept apart: the one conversion every path shares.

`byte_compare` checks a vectorized candidate through it, `run_benchmark` times it, and a job that
ships the candidate runs it (through aether_mcp.backend, from aether_mcp.arrow_udf's wiring).
Floating columns become pandas `Float64`/`Float32` arrays whose mask marks only nulls (a NaN is
a value), integers and booleans nullable `Int*`/`boolean`, strings `string[python]`. Nested
columns (arrays, structs, maps) stay Arrow-backed (`pd.ArrowDtype`), whose validity bitmaps keep
a null apart from a NaN at every depth: `[1, None]` stays `[1, None]`, never `[1.0, nan]`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aether_mcp.lazy_import import lazy_module

np = lazy_module("numpy")
pd = lazy_module("pandas")
pa = lazy_module("pyarrow")

_NULLABLE_INTS = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
}

def is_nested(kind: pa.DataType) -> bool:
    """Arrays, structs and maps: the types that reach a candidate Arrow-backed."""
    return pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_struct(kind) or pa.types.is_map(kind)


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
    if is_nested(kind):
        # A plain to_pandas() would turn list<bigint> [1, None] into float64 [1.0, nan].
        return pd.Series(pd.arrays.ArrowExtensionArray(column), copy=False)
    return column.to_pandas()


def series_to_arrow(result: Any, arrow_type: pa.DataType | None) -> pa.Array:
    """The candidate's result as an Arrow array of the declared type, NaN kept apart from null.

    `arrow_type` None keeps the type the values have (for the fields of `backend.struct`).
    A struct result may be a DataFrame with one column per field (PySpark's convention).
    """
    if isinstance(result, pd.DataFrame):
        return frame_to_struct(result, arrow_type, series_to_arrow)
    if not isinstance(result, pd.Series):
        result = pd.Series(result, dtype=object if arrow_type is not None and is_nested(arrow_type) else None)
    array = result.array
    if isinstance(array, pd.arrays.ArrowExtensionArray):
        converted = pa.array(array)
        return converted if arrow_type is None or converted.type == arrow_type else converted.cast(arrow_type)
    if isinstance(array, pd.arrays.FloatingArray | pd.arrays.IntegerArray | pd.arrays.BooleanArray):
        mask = np.asarray(array.isna())
        fill = False if isinstance(array, pd.arrays.BooleanArray) else 0
        return pa.array(array.to_numpy(na_value=fill), type=arrow_type, mask=mask, from_pandas=False)
    if result.dtype.kind in "fiub":
        return pa.array(result.to_numpy(), type=arrow_type, from_pandas=False)
    if isinstance(result.dtype, pd.StringDtype):
        # Both storages (Python objects, Arrow) convert in C; missing values become null.
        return pa.array(result.array, type=arrow_type)
    values = [_plain(value, arrow_type) for value in result.tolist()]
    return pa.array(values, type=arrow_type, from_pandas=False)


def frame_to_struct(frame: Any, arrow_type: pa.DataType | None, column_to_arrow: Callable[[Any, pa.DataType | None], pa.Array]) -> pa.Array:
    """A DataFrame, one column per field, as a struct array of `arrow_type`: no row of it is a null struct."""
    if arrow_type is not None and not pa.types.is_struct(arrow_type):
        raise ValueError(f"evaluate returned a DataFrame, but the UDF returns {arrow_type}; return a Series (a DataFrame is for a struct result, one column per field)")
    names = [str(name) for name in frame.columns]
    fields = list(arrow_type) if arrow_type is not None else [pa.field(name, column_to_arrow(frame[name], None).type) for name in names]
    wanted = [field.name for field in fields]
    if sorted(names) != sorted(wanted) or len(set(names)) != len(names):
        raise ValueError(
            f"evaluate returned a DataFrame with columns {names} for {arrow_type}; return one column per field, named {', '.join(wanted)} "
            "(or a struct Series from aether_mcp.backend.struct, which can also hold null structs)"
        )
    children = [column_to_arrow(frame[field.name], field.type) for field in fields]
    return pa.StructArray.from_arrays(children, fields=fields)


def _plain(value: Any, kind: pa.DataType | None) -> Any:
    """A Python value Arrow converts exactly into `kind`: pd.NA and NaT are null, NumPy arrays are lists,
    a struct is a dict by field name (from a dict, a Row, or a tuple in field order), a map its (key, value) pairs."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if kind is None:
        return value
    if pa.types.is_struct(kind):
        fields = list(kind)
        if isinstance(value, dict):
            return {field.name: _plain(value.get(field.name), field.type) for field in fields}
        if isinstance(value, (tuple, list)) and len(value) == len(fields):
            return {field.name: _plain(item, field.type) for field, item in zip(fields, value)}
        return value  # Arrow names what does not fit
    if pa.types.is_map(kind):
        pairs = value.items() if isinstance(value, dict) else value
        return [(_plain(key, kind.key_type), _plain(item, kind.item_type)) for key, item in pairs]
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and isinstance(value, (list, tuple)):
        return [_plain(item, kind.value_type) for item in value]
    return value
