"""The Arrow UDFs a job uses in place of the original: `evaluate` on Arrow batches, converted as byte_compare converts.

`spark_arrow_udf` (scalar) and `spark_arrow_aggregate` (grouped aggregate) wire a vectorized
candidate into a job; `run_on_arrow` and `aggregate_on_arrow` are the same calls on Arrow arrays,
which byte_compare and run_benchmark use. The columns reach `evaluate` through the backend
(aether_mcp.backend: pandas on the CPU, cuDF on the GPU), converted by aether_mcp.arrow_pandas.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from aether_mcp import backend
from aether_mcp.lazy_import import lazy_module

np = lazy_module("numpy")
pd = lazy_module("pandas")
pa = lazy_module("pyarrow")

# How deep `evaluate` may recurse (frames, and C recursion such as json.loads of nested text) before RecursionError,
# in a job and in every judged call alike. The harness stacks more frames above a judged call than Spark does above a
# job's (deeper still in the isolation's parts), so a candidate that measured its room could tell them apart.
EVALUATE_ROOM = 900
_DEPTH: dict[tuple, int] = {}  # the recursion depth found at `_in_room`, per stack of code objects and tracing


def arguments(columns: Sequence[Any]) -> list[Any]:
    """The series `evaluate` gets for Arrow argument columns: in a job, in the timed runs and in every call the judge makes.

    Each column (an Array, a ChunkedArray, or a list of Arrays to join, such as the runs of a batch's rows) is
    copied into buffers of its own, offset 0, with no parent buffer and no name, and converted by the backend.
    Whatever Spark's batch looked like (a slice of one IPC message, columns named by their place in the plan)
    or the judge's (a mapInArrow batch beside the row ids, a part of it, the rows that returned), the series
    are made the same way from the same values, so nothing about the series but their values tells one call from
    another (tests/test_as_in_a_job.py compares what a candidate can see of them in both).
    """
    return [backend.from_arrow(_copied(column)) for column in columns]


def _copied(column: Any) -> pa.Array:
    """One column's values in buffers of their own, laid out as Arrow's IPC reader lays out a job's batch: a validity
    bitmap only where the array holds a null, at every depth (the reader drops a bitmap with no null in it; a slice of
    a column with nulls elsewhere keeps one), offset 0, no parent buffer."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else column if isinstance(column, list) else [column]
    joined = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks) if chunks else pa.array([], column.type)
    if not pa.types.is_nested(joined.type):  # one level: a copy, without the bitmap where it holds no null
        buffers = joined.buffers()
        if buffers[0] is not None and not joined.null_count:
            joined = pa.Array.from_buffers(joined.type, len(joined), [None, *buffers[1:]], null_count=0, offset=joined.offset)
        return pa.concat_arrays([joined])
    batch = pa.RecordBatch.from_arrays([joined], ["_"])
    return pa.concat_arrays([pa.ipc.read_record_batch(batch.serialize(), batch.schema).column(0)])


def call(evaluate: Callable[..., Any], series: list[Any], return_type: pa.DataType) -> pa.Array:
    """`evaluate(*series)` on one batch's `arguments`: its result as Arrow, one value per row."""
    size = len(series[0])

    def checked() -> pa.Array:  # (all in the room: a result of the candidate's own type runs its code here too)
        result = evaluate(*series)
        if len(result) != size:
            raise ValueError(f"evaluate returned {len(result)} values for a batch of {size} rows")
        return backend.to_arrow(result, return_type)

    return _in_room(checked)


def _in_room(work: Callable[[], Any]) -> Any:
    """`work()` (a call of `evaluate` and what handles its result) with exactly EVALUATE_ROOM levels of recursion left
    to it, wherever it is called from.

    The recursion depth here is found once per stack (its code objects, and whether a trace or profile function runs,
    which takes room of its own) by recursing until RecursionError; the recursion limit is set that far above it for
    the call and put back after it. A trace or profile function that the probe's RecursionError turned off is put back.
    """
    frame, stack = sys._getframe(), []
    while frame is not None:
        stack.append(frame.f_code)
        frame = frame.f_back
    tracer, profiler = sys.gettrace(), sys.getprofile()
    key = (tuple(stack), tracer is not None, profiler is not None)
    limit = sys.getrecursionlimit()
    depth = _DEPTH.get(key)
    if depth is None:
        if len(_DEPTH) >= 256:  # (a few stacks in practice: the job's, the judge's batch call and its halving levels)
            _DEPTH.clear()
        depth = _DEPTH[key] = limit - _room(0)
        if sys.gettrace() is not tracer:
            sys.settrace(tracer)
        if sys.getprofile() is not profiler:
            sys.setprofile(profiler)
    sys.setrecursionlimit(depth + EVALUATE_ROOM)
    try:
        return work()
    finally:
        sys.setrecursionlimit(limit)


def _room(depth: int) -> int:
    try:
        return _room(depth + 1)
    except RecursionError:
        return depth


def run_on_arrow(evaluate: Callable[..., Any], columns: Sequence[Any], return_type: pa.DataType) -> pa.Array:
    """`evaluate(*series)` on Arrow argument columns, converted exactly as byte_compare converts them (`arguments`)."""
    return call(evaluate, arguments(columns), return_type)


def aggregate_on_arrow(evaluate: Callable[..., Any], columns: Sequence[Any], return_type: pa.DataType) -> pa.Array:
    """`evaluate(*series)` on one group's Arrow columns: its one value, as a one-element array of the declared type."""
    series = arguments(columns)

    def checked() -> pa.Array:  # (in the room, as `call`)
        result = evaluate(*series)
        if isinstance(result, (pd.Series, pd.DataFrame, np.ndarray, list)) and not pa.types.is_struct(return_type) and not pa.types.is_list(return_type):
            raise ValueError(f"evaluate returned {type(result).__name__} for a group; an aggregation returns one value")
        single = pd.Series([result], dtype=object) if result is None or isinstance(result, (dict, tuple, list)) else pd.Series([result])
        return backend.to_arrow(single, return_type)

    return _in_room(checked)


def spark_arrow_aggregate(evaluate: Callable[..., Any], return_type: Any):
    """A vectorized candidate's `evaluate` as the grouped-aggregate Arrow UDF a job calls in place of a Series-to-scalar pandas UDF.

    `evaluate(*series)` gets one group's columns (null and NaN apart) and returns one value. Needs
    PySpark 4.1 or newer (`ArrowUDFType.GROUPED_AGG`).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import DataType

    from aether_mcp.spark_types import parse_type

    spark_type = return_type if isinstance(return_type, DataType) else parse_type(return_type)
    arrow_type = to_arrow_type(spark_type)

    def function(*columns: pa.Array) -> Any:
        return aggregate_on_arrow(evaluate, columns, arrow_type)[0]

    return F.arrow_udf(function, spark_type, ArrowUDFType.GROUPED_AGG)


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
